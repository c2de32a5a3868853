"""The CPU emulator (`cpu_emulator`, `mma_emulator`) with Hopper's `wgmma.mma_async`, emulated
per warpgroup from the PTX ISA's descriptions, written apart from tilec's `NvmmaTile` and
`#gpu.mma` mapping so that a test compares the two:

- A matrix descriptor (i64): bits 0-13 the start address / 16, 16-29 the leading-dimension byte
  offset (LBO) / 16, 32-45 the stride-dimension byte offset (SBO) / 16, 62-63 the swizzle mode
  (1: 128 bytes, 2: 64, 3: 32; 0, no swizzle, is refused here). The start address is the low 18
  bits of the shared address, so the emulated shared memory is 2^18-byte aligned.
- Canonical layouts, `W` the swizzle width in bytes: a K-major operand (K contiguous) has rows
  (A's M, B's N) of `W` bytes, 8 rows an atom, atoms `SBO` apart: element (row, k) is at
  `start + (row // 8) SBO + (row % 8) W + k e` (`e` the element's bytes); an MN-major operand
  (the instruction's transpose bit: f16/bf16 only) has MN contiguous, `W` bytes of it a row,
  rows along K: element (mn, k) is at `start + (mn e // W) LBO + (k // 8) SBO + (k % 8) W +
  mn e % W`. The swizzle then permutes 16-byte chunks by the address itself: bits 4 and up
  XORed with bits 7 and up (3 bits for 128-byte, 2 for 64-byte, 1 for 32-byte swizzles).
- `m64nNkK`: K = 16 f16/bf16, 8 tf32 or 32 e4m3/e5m2 (32 bytes). tf32 operands are f32 bits of
  which the 13 low mantissa bits are ignored; float8 operands (K-major only, A and B of either
  type) are decoded from the formats' bits (`fp8_matmul_kernels.float8_values`). A may come
  from registers instead (f16/bf16/float8): warp `w` of the warpgroup holds rows `16 w ..` in
  mma.sync's A fragment (`a0 = A[g][2t, 2t+1]`, `a1 = A[g+8]`, `a2 = A[g][2t+8, 2t+9]`,
  `a3 = A[g+8][2t+8, 2t+9]`, `g = lane / 4`, `t = lane % 4`; float8: four bytes a register,
  `a_r = A[g + 8 (r % 2)][4t + 16 (r // 2) ..+3]`).
- D (f32): warp `w`, lane `l` hold, per 8-column block `j`, `d[4j], d[4j+1] = D[16w+g][8j+2t,
  8j+2t+1]` and `d[4j+2], d[4j+3] = D[16w+g+8][..]`.

The emulated wgmma computes when it is issued (`wgmma.wait_group` returns the registers as they
are): it checks what the lowering addresses and lays out, not the pipeline's ordering (the
cp.async emulation of `mma_emulator` checks that).
"""

from __future__ import annotations

import ctypes
import functools

import cpu_emulator
import llvmlite.binding as llvm
import numpy as np
from cpu_emulator import entry_alloca
from fp8_matmul_kernels import float8_values
from llvmlite import ir
from mma_emulator import MmaHostTargetInfo, _call, ordered_dot

from tilec.lowering.context import F32, I32, I64

_WGMMA_FN = ctypes.CFUNCTYPE(
    None, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int32,
    ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32,
)  # fmt: skip
KINDS = {"f16": 0, "bf16": 1, "tf32": 2, "e4m3": 3, "e5m2": 4}
ELEMENT_BYTES = {0: 2, 1: 2, 2: 4, 3: 1, 4: 1}
FLOAT8 = {3: "fp8e4nv", 4: "fp8e5"}
"""The float8 kinds, by the signature name `fp8_matmul_kernels.float8_values` decodes."""
SWIZZLE = {1: 128, 2: 64, 3: 32}
WARPGROUP = 128


def _fields(descriptor: int) -> tuple[int, int, int, int]:
    """(start, LBO, SBO, swizzle bytes) of a matrix descriptor."""
    start = (descriptor & 0x3FFF) << 4
    lbo = ((descriptor >> 16) & 0x3FFF) << 4
    sbo = ((descriptor >> 32) & 0x3FFF) << 4
    mode = (descriptor >> 62) & 3
    assert mode in SWIZZLE, f"swizzle mode {mode} is not emulated"
    return start, lbo, sbo, SWIZZLE[mode]


