"""The kernel ABI facts `lower_module` reports, and the register matching of layout ops checked
against `thread_mapping(...).coords` in Python."""

from __future__ import annotations

import pytest

import tilec.dialects  # noqa: F401
from tilec.dialects.gpu import BlockedEncodingAttr, SliceEncodingAttr
from tilec.ir.parser import parse_module
from tilec.ir.types import FloatType, IntegerType, PointerType
from tilec.layout.mapping import thread_mapping
from tilec.lowering import lower_module
from tilec.lowering.layout_ops import register_picks
from tilec.lowering.lower import signature_type, written_parameters
from tilec_nvidia.target_info import NvidiaTargetInfo

CARRIED_POINTER = """\
#b = #gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>
func.func @k(%src: !tile.ptr<f32>, %dst: !tile.ptr<f32>, %other: !tile.ptr<i32>, %n: i32, %flag: i1) attributes {gpu.num_warps = 1 : i32, gpu.threads_per_warp = 32 : i32} {
  %c0 = arith.constant {value = 0 : i32} : i32
  %c1 = arith.constant {value = 1 : i32} : i32
  %p = scf.for %c0, %n, %c1, %dst : !tile.ptr<f32> {
  ^bb0(%i: i32, %q: !tile.ptr<f32>):
    %v = tile.load %src : f32
    tile.store %q, %v
    %next = tile.addptr %q, %c1 : !tile.ptr<f32>
    scf.yield %next
  }
  %w = tile.load %other : i32
  tile.return
}
"""


def test_written_parameters_follow_pointers_through_loops():
    module = parse_module(CARRIED_POINTER, "k.gir")
    func = next(op for op in module.walk() if op.name == "func.func")
    assert written_parameters(func) == [1]
    lowered = lower_module(module, NvidiaTargetInfo(), "k")
    assert lowered.params == ["*fp32", "*fp32", "*i32", "i32", "i1"]
    assert lowered.written == [1]
    assert 'define ptx_kernel void @"k"(ptr addrspace(1) %"src"' in lowered.llvm_ir


@pytest.mark.parametrize(
    ("t", "spelling"),
    [
        (PointerType(FloatType("f16")), "*fp16"),
        (PointerType(FloatType("bf16")), "*bf16"),
        (IntegerType(8, unsigned=True), "u8"),
        (IntegerType(1), "i1"),
        (FloatType("f64"), "fp64"),
    ],
)
def test_signature_types_are_tritons(t, spelling):
    assert signature_type(t) == spelling


BLOCKED = BlockedEncodingAttr([1, 4], [4, 8], [2, 2], [1, 0])


def _check_picks(src, dst, weights, picks, src_strides):
    """Every thread's result register i holds the element its coordinates ask for."""
    src_map, dst_map = thread_mapping(*src), thread_mapping(*dst)
    for warp in range(4):
        for lane in range(32):
            held = src_map.coords(lane, warp)
            for reg, coord in enumerate(dst_map.coords(lane, warp)):
                wanted = sum(c * w for c, w in zip(coord, weights, strict=True))
                got = sum(c * s for c, s in zip(held[picks[reg]], src_strides, strict=True))
                assert got == wanted


def test_expand_dims_and_broadcast_pick_registers_of_the_same_thread():
    rows = (SliceEncodingAttr(1, BLOCKED), (32,))
    expanded = (BLOCKED, (32, 1))
    picks = register_picks(rows, expanded, (1, 0), 32, 4)
    assert picks == tuple(range(len(picks)))
    _check_picks(rows, expanded, (1, 0), picks, (1,))
    broadcast = (BLOCKED, (32, 64))
    picks = register_picks(expanded, broadcast, (1, 0), 32, 4)
    assert picks is not None
    _check_picks(expanded, broadcast, (1, 0), picks, (1, 1))


def test_a_transpose_between_threads_needs_shared_memory():
    src = (BLOCKED, (16, 16))
    dst = (BLOCKED, (16, 16))
    assert register_picks(src, dst, (1, 16), 32, 4) is None
    assert register_picks(src, dst, (16, 1), 32, 4) is not None
