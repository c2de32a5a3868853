"""The IR parser and verifier under mutation fuzzing (`parser_fuzz.py`; hypothesis drives a slice
in CI, `python tests/ir/parser_fuzz.py --count N` runs campaigns), and the regressions it found."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parser_fuzz import check_one, corpus, mutate

from tilec.ir.parser import (
    MAX_INTEGER_DIGITS,
    MAX_NESTING,
    MAX_REGION_NESTING,
    ParseError,
    parse_module,
)
from tilec.ir.verifier import Diagnostic, verify

CORPUS = corpus()


def test_the_corpus_is_valid_ir():
    assert len(CORPUS) > 30
    for text in CORPUS:
        check_one(text)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, len(CORPUS) - 1), seed=st.integers(0, 2**32 - 1))
def test_mutated_ir_gives_a_module_or_a_located_error(index: int, seed: int):
    check_one(mutate(CORPUS[index], random.Random(seed)))


@pytest.mark.parametrize(
    ("opener", "closer"),
    [("!tile.ptr<", ">"), ("#gpu.slice<{dim = 0, parent = ", "}>")],
)
def test_deep_nesting_is_a_located_error(opener: str, closer: str):
    if opener.startswith("!"):  # a pointer to a pointer to ... f32
        argument = f"tensor<4x{opener * 5000}f32{closer * 5000}>"
    else:  # a slice of a slice of ... layout
        nested = opener * 5000 + "#gpu.blocked<{sizePerThread = [1]}>" + closer * 5000
        argument = f"tensor<4xf32, {nested}>"
    text = f"func.func @k(%a: {argument}) {{\n  tile.return\n}}\n"
    with pytest.raises(ParseError, match=f"nested deeper than {MAX_NESTING} levels") as info:
        parse_module(text, "deep.tir")
    assert len(str(info.value)) < 600  # the long line is shown cut around the column


def test_deep_regions_are_a_located_error():
    body = "scf.if %c {\n" * 5000
    text = f"func.func @k(%c: i1) {{\n{body}"
    with pytest.raises(ParseError, match=f"regions nested deeper than {MAX_REGION_NESTING}"):
        parse_module(text, "deep.tir")


@pytest.mark.parametrize("literal", ["9" * 5000, "0x" + "f" * 5000])
def test_huge_integer_literals_are_a_located_error(literal: str):
    text = f"func.func @k() {{\n  %0 = arith.constant {{value = {literal} : i32}} : i32\n  tile.return\n}}\n"
    with pytest.raises(ParseError, match=f"at most {MAX_INTEGER_DIGITS}") as info:
        parse_module(text, "big.tir")
    assert "big.tir:2:" in str(info.value)


REDUCE_ROWS = """func.func @k(%x: tensor<32x64xf32, {encoding}>) {{
  %r = tile.reduce %x {{axis = 1 : i32}} : tensor<32xf32> {{
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tile.reduce.return %s
  }}
  tile.return
}}
"""


@pytest.mark.parametrize(
    ("encoding", "message"),
    [
        # found by the pass-pipeline campaign (seed 3): an integer in the layout's place
        ("-9223372036854775808", "a tensor's encoding must be a layout attribute"),
        ('"abc"', "a tensor's encoding must be a layout attribute"),
        ("[1, 2]", "a tensor's encoding must be a layout attribute"),
        (
            "#gpu.nvmma_shared<{swizzle = 128, transposed = true}>",
            "reduces a tensor of encoding #gpu.nvmma_shared",
        ),
        (
            "#gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], "
            "order = [0]}>",
            "cannot slice the operand's layout: 'dim' must be in",
        ),
    ],
)
def test_a_reduction_of_a_tensor_without_a_register_layout_is_a_located_error(encoding, message):
    """These raised ValueError from `SliceEncodingAttr` inside the verifier."""
    text = REDUCE_ROWS.format(encoding=encoding)
    check_one(text)
    with pytest.raises(Diagnostic, match=message) as info:
        verify(parse_module(text, "reduce.tir"))
    assert str(info.value).startswith("reduce.tir:")


def test_function_typed_values_are_a_located_error():
    text = "func.func @k(%f: (i32) -> i32, %p: !tile.ptr<i32>) {\n  tile.return\n}\n"
    with pytest.raises(Diagnostic, match=r"a value cannot have a function type, got \(i32\)"):
        verify(parse_module(text, "f.tir"))
