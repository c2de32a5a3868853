"""The CPU emulator (`cpu_emulator`) with NVIDIA's tensor-core instructions: `ldmatrix` and
`mma.sync.m16n8k16` (f16 and bf16 into f32), emulated per warp from the PTX ISA's descriptions
(written here apart from `tilec_nvidia.tensor_core_mapping`, so that a test compares the two):

- `ldmatrix.m8n8.x{1,2,4}[.trans].b16`: lanes `8i..8i+7` give the addresses of rows 0..7 of
  matrix i (16 bytes each); lane `l` receives elements (row `l / 4`, columns `2 (l % 4)`, `+1`)
  of each matrix as one 32-bit register, the lower column in the low half; `.trans` delivers the
  transpose: elements (rows `2 (l % 4)`, `+1`, column `l / 4`).
- `mma.m16n8k16.row.col`, `g = l / 4`, `t = l % 4`: A registers `a0 = A[g][2t, 2t+1]`,
  `a1 = A[g+8][..]`, `a2 = A[g][2t+8, 2t+9]`, `a3 = A[g+8][2t+8, 2t+9]`; B registers
  `b0 = B[2t, 2t+1][g]`, `b1 = B[2t+8, 2t+9][g]`; C and D `c0, c1 = C[g][2t, 2t+1]`,
  `c2, c3 = C[g+8][2t, 2t+1]`. D = A B + C in f32: the products exact, summed in f64 in a fixed
  order (`ordered_dot`, not NumPy's BLAS) and rounded once.
- `mma.m16n8k8.row.col...tf32`: one element per register, `a0 = A[g][t]`, `a1 = A[g+8][t]`,
  `a2 = A[g][t+4]`, `a3 = A[g+8][t+4]`, `b0 = B[t][g]`, `b1 = B[t+4][g]`; C as above. The
  operands arrive as f32 bits, of which the instruction reads the tf32 part (the 13 low
  mantissa bits ignored: truncation toward zero).
- `mma.m16n8k32.row.col.satfinite.s32.s8.s8.s32`: four bytes per register, the lowest first:
  `a_r = A[g + 8 (r % 2)][4t + 16 (r >= 2) ..+3]`, `b_r = B[4t + 16 r ..+3][g]`; C and D are
  i32, placed as above; `C + A B` is exact and clamped to the i32 range (`.satfinite`).
- `mma.m16n8k32.row.col.f32.{e4m3,e5m2}.{e4m3,e5m2}.f32`: the same byte fragments, of float8
  codes (decoded by `fp8_matmul_kernels.float8_values`), f32 C and D.
- `cp.async` (4, 8 or 16 bytes, `src-size` bytes read, the rest zeros), `commit_group`, `wait_group N`:
  each thread queues its copies and performs a group only when a `wait_group` requires it, as
  late as PTX allows, so a read of a slot before its wait (or a barrier missing after it) sees
  stale data.
"""

from __future__ import annotations

import ctypes
import functools

import cpu_emulator
import llvmlite.binding as llvm
import numpy as np
from cpu_emulator import HostTargetInfo, entry_alloca
from fp8_matmul_kernels import float8_values
from llvmlite import ir

from tilec.lowering.context import F32, I32, I64
from tilec_nvidia.target_info import TENSOR_CORE_LOWERINGS  # noqa: F401  (registers them)

_LDMATRIX_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.c_int32, ctypes.c_int32)
_MMA_FN = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int32)
_FRAGMENT = ir.ArrayType(I32, 10)
_COPY_FN = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_int32, ctypes.c_int32)
_COMMIT_FN = ctypes.CFUNCTYPE(None)
_WAIT_FN = ctypes.CFUNCTYPE(None, ctypes.c_int32)
CHUNK = 16


def _exchange(value: object) -> list[object]:
    """Every lane's `value`, for the calling thread's warp (all of the block's threads call)."""
    block = cpu_emulator._state[-1]
    tid = block.local.tid
    block.slots[tid] = value
    block.barrier.wait()
    base = tid - tid % block.lanes
    values = block.slots[base : base + block.lanes]
    block.barrier.wait()
    return values


def _u16(address: int) -> int:
    return ctypes.c_uint16.from_address(address).value


def _ldmatrix(address: int, matrix: int, transpose: int) -> int:
    rows = _exchange(address)[8 * matrix : 8 * matrix + 8]
    lane = cpu_emulator._state[-1].local.tid % 32
    group, pair = lane // 4, 2 * (lane % 4)
    if transpose:
        low, high = _u16(rows[pair] + 2 * group), _u16(rows[pair + 1] + 2 * group)
    else:
        low, high = _u16(rows[group] + 2 * pair), _u16(rows[group] + 2 * pair + 2)
    return ctypes.c_int32(low | high << 16).value


