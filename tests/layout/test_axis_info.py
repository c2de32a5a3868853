"""The axis-info analysis: contiguity, divisibility and constancy on kernels with known answers."""

from __future__ import annotations

import textwrap

import pytest
from layout_kernels import example_tir, small_tir

import tilec.dialects  # noqa: F401  (registers the ops the parser needs)
from tilec.ir import parse_module
from tilec.ir.attributes import IntegerAttr
from tilec.layout.assignment import to_gir
from tilec.layout.axis_info import (
    MAX_DIVISIBILITY,
    AxisInfo,
    analyze_axis_info,
    axis_info,
    highest_pow2_divisor,
)
from tilec.layout.rules import GpuTarget, LayoutRules
from tilec.pipeline import plugin_pass_manager


def _values_by_name(module) -> dict:
    values = {}
    for op in module.walk():
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    values.setdefault(arg.name_hint, arg)
        for result in op.results:
            values.setdefault(result.name_hint, result)
    return values


def _vector_add(n_divisible: bool):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "examples/ir/vector_add.tir").read_text()
    module = parse_module(text)
    if n_divisible:
        func = next(op for op in module.walk() if op.name == "func.func")
        func.set_argument_attribute(3, "tile.divisibility", IntegerAttr(16))
    return module


def test_vector_add_offsets_pointers_and_mask():
    module = _vector_add(n_divisible=False)
    result = analyze_axis_info(module)
    v = _values_by_name(module)
    assert result.get(v["range"]) == AxisInfo((1024,), (MAX_DIVISIBILITY,), (1,))
    assert result.get(v["block_start"]).divisibility == (1024,)
    assert result.get(v["offsets"]) == AxisInfo((1024,), (1024,), (1,))
    assert result.get(v["x_base"]) == AxisInfo((1,), (16,), (1024,))
    assert result.get(v["x_ptrs"]) == AxisInfo((1024,), (16,), (1,))
    assert result.get(v["mask"]).constancy == (1,)
    assert result.get(v["BLOCK_SIZE"]).constant == 1024
    assert result.vector_width(v["x_ptrs"], 0) == 4
    assert result.mask_constancy(v["mask"], 0) == 1


def test_mask_is_constant_over_16_when_n_is_divisible_by_16():
    module = _vector_add(n_divisible=True)
    result = analyze_axis_info(module)
    v = _values_by_name(module)
    assert result.get(v["n_splat"]) == AxisInfo((1,), (16,), (1024,))
    assert result.get(v["mask"]).constancy == (16,)
    assert result.mask_constancy(v["mask_again"], 0) == 16


def test_pointers_without_divisibility_are_not_vectorized():
    module = example_tir("vector_add", divisible=False)
    result = analyze_axis_info(module)
    load = next(op for op in module.walk() if op.name == "tile.load")
    assert result.get(load.operands[0]).contiguity == (1024,)
    assert result.get(load.operands[0]).divisibility == (1,)
    assert result.vector_width(load.operands[0], 0) == 1


def test_query_by_module_and_analysis_agree():
    module = _vector_add(n_divisible=False)
    v = _values_by_name(module)
    assert axis_info(module, v["offsets"]) == analyze_axis_info(module).get(v["offsets"])


def test_highest_power_of_two_divisor():
    assert highest_pow2_divisor(48) == 16
    assert highest_pow2_divisor(-8) == 8
    assert highest_pow2_divisor(7) == 1
    assert highest_pow2_divisor(0) == MAX_DIVISIBILITY


def _analyze(body: str, args: str = "%n: i32, %p: !tile.ptr<f32> {tile.divisibility = 16}"):
    module = parse_module(f"func.func @k({args}) {{\n{textwrap.dedent(body)}\n  tile.return\n}}\n")
    return analyze_axis_info(module), _values_by_name(module)


