"""Integer attributes hold only what their type's bits hold (issue 22, item 7)."""

import pytest

from tilec.ir.attributes import IntegerAttr
from tilec.ir.parser import ParseError, parse_module
from tilec.ir.printer import print_module
from tilec.ir.types import IntegerType, i1, i8, i64


@pytest.mark.parametrize(
    ("value", "type_"),
    [(300, i8), (-129, i8), (2, i1), (-2, i1), (2**64, i64), (256, IntegerType(8, True))],
)
def test_an_out_of_range_integer_attribute_cannot_be_made(value, type_):
    with pytest.raises(ValueError, match=f"integer {value} is out of range for {type_}"):
        IntegerAttr(value, type_)


@pytest.mark.parametrize(("value", "type_"), [(255, i8), (-128, i8), (1, i1), (0, i1)])
def test_the_ends_of_the_range_are_integer_attributes(value, type_):
    assert IntegerAttr(value, type_).value == value


@pytest.mark.parametrize(
    ("literal", "column"),
    [
        ("300 : i8", 32),
        ("2 : i1", 32),
        ("dense<300> : tensor<4xi8>", 38),
        ("18446744073709551616", 32),
    ],
)
def test_an_out_of_range_integer_literal_is_a_located_parse_error(literal, column):
    text = (
        f"func.func @k() {{\n  %c = arith.constant {{value = {literal}}} : i8\n  tile.return\n}}\n"
    )
    with pytest.raises(ParseError, match="is out of range for") as info:
        parse_module(text, "range.tir")
    assert (info.value.line, info.value.col) == (2, column)


def test_an_in_range_i1_attribute_round_trips():
    text = (
        "func.func @k() -> i1 {\n  %c = arith.constant {value = 1 : i1} : i1\n  tile.return %c\n}\n"
    )
    printed = print_module(parse_module(text))
    assert print_module(parse_module(printed)) == printed


def test_a_dimension_of_thousands_of_digits_is_a_located_parse_error():
    text = "func.func @k(%x: tensor<" + "7" * 5000 + "xf32>) {\n  tile.return\n}\n"
    with pytest.raises(ParseError, match="tensor dimension of 5000 digits is larger than") as info:
        parse_module(text, "dim.tir")
    assert (info.value.line, info.value.col) == (1, 25)