def _halves(register: int, kind: int) -> tuple[float, float]:
    bits = np.array([register & 0xFFFF, (register >> 16) & 0xFFFF], np.uint16)
    if kind == 0:
        return tuple(bits.view(np.float16).astype(np.float32))  # type: ignore[return-value]
    return tuple((bits.astype(np.uint32) << 16).view(np.float32))  # type: ignore[return-value]


def _tf32(register: int) -> np.float32:
    """The f32 whose bits `register` holds as the tensor core reads it as tf32: the 13 low
    mantissa bits ignored (finite values)."""
    bits = register & 0xFFFFE000
    return np.array([bits], np.uint32).view(np.float32)[0]


def _bytes(register: int) -> list[int]:
    return [int(v) for v in np.array([register], np.int32).view(np.int8)]


KINDS = {"f16": 0, "bf16": 1, "tf32": 2, "i8": 3}
FLOAT8_KINDS = {
    f"{a}.{b}": 4 + 2 * i + j
    for i, a in enumerate(("e4m3", "e5m2"))
    for j, b in enumerate(("e4m3", "e5m2"))
}
KINDS.update(FLOAT8_KINDS)
"""The emulated mma's operand types (`_mma`'s `kind`); the float8 pairs are A's type and B's."""
FLOAT8_NAMES = ("fp8e4nv", "fp8e5")


def _float8(register: int, name: str) -> np.ndarray:
    """The four float8 values of a register, the lowest byte first."""
    return float8_values(np.array([register], np.int32).view(np.uint8), name)