def test_arithmetic_rules():
    result, v = _analyze(
        """
        %r = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
        %c4 = arith.constant {value = dense<4> : tensor<128xi32>} : tensor<128xi32>
        %c48 = arith.constant {value = 48 : i32} : i32
        %s48 = tile.splat %c48 : tensor<128xi32>
        %times = arith.muli %r, %c4 : tensor<128xi32>
        %quot = arith.divsi %r, %c4 : tensor<128xi32>
        %rem = arith.remsi %r, %c4 : tensor<128xi32>
        %shift = arith.shli %s48, %c4 : tensor<128xi32>
        %sum = arith.addi %r, %s48 : tensor<128xi32>
        %diff = arith.subi %s48, %r : tensor<128xi32>
        %lt = arith.cmpi %sum, %s48 {predicate = "slt"} : tensor<128xi1>
        """
    )
    assert result.get(v["times"]) == AxisInfo((1,), (4,), (1,))
    assert result.get(v["quot"]).constancy == (4,)
    assert result.get(v["rem"]).contiguity == (4,)
    assert result.get(v["shift"]).divisibility == (256,)
    assert result.get(v["shift"]).constant == 768
    assert result.get(v["sum"]) == AxisInfo((128,), (16,), (1,))
    assert result.get(v["diff"]).contiguity == (1,)
    assert result.get(v["lt"]).constancy == (16,)


def test_two_dimensional_offsets():
    module = small_tir("softmax_2d")
    result = analyze_axis_info(module)
    load = next(op for op in module.walk() if op.name == "tile.load")
    info = result.get(load.operands[0])
    assert info.contiguity == (1, 256)
    assert info.constancy == (1, 1)
    assert result.get(load.operands[1]).constancy == (4, 16)


def test_loop_carried_pointer_keeps_contiguity():
    result, v = _analyze(
        """
        %r = tile.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
        %base = tile.splat %p : tensor<256x!tile.ptr<f32>>
        %ptrs = tile.addptr %base, %r : tensor<256x!tile.ptr<f32>>
        %step = arith.constant {value = dense<256> : tensor<256xi32>} : tensor<256xi32>
        %lb = arith.constant {value = 0 : i32} : i32
        %s = arith.constant {value = 1 : i32} : i32
        %last = scf.for %lb, %n, %s, %ptrs : tensor<256x!tile.ptr<f32>> {
        ^bb0(%i: i32, %cur: tensor<256x!tile.ptr<f32>>):
          %next = tile.addptr %cur, %step : tensor<256x!tile.ptr<f32>>
          scf.yield %next
        }
        """
    )
    assert result.get(v["cur"]) == AxisInfo((256,), (16,), (1,))
    assert result.get(v["last"]) == AxisInfo((256,), (16,), (1,))
    assert result.get(v["i"]).divisibility == (1,)


def test_hints_on_an_op_override_the_analysis():
    result, v = _analyze(
        """
        %x = tile.load %p {tile.divisibility = [16]} : f32
        %r = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
        %o = tile.splat %n {tile.contiguity = [64], tile.divisibility = [64]} : tensor<64xi32>
        """
    )
    assert result.get(v["x"]).divisibility == (16,)
    assert result.get(v["o"]).contiguity == (64,)
    assert result.get(v["o"]).divisibility == (64,)


@pytest.mark.parametrize("name", ["vector_add", "softmax", "layernorm", "matmul", "histogram"])
def test_gir_gives_the_answers_of_tir(name):
    module = example_tir(name)
    before = analyze_axis_info(module)
    memory = [op for op in module.walk() if op.name in ("tile.load", "tile.store")]
    expected = [before.get(op.operands[0]) for op in memory]
    to_gir(module, GpuTarget(LayoutRules(), "sm_90", 4), plugin_pass_manager())
    after = analyze_axis_info(module)
    memory = [op for op in module.walk() if op.name in ("tile.load", "tile.store")]
    assert [after.get(op.operands[0]) for op in memory] == expected
