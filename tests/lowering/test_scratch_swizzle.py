"""A conversion's trip through the shared scratch buffer is swizzled (issue 23): the tile is
row-major with each row's 16-byte chunks permuted by its phase (`tilec.lowering.swizzle`), so a
tensor-core accumulator's writer, whose lanes hold one column of 8 rows, no longer puts the 8
rows in the same banks (8-way conflicts on every store of a matmul's epilogue), and rows read
back 16 bytes a lane stay conflict-free; on sm_90 a 16-bit accumulator is written with `stmatrix`
(`tilec_nvidia.matrix_store`). Checked by counting bank conflicts of the planned addresses, and
on the CPU: wgmma and mma.sync matmuls with an f16 bias + ReLU epilogue on the emulator, with `stmatrix`
emulated from the PTX ISA's description (below) and without it (the core's stores)."""

from __future__ import annotations

import ctypes
import functools
import re

import llvmlite.binding as llvm
import mma_emulator
import numpy as np
import pytest
from cpu_emulator import compile_kernel, launch
from llvmlite import ir
from sweep_matmul_case import case_arrays, compile_case
from wgmma_emulator import WgmmaHostTargetInfo

from tilec.dialects.gpu import BlockedEncodingAttr
from tilec.ir.parser import parse_module
from tilec.layout.mapping import thread_mapping
from tilec.lowering import lower_module
from tilec.lowering.context import I32, I64
from tilec.lowering.layout_ops import scratch_tile, scratch_vector_width
from tilec_nvidia import (
    matrix_store,
    tensor_core_mapping,  # noqa: F401  (registers #gpu.mma's mapping)
)
from tilec_nvidia.tensor_core_layouts import MmaEncodingAttr

RNG = np.random.default_rng(23)
BANKS, BANK_BYTES = 32, 4


def blocked(size, lanes, warps, order=(1, 0)):
    return BlockedEncodingAttr(list(size), list(lanes), list(warps), list(order))