def _swizzled(offset: int, width: int) -> int:
    bits = {128: 7, 64: 3, 32: 1}[width]
    return offset ^ (((offset >> 7) & bits) << 4)


def _values(shared: np.ndarray, offsets: np.ndarray, kind: int) -> np.ndarray:
    """The elements at byte `offsets` of shared memory, as f32."""
    if kind in FLOAT8:
        return float8_values(shared[offsets], FLOAT8[kind]).astype(np.float32)
    if kind == 2:
        words = np.stack([shared[offsets + i] for i in range(4)], -1).view(np.uint32)[..., 0]
        return (words & np.uint32(0xFFFFE000)).view(np.float32)
    halves = np.stack([shared[offsets], shared[offsets + 1]], -1).view(np.uint16)[..., 0]
    if kind == 0:
        return halves.view(np.float16).astype(np.float32)
    return (halves.astype(np.uint32) << 16).view(np.float32)


def _operand(shared, descriptor, rows: int, k: int, kind: int, mn_major: bool) -> np.ndarray:
    """The `rows` x `k` matrix (A as M x K, B as N x K) a descriptor addresses."""
    start, lbo, sbo, width = _fields(descriptor)
    e = ELEMENT_BYTES[kind]
    r = np.arange(rows)[:, None]
    kk = np.arange(k)[None, :]
    if mn_major:
        mn = r * e
        offsets = start + (mn // width) * lbo + (kk // 8) * sbo + (kk % 8) * width + mn % width
    else:
        offsets = start + (r // 8) * sbo + (r % 8) * width + kk * e
    swizzled = np.vectorize(_swizzled)(offsets, width)
    assert (swizzled + e <= shared.size).all(), "a descriptor reaches past shared memory"
    return _values(shared, swizzled, kind)


def _a_from_registers(registers: list[list[int]], kind: int) -> np.ndarray:
    """A (64 x 16, or 64 x 32 of float8) from the warpgroup's 128 threads' 4 registers each
    (module doc)."""
    if kind in FLOAT8:
        return _float8_a_from_registers(registers, FLOAT8[kind])
    a = np.zeros((64, 16), np.float32)
    for thread, regs in enumerate(registers):
        warp, lane = divmod(thread, 32)
        g, t = divmod(lane, 4)
        for r, value in enumerate(regs):
            row = 16 * warp + g + 8 * (r % 2)
            col = 2 * t + 8 * (r // 2)
            bits = np.array([value & 0xFFFF, (value >> 16) & 0xFFFF], np.uint16)
            if kind == 0:
                a[row, col : col + 2] = bits.view(np.float16)
            else:
                a[row, col : col + 2] = (bits.astype(np.uint32) << 16).view(np.float32)
    return a


def _float8_a_from_registers(registers: list[list[int]], name: str) -> np.ndarray:
    """A (64 x 32) of float8 codes: warp `w` holds rows `16 w ..`, register `r` of lane
    (`g`, `t`) the four bytes `A[g + 8 (r % 2)][4t + 16 (r // 2) ..+3]`, the lowest first."""
    a = np.zeros((64, 32), np.float32)
    for thread, regs in enumerate(registers):
        warp, lane = divmod(thread, 32)
        g, t = divmod(lane, 4)
        for r, value in enumerate(regs):
            row, col = 16 * warp + g + 8 * (r % 2), 4 * t + 16 * (r // 2)
            codes = np.array([value], np.int32).view(np.uint8)
            a[row, col : col + 4] = float8_values(codes, name)
    return a


def _fragment_coords(thread: int, n: int) -> list[tuple[int, int]]:
    warp, lane = divmod(thread, 32)
    g, t = divmod(lane, 4)
    coords = []
    for j in range(n // 8):
        for half in (0, 8):
            coords += [
                (16 * warp + g + half, 8 * j + 2 * t),
                (16 * warp + g + half, 8 * j + 2 * t + 1),
            ]
    return coords


def _wgmma(
    desc_a: int, desc_b: int, acc: int, a_regs: int, n: int, kind: int, ta: int, tb: int,
    b_kind: int,
):  # fmt: skip
    block = cpu_emulator._state[-1]
    tid = block.local.tid
    registers = n // 2
    mine = (
        desc_a, desc_b, n, kind, ta, tb,
        list((ctypes.c_float * registers).from_address(acc)),
        list((ctypes.c_int32 * 4).from_address(a_regs)) if a_regs else None,
        b_kind,
    )  # fmt: skip
    block.slots[tid] = mine
    block.barrier.wait()
    first = tid - tid % WARPGROUP
    if tid == first:
        group = block.slots[first : first + WARPGROUP]
        shapes = {
            (s[1], s[2], s[3], s[5], s[0] if s[7] is None else None, s[4], s[8]) for s in group
        }
        assert len(shapes) == 1, "the warpgroup's threads disagree on the wgmma"
        if kind in FLOAT8 or b_kind in FLOAT8:  # PTX: K-major float8, any pair
            assert kind in FLOAT8 and b_kind in FLOAT8 and not (ta or tb)
        else:
            assert b_kind == kind, "wgmma mixes operand types only for float8"
        shared = cpu_emulator._engine_setup()[1]
        k = 32 // ELEMENT_BYTES[kind]
        if a_regs:
            a = _a_from_registers([s[7] for s in group], kind)
        else:
            a = _operand(shared, desc_a, 64, k, kind, bool(ta))
        b = _operand(shared, desc_b, n, k, b_kind, bool(tb)).T
        c = np.zeros((64, n), np.float64)
        for thread, s in enumerate(group):
            for (row, col), value in zip(_fragment_coords(thread, n), s[6], strict=True):
                c[row, col] = value
        with np.errstate(all="ignore"):  # a wrong layout (a test's) may read garbage
            d = ordered_dot(a, b, c).astype(np.float32)
        block.__dict__.setdefault("wgmma_results", {})[first] = d
    block.barrier.wait()
    d = block.wgmma_results[first]
    out = (ctypes.c_float * registers).from_address(acc)
    for i, (row, col) in enumerate(_fragment_coords(tid - first, n)):
        out[i] = d[row, col]
    block.barrier.wait()


@functools.cache
def _register() -> object:
    callback = _WGMMA_FN(_wgmma)
    llvm.add_symbol("tilec_emu_wgmma", ctypes.cast(callback, ctypes.c_void_p).value)
    return callback


class WgmmaHostTargetInfo(MmaHostTargetInfo):
    """`MmaHostTargetInfo` plus an emulated `wgmma` (see the module doc); the fences, commits and
    waits are nothing (the emulated wgmma is synchronous)."""

    def __init__(self) -> None:
        super().__init__()
        _register()

    def wgmma(self, builder, n, dtype, desc_a, desc_b, acc, transpose_a, transpose_b, b_dtype=None):
        slots = entry_alloca(builder, ir.ArrayType(F32, len(acc)))
        for i, value in enumerate(acc):
            builder.store(value, builder.gep(slots, [I32(0), I32(i)]))
        a_regs: ir.Value = I64(0)
        if isinstance(desc_a, list | tuple):
            registers = entry_alloca(builder, ir.ArrayType(I32, 4))
            for i, value in enumerate(desc_a):
                builder.store(value, builder.gep(registers, [I32(0), I32(i)]))
            a_regs, desc_a = builder.ptrtoint(registers, I64), I64(0)
        args = [desc_a, desc_b, builder.ptrtoint(slots, I64), a_regs, I32(n), I32(KINDS[dtype]),
                I32(int(transpose_a)), I32(int(transpose_b)), I32(KINDS[b_dtype or dtype])]  # fmt: skip
        _call(builder, "tilec_emu_wgmma", ir.VoidType(), args)
        return [builder.load(builder.gep(slots, [I32(0), I32(i)])) for i in range(len(acc))]

    def wgmma_fence(self, builder, registers=()):
        return list(registers)

    def wgmma_commit(self, builder):
        pass

    def wgmma_wait(self, builder, acc, pending):
        return list(acc)

    def fence_async_shared(self, builder):
        pass
