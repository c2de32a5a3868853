"""The CPU emulator (`tests/lowering/cpu_emulator.py`) with AMD's matrix instructions, emulated
per wavefront from the AMD ISA's operand and result tables (written here apart from
`tilec_amd.matrix_mapping`, so that a test compares the two). Lane `l`, element `e` of its
operand vectors, register `v` of its accumulator vector, `D = A' B' + C'` for the instruction's
first (A') and second (B') operand as the intrinsic receives them:

- MFMA 32x32xK (wave64, K = 2 kWidth): `A'[l % 32][kWidth (l / 32) + e]`,
  `B'[kWidth (l / 32) + e][l % 32]`; `c[4i + r]` = `C'[8i + 4 (l / 32) + r][l % 32]`.
- MFMA 16x16xK (wave64, K = 4 kWidth): `A'[l % 16][kWidth (l / 16) + e]`, B' likewise;
  `c[r]` = `C'[4 (l / 16) + r][l % 16]`.
- WMMA gfx11 (wave32): `A'[l % 16][e]` for all 16 K (lanes 16..31 must repeat lanes 0..15:
  checked), `B'[e][l % 16]`; `c[v]` = `C'[2v + l / 16][l % 16]`.
- WMMA gfx12 (wave32): `A'[l % 16][8 (l / 16) + e]`, B' likewise; `c[v]` =
  `C'[v + 8 (l / 16)][l % 16]`.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

sys.path.insert(0, str(Path(__file__).parent.parent / "lowering"))

import cpu_emulator
from cpu_emulator import HostTargetInfo, entry_alloca
from mma_emulator import _exchange

from tilec.lowering.context import F32, I32, I64

_MMA_FN = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)
MAX_VALUES = 16 + 16 + 16


def _c_position(code: int, size: int, lane: int, v: int) -> tuple[int, int]:
    """(row, column) of accumulator register `v` of `lane` (module doc)."""
    if code == 1:
        return 2 * v + lane // 16, lane % 16
    if code == 2:
        return v + 8 * (lane // 16), lane % 16
    if size == 32:
        i, r = divmod(v, 4)
        return 8 * i + 4 * (lane // 32) + r, lane % 32
    return 4 * (lane // 16) + v, lane % 16


def _emulate(address: int, code: int, width: int, count: int) -> None:
    """One instruction for the calling lane's wave; `code`: 0 MFMA, 1 WMMA gfx11, 2 gfx12."""
    mine = (ctypes.c_float * MAX_VALUES).from_address(address)
    lanes = _exchange(list(mine[: 2 * width + count]))
    lane = cpu_emulator._state[-1].local.tid % len(lanes)
    size = 16 if code else (32 if count == 16 else 16)
    k = width if code == 1 else width * len(lanes) // size
    a, b, c = np.zeros((size, k)), np.zeros((k, size)), np.zeros((size, size))
    for source, values in enumerate(lanes):
        k0 = 0 if code == 1 else width * (source // size)
        if code == 1 and source >= 16:
            replica = lanes[source - 16][: 2 * width]
            assert values[: 2 * width] == replica, "gfx11 WMMA operand replicas differ"
        a[source % size, k0 : k0 + width] = values[:width]
        b[k0 : k0 + width, source % size] = values[width : 2 * width]
        for v in range(count):
            c[_c_position(code, size, source, v)] = values[2 * width + v]
    d = a @ b + c
    for v in range(count):
        mine[2 * width + v] = d[_c_position(code, size, lane, v)]


@functools.cache
def _register() -> object:
    callback = _MMA_FN(_emulate)
    llvm.add_symbol("tilec_emu_amd_mma", ctypes.cast(callback, ctypes.c_void_p).value)
    return callback


class AmdMmaHostTargetInfo(HostTargetInfo):
    """`HostTargetInfo` of `lanes` lanes plus the emulated MFMA / WMMA (module doc)."""

    def __init__(self, lanes: int) -> None:
        super().__init__(lanes)
        _register()

    def mma(self, builder, instruction, a, b, c):
        code = 0 if instruction.family == "mfma" else instruction.version
        slots = entry_alloca(builder, ir.ArrayType(F32, MAX_VALUES))
        values = [builder.fpext(v, F32) if v.type != F32 else v for v in (*a, *b, *c)]
        for i, value in enumerate(values):
            builder.store(value, builder.gep(slots, [I32(0), I32(i)]))
        args = [builder.ptrtoint(slots, I64), I32(code), I32(len(a)), I32(len(c))]
        module = builder.module
        fn = module.globals.get("tilec_emu_amd_mma") or ir.Function(
            module, ir.FunctionType(ir.VoidType(), [x.type for x in args]), "tilec_emu_amd_mma"
        )
        builder.call(fn, args)
        first = len(a) + len(b)
        return [builder.load(builder.gep(slots, [I32(0), I32(first + i)])) for i in range(len(c))]