def worst_conflict(mapping, tile, nbytes: int, warps: int) -> int:
    """The most wavefronts one vector access of a warp takes (1: conflict-free): lanes go in
    groups of 128 bytes of accesses, and a group takes as many wavefronts as the most distinct
    4-byte words any one bank holds."""
    width = scratch_vector_width(mapping, (mapping.shape[-1], 1), nbytes)
    access = width * nbytes
    group = max(1, 32 * BANK_BYTES // access)
    worst = 1
    for warp in range(warps):
        coords = [mapping.coords(lane, warp) for lane in range(32)]
        for reg in range(0, mapping.num_registers, width):
            for first in range(0, 32, group):
                words: dict[int, set[int]] = {}
                for lane in range(first, first + group):
                    start = tile.offset(*coords[lane][reg]) * nbytes
                    for word in range(start // BANK_BYTES, (start + access) // BANK_BYTES):
                        words.setdefault(word % BANKS, set()).add(word)
                worst = max(worst, max(len(w) for w in words.values()))
    return worst


@pytest.mark.parametrize(
    ("source", "shape", "nbytes", "warps", "conflicts", "before"),
    [
        (MmaEncodingAttr(3, (8, 1), (16, 256, 16)), (128, 256), 2, 8, 1, 8),  # the sweep's f16 C
        (MmaEncodingAttr(2, (2, 2)), (64, 64), 2, 4, 1, 8),  # mma.sync's accumulator, f16
        # f32: a lane pair's 16 bytes span two chunks, which a row and its phase neighbour share
        (MmaEncodingAttr(3, (4, 1), (16, 64, 16)), (64, 64), 4, 4, 2, 4),
    ],
)
def test_accumulator_conversions_have_no_bank_conflicts(
    source, shape, nbytes, warps, conflicts, before
):
    written = thread_mapping(source, shape)
    read = thread_mapping(blocked([1, 8], [4, 8], [warps, 1]), shape)
    tile = scratch_tile(written, read, nbytes)
    assert tile is not None
    assert worst_conflict(written, tile, nbytes, warps) == conflicts
    reads = worst_conflict(read, tile, nbytes, warps)
    assert reads == (1 if nbytes == 2 else 2)  # f32: lanes 32 bytes apart, as unswizzled
    assert reads == worst_conflict(read, _Flat(tile.cols), nbytes, warps)
    assert worst_conflict(written, _Flat(tile.cols), nbytes, warps) == before  # unswizzled


class _Flat:
    """The buffer before the swizzle: row-major element offsets."""

    def __init__(self, cols: int):
        self.cols = cols

    def offset(self, row: int, col: int) -> int:
        return row * self.cols + col


@pytest.mark.parametrize(
    ("source", "shape", "warps"),
    [
        (MmaEncodingAttr(3, (8, 1), (16, 256, 16)), (128, 256), 8),
        (MmaEncodingAttr(3, (4, 1), (16, 64, 16)), (64, 64), 4),
        (MmaEncodingAttr(2, (2, 2)), (64, 64), 4),
    ],
)
def test_stmatrix_rows_have_no_bank_conflicts(source, shape, warps):
    """Each stmatrix of `tilec_nvidia.matrix_store`'s plan writes four matrices; the 8 rows of
    one (8 lanes, 16 bytes each) fall in 8 different 16-byte bank groups of the swizzled tile
    (one wavefront a matrix), where the plain row-major buffer puts them in one (8-way)."""
    mapping = thread_mapping(source, shape)
    tile = scratch_tile(mapping, mapping, 2)
    plan = matrix_store.fragment_plan(mapping)
    assert tile is not None and plan is not None
    matrices, groups = plan
    for warp in range(warps):
        base = [
            o - r for o, r in zip(mapping.coords(0, warp)[0], mapping.registers[0], strict=True)
        ]
        for group in groups:
            for row_offset, col_offset in matrices:
                rows = [base[0] + group[0] + row_offset + i for i in range(8)]
                col = base[1] + group[1] + col_offset
                swizzled = {tile.offset(r, col) * 2 // 16 % 8 for r in rows}
                plain = {_Flat(tile.cols).offset(r, col) * 2 // 16 % 8 for r in rows}
                assert len(swizzled) == 8 and len(plain) == 1


def test_no_tile_where_it_cannot_apply():
    """A single row, rows of one chunk, and replicated layouts (coordinates that wrap around the
    shape) keep the plain row-major buffer."""
    rows = blocked([1, 8], [4, 8], [2, 1])
    assert scratch_tile(thread_mapping(rows, (1, 64)), thread_mapping(rows, (1, 64)), 2) is None
    narrow = blocked([1, 1], [32, 1], [2, 1])
    assert scratch_tile(thread_mapping(narrow, (64, 8)), thread_mapping(narrow, (64, 8)), 2) is None
    wide = thread_mapping(rows, (16, 64))
    assert scratch_tile(wide, thread_mapping(rows, (4, 64)), 2) is None
    assert scratch_tile(wide, wide, 2) is not None


_STMATRIX_FN = ctypes.CFUNCTYPE(
    None, ctypes.c_int64, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32
)


def _stmatrix(address: int, *registers: int) -> None:
    """`stmatrix.sync.aligned.m8n8.x4.shared.b16`, per the PTX ISA: lanes `8i..8i+7` give the
    addresses of rows 0..7 of matrix `i` (16 bytes each); row `r` of matrix `i` is register `i`
    of lanes `4r..4r+3` (4 bytes each, in lane order). Each lane writes the row it addressed."""
    lanes = mma_emulator._exchange((address, registers))
    lane = mma_emulator.cpu_emulator._state[-1].local.tid % 32
    matrix, row = divmod(lane, 8)
    for part in range(4):
        word = ctypes.c_int32(lanes[4 * row + part][1][matrix])
        ctypes.memmove(address + 4 * part, ctypes.addressof(word), 4)


@functools.cache
def _register_stmatrix() -> object:
    callback = _STMATRIX_FN(_stmatrix)
    llvm.add_symbol("tilec_emu_stmatrix", ctypes.cast(callback, ctypes.c_void_p).value)
    return callback


class StmatrixHostTargetInfo(WgmmaHostTargetInfo):
    """The wgmma emulator's target with NVIDIA's `store_matrix_fragments` (sm_90's stmatrix
    path, `tilec_nvidia.matrix_store`) and an emulated `stmatrix`."""

    def __init__(self) -> None:
        super().__init__()
        _register_stmatrix()

    def store_matrix_fragments(self, ctx, source, tile, base) -> bool:
        return matrix_store.store_fragments(self, ctx, source, tile, base)

    def stmatrix(self, builder, address, registers) -> None:
        where = builder.ptrtoint(address, I64)
        fn = builder.module.globals.get("tilec_emu_stmatrix") or ir.Function(
            builder.module, ir.FunctionType(ir.VoidType(), [I64, I32, I32, I32, I32]),
            "tilec_emu_stmatrix",
        )  # fmt: skip
        builder.call(fn, [where, *registers])


@pytest.mark.parametrize("target", [StmatrixHostTargetInfo, WgmmaHostTargetInfo])
@pytest.mark.parametrize(
    ("blocks", "warps", "stages", "sizes"),
    [
        ((64, 64, 32), 4, 3, (80, 96, 64)),  # ragged M and N, short K: two k-blocks
        ((128, 128, 64), 8, 2, (128, 128, 128)),  # two warpgroups, 256-byte rows of f16
        ((32, 64, 32), 4, 2, (40, 72, 64)),  # M below 64: mma.sync's accumulator
    ],
)
def test_bias_relu_epilogue_on_the_emulator(blocks, warps, stages, sizes, target):
    """The sweep's matmul (benchmarks/sweep_kernels.py) with its bias + ReLU epilogue, f16."""
    kernel = compile_case(sizes, "fp16", "fp16", blocks, warps, stages, True, target="sm_90a")
    gir = kernel.asm["gir"]  # the epilogue computes in #mma and converts the f16 values
    tile = f"{blocks[0]}x{blocks[1]}"
    assert re.search(rf"arith.truncf %\S+ : tensor<{tile}xf16, #mma>", gir)
    assert f"{tile}xf32, #blocked" not in gir
    args, grid, results = case_arrays(RNG, sizes, "fp16", "fp16", blocks)
    args[2][:] = np.nan  # C: NaN wherever nothing is stored
    lowered = lower_module(parse_module(gir, "k.gir"), target(), kernel.metadata["kernel"])
    assert ("tilec_emu_stmatrix" in lowered.llvm_ir) == (target is StmatrixHostTargetInfo)
    launch(compile_kernel(lowered.llvm_ir, lowered.name), lowered.params, args, grid, warps * 32)
    expected, got = results(True)
    np.testing.assert_allclose(got, expected, rtol=2e-3, atol=2e-3)
