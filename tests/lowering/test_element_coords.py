"""The LLVM IR of element coordinates and thread offsets carries no work LLVM must fold away
(issue 24: a wgmma matmul's module was 20-30% such instructions, each parsed and combined):
no division by 1, product by 1 or sum with 0, a wrap (`urem`) only where a register's offset
plus the largest thread offset can reach the dimension's size, and each coordinate once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from llvmlite import ir

import tilec.dialects  # noqa: F401
from tilec.dialects.gpu import BlockedEncodingAttr
from tilec.ir.parser import parse_module
from tilec.layout.mapping import thread_mapping
from tilec.lowering import lower_module
from tilec.lowering.context import LoweringContext
from tilec_nvidia.target_info import NvidiaTargetInfo

GOLDEN = Path(__file__).parents[1] / "filecheck" / "lowering"


def lowered(name: str) -> str:
    path = GOLDEN / name
    module = parse_module(path.read_text(), str(path))
    name = next(op.attributes["sym_name"].value for op in module.walk() if op.name == "func.func")
    return lower_module(module, NvidiaTargetInfo("sm_90", 32), name).llvm_ir


@pytest.mark.parametrize("name", ["broadcast_2d.gir", "convert_layout.gir"])
def test_no_identity_arithmetic_in_offsets_and_addresses(name):
    """Thread offsets, and the shared-memory addresses of a conversion through shared memory
    (convert_layout.gir), with each coordinate's product computed once."""
    llvm_ir = lowered(name)
    assert not re.search(r"= (udiv|mul) i32 %\S+, 1$", llvm_ir, re.MULTILINE)
    assert not re.search(r"= add i32 0, ", llvm_ir)


def test_coordinates_that_cannot_wrap_are_not_wrapped():
    # 1024 elements, 4 a thread, 128 threads: registers at offsets 0-3 and 512-515, thread
    # offsets up to 508: no coordinate reaches 1024
    llvm_ir = lowered("vector_add.gir")
    assert "make_range" not in llvm_ir
    assert not re.search(r"urem i32 %\S+, 1024$", llvm_ir, re.MULTILINE)


def test_each_coordinate_is_computed_once():
    """A [1, 4] layout: the four registers of a row share its row coordinate (one value), and
    no coordinate of a (16, 64) tensor with 8 rows and 32 columns of threads needs a wrap."""
    module = ir.Module("m")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), []), "k")
    fn.append_basic_block("entry")
    builder = ir.IRBuilder(fn.append_basic_block("body"))
    ctx = LoweringContext(module, fn, builder, NvidiaTargetInfo("sm_90", 32), 2)
    layout = BlockedEncodingAttr([1, 4], [4, 8], [2, 1], [1, 0])
    coords = ctx.element_coords(thread_mapping(layout, (16, 64)))
    assert len(coords) == 16
    rows = {id(row) for row, _ in coords}
    cols = {id(col) for _, col in coords}
    assert len(rows) == 2 and len(cols) == 8
    assert "urem" not in str(module).split("body:")[1]