def _operands(kind: int, fragments: list) -> tuple[np.ndarray, np.ndarray]:
    """A and B of one instruction from the 32 lanes' registers (module doc)."""
    k = 32 if kind >= 3 else {0: 16, 1: 16, 2: 8}[kind]
    a = np.zeros((16, k), np.int64 if kind == 3 else np.float64 if kind > 3 else np.float32)
    a_name, b_name = FLOAT8_NAMES[(kind - 4) // 2 % 2], FLOAT8_NAMES[(kind - 4) % 2]
    b = np.zeros((k, 8), a.dtype)
    for lane, regs in enumerate(fragments):
        g, t = lane // 4, lane % 4
        for r in range(4):
            row = g + 8 * (r % 2)
            if kind == 2:
                a[row, t + 4 * (r >= 2)] = _tf32(regs[r])
            elif kind >= 3:  # s8, or float8: the same fragments of four bytes
                a[row, 4 * t + 16 * (r >= 2) : 4 * t + 16 * (r >= 2) + 4] = (
                    _bytes(regs[r]) if kind == 3 else _float8(regs[r], a_name)
                )
            else:
                col = 2 * t + 8 * (r >= 2)
                a[row, col : col + 2] = _halves(regs[r], kind)
        for r in range(2):
            if kind == 2:
                b[t + 4 * r, g] = _tf32(regs[4 + r])
            elif kind >= 3:
                b[4 * t + 16 * r : 4 * t + 16 * r + 4, g] = (
                    _bytes(regs[4 + r]) if kind == 3 else _float8(regs[4 + r], b_name)
                )
            else:
                b[2 * t + 8 * r : 2 * t + 8 * r + 2, g] = _halves(regs[4 + r], kind)
    return a, b


def ordered_dot(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """`c + a @ b` in f64, the same bits on every host: each product exact (operands of at most
    24 significant bits: f16, bf16, tf32, f32), the terms added one at a time in a fixed order
    (c, then k = 0, 1, ...) by element-wise NumPy operations. Not `@`: NumPy's BLAS sums in an
    order (and with FMAs) that depend on the CPU it picked a kernel for. One rounding to f32
    follows, as the tensor cores' result is the exact sum rounded whenever the f64 sum is
    exact (e.g. 16 products of 8-bit floats)."""
    d = c.astype(np.float64)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    for k in range(a64.shape[1]):
        d = d + a64[:, k, None] * b64[None, k, :]
    return d


def _mma(address: int, kind: int) -> None:
    mine = (ctypes.c_int32 * 10).from_address(address)
    fragments = _exchange(list(mine))
    a, b = _operands(kind, fragments)
    c = np.zeros((16, 8), a.dtype)
    for lane, regs in enumerate(fragments):
        g, t = lane // 4, lane % 4
        values = np.array(regs[6:], np.int32)
        accumulators = values if kind == 3 else values.view(np.float32)
        c[g, 2 * t : 2 * t + 2], c[g + 8, 2 * t : 2 * t + 2] = accumulators[:2], accumulators[2:]
    if kind == 3:
        d = np.clip(a @ b + c, -(2**31), 2**31 - 1).astype(np.int32)  # exact in int64 (no BLAS)
    else:
        d = ordered_dot(a, b, c).astype(np.float32)
    lane = cpu_emulator._state[-1].local.tid % 32
    g, t = lane // 4, lane % 4
    out = np.array([d[g, 2 * t], d[g, 2 * t + 1], d[g + 8, 2 * t], d[g + 8, 2 * t + 1]], d.dtype)
    for i, bits in enumerate(out.view(np.int32)):
        mine[6 + i] = int(bits)


def _copies() -> tuple[list, list]:
    """This thread's (open copies, committed groups)."""
    local = cpu_emulator._state[-1].local
    if not hasattr(local, "open_copies"):
        local.open_copies, local.groups = [], []
    return local.open_copies, local.groups


def _cp_async(dst: int, src: int, size: int, nbytes: int) -> None:
    assert nbytes in (4, 8, 16) and 0 <= size <= nbytes and dst % nbytes == 0 == src % nbytes
    _copies()[0].append((dst, src, size, nbytes))


def _cp_commit() -> None:
    open_copies, groups = _copies()
    groups.append(list(open_copies))
    open_copies.clear()


def _cp_wait(pending: int) -> None:
    _, groups = _copies()
    while len(groups) > pending:
        for dst, src, size, nbytes in groups.pop(0):
            data = ctypes.string_at(src, size) if size else b""
            ctypes.memmove(dst, data + bytes(nbytes - size), nbytes)


@functools.cache
def _register() -> tuple[object, ...]:
    callbacks = (_LDMATRIX_FN(_ldmatrix), _MMA_FN(_mma), _COPY_FN(_cp_async),
                 _COMMIT_FN(_cp_commit), _WAIT_FN(_cp_wait))  # fmt: skip
    names = ("tilec_emu_ldmatrix", "tilec_emu_mma", "tilec_emu_cp_async",
             "tilec_emu_cp_commit", "tilec_emu_cp_wait")  # fmt: skip
    for name, fn in zip(names, callbacks, strict=True):
        llvm.add_symbol(name, ctypes.cast(fn, ctypes.c_void_p).value)
    return callbacks


def _call(builder: ir.IRBuilder, name: str, ret: ir.Type, args: list[ir.Value]) -> ir.Value:
    module = builder.module
    fn = module.globals.get(name) or ir.Function(
        module, ir.FunctionType(ret, [a.type for a in args]), name
    )
    return builder.call(fn, args)


class MmaHostTargetInfo(HostTargetInfo):
    """`HostTargetInfo` plus emulated `ldmatrix` and `mma` (see the module doc)."""

    def __init__(self) -> None:
        super().__init__(32)
        _register()

    def ldmatrix(self, builder, address, count, transpose):
        where = builder.ptrtoint(address, I64)
        return [
            _call(builder, "tilec_emu_ldmatrix", I32, [where, I32(i), I32(int(transpose))])
            for i in range(count)
        ]

    def mma(self, builder, instruction, a, b, c):
        kind = KINDS[instruction.operand]
        slots = entry_alloca(builder, _FRAGMENT)
        values = [*a, *b, *(builder.bitcast(v, I32) for v in c)]
        for i, value in enumerate(values):
            builder.store(value, builder.gep(slots, [I32(0), I32(i)]))
        _call(builder, "tilec_emu_mma", ir.VoidType(), [builder.ptrtoint(slots, I64), I32(kind)])
        result = I32 if instruction.accumulator == "i32" else F32
        return [
            builder.bitcast(builder.load(builder.gep(slots, [I32(0), I32(6 + i)])), result)
            for i in range(4)
        ]

    def async_copy(self, builder, dst, src, src_size, nbytes=CHUNK):
        size = I32(nbytes) if src_size is None else src_size
        where = [builder.ptrtoint(dst, I64), builder.ptrtoint(src, I64)]
        _call(builder, "tilec_emu_cp_async", ir.VoidType(), [*where, size, I32(nbytes)])

    def async_commit(self, builder):
        _call(builder, "tilec_emu_cp_commit", ir.VoidType(), [])

    def async_wait(self, builder, pending):
        _call(builder, "tilec_emu_cp_wait", ir.VoidType(), [I32(pending)])
