"""Parser diagnostics: `file:line:col: error: MESSAGE`, then the source line and a caret under the column."""

from __future__ import annotations

import pytest

import tilec.dialects  # noqa: F401  (fills OP_REGISTRY)
from tilec.ir import ParseError, parse_module, print_module

# (id, text, line, col, message). The caret goes under `col` of `line`.
CASES = [
    (
        "undefined-value",
        "func.func @f() {\n  %x = arith.addi %y, %y : i32\n  tile.return\n}\n",
        2,
        19,
        "use of undefined value %y",
    ),
    (
        "undefined-value-from-other-function",
        'func.func @f(%a: i32) {\n  tile.return\n}\nfunc.func @g() {\n  tile.print %a {prefix = ""}\n  tile.return\n}\n',
        5,
        14,
        "use of undefined value %a",
    ),
    (
        "use-outside-defining-region",
        "func.func @f(%c: i1) {\n  scf.if %c {\n    %t = arith.constant {value = 1 : i32} : i32\n"
        "    scf.yield\n  }\n  %u = arith.addi %t, %t : i32\n  tile.return\n}\n",
        6,
        19,
        "use of undefined value %t",
    ),
    (
        "redefinition",
        "func.func @f(%a: i32) {\n  %a = arith.addi %a, %a : i32\n  tile.return\n}\n",
        2,
        3,
        "redefinition of value %a",
    ),
    (
        "redefinition-of-second-result",
        "func.func @f(%c: i1) {\n  %x, %x = scf.if %c : i32, i32 {\n  } \n  tile.return\n}\n",
        2,
        7,
        "redefinition of value %x",
    ),
    (
        "redefinition-of-block-argument",
        "func.func @f(%n: i32) {\n  scf.for %n, %n, %n {\n  ^bb0(%n: i32):\n    scf.yield\n  }\n  tile.return\n}\n",
        3,
        8,
        "redefinition of value %n",
    ),
    (
        "unknown-op",
        "func.func @f(%a: i32) {\n  %x = arith.frob %a, %a : i32\n  tile.return\n}\n",
        2,
        8,
        "unknown operation 'arith.frob' (is its dialect imported?)",
    ),
    (
        "unknown-op-without-results",
        "func.func @f() {\n  tile.return\n  gpu.barrier\n}\n",
        3,
        3,
        "unknown operation 'gpu.barrier' (is its dialect imported?)",
    ),
    (
        "unknown-type",
        "func.func @f(%a: i33) {\n  tile.return\n}\n",
        1,
        18,
        "unknown type 'i33'",
    ),
    (
        "unknown-element-type",
        "func.func @f(%a: tensor<4x8xfloat>) {\n  tile.return\n}\n",
        1,
        29,
        "unknown type 'float'",
    ),
    (
        "unknown-dialect-type",
        "func.func @f(%a: !tile.foo<i32>) {\n  tile.return\n}\n",
        1,
        18,
        "expected type, got '!tile.foo'",
    ),
    (
        "unranked-tensor",
        "func.func @f(%a: tensor<f32>) {\n  tile.return\n}\n",
        1,
        25,
        "expected tensor dimensions like '128x' (tensors are ranked)",
    ),
    (
        "missing-result-type",
        "func.func @f(%a: i32) {\n  %x = arith.addi %a, %a :\n  tile.return\n}\n",
        3,
        3,
        "unknown type 'tile.return'",
    ),
    (
        "bad-attribute-value",
        "func.func @f() {\n  %c = arith.constant {value = ?} : i32\n  tile.return\n}\n",
        2,
        32,
        "expected attribute value, got '?'",
    ),
    (
        "float-literal-for-integer-type",
        "func.func @f() {\n  %c = arith.constant {value = 1.5 : i32} : i32\n  tile.return\n}\n",
        2,
        38,
        "expected integer literal for type i32",
    ),
    (
        "dense-without-tensor-type",
        "func.func @f() {\n  %c = arith.constant {value = dense<1> : i32} : i32\n  tile.return\n}\n",
        2,
        38,
        "dense attribute needs a tensor type",
    ),
    (
        "duplicate-attribute",
        "func.func @f() {\n  %p = tile.program_id {axis = 0 : i32, axis = 1 : i32} : i32\n  tile.return\n}\n",
        2,
        41,
        "duplicate attribute 'axis'",
    ),
    (
        "attribute-without-equals",
        "func.func @f() attributes {inline} {\n  tile.return\n}\n",
        1,
        34,
        "expected '=' after attribute name 'inline', got '}'",
    ),
    (
        "unknown-dialect-attribute",
        "func.func @f() attributes {a = #nodialect.thing<{}>} {\n  tile.return\n}\n",
        1,
        32,
        "unknown attribute '#nodialect.thing' (is its dialect imported?)",
    ),
    (
        "undefined-alias",
        "func.func @f() attributes {layout = #blocked} {\n  tile.return\n}\n",
        1,
        37,
        "undefined attribute alias #blocked",
    ),
    (
        "undefined-alias-in-type",
        "func.func @f(%x: tensor<4xf32, #blocked>) {\n  tile.return\n}\n",
        1,
        32,
        "undefined attribute alias #blocked",
    ),
    (
        "redefined-alias",
        "#a = 1\n#a = 2\nfunc.func @f() {\n  tile.return\n}\n",
        2,
        1,
        "redefinition of attribute alias #a",
    ),
    (
        "unterminated-string",
        'func.func @f() {\n  tile.print {prefix = "abc}\n  tile.return\n}\n',
        2,
        24,
        "unterminated string literal (expected a closing '\"' on this line)",
    ),
    (
        "unterminated-location-file",
        'func.func @f() {\n  tile.return loc("k.py:1:1)\n}\n',
        2,
        19,
        "unterminated string literal (expected a closing '\"' on this line)",
    ),
    (
        "too-many-result-names",
        "func.func @f(%a: i32) {\n  %x, %y = arith.addi %a, %a : i32\n  tile.return\n}\n",
        2,
        12,
        "'arith.addi' has 2 result name(s) but 1 result type(s)",
    ),
    (
        "too-few-result-names",
        'func.func @f(%a: i32) {\n  %x = arith.cmpi %a, %a {predicate = "eq"} : i1, i1\n  tile.return\n}\n',
        2,
        8,
        "'arith.cmpi' has 1 result name(s) but 2 result type(s)",
    ),
    (
        "result-without-name",
        "func.func @f(%a: i32) {\n  arith.addi %a, %a : i32\n  tile.return\n}\n",
        2,
        3,
        "'arith.addi' defines 1 result(s) but 0 name(s) are given",
    ),
    (
        "names-for-custom-op",
        "%x = func.func @f() {\n  tile.return\n}\n",
        1,
        6,
        "'func.func' defines 0 result(s) but 1 name(s) are given",
    ),
    (
        "block-label-without-colon",
        "func.func @f(%n: i32) {\n  scf.for %n, %n, %n {\n  ^bb0(%i: i32)\n    scf.yield\n  }\n  tile.return\n}\n",
        4,
        5,
        "expected ':' after block label, got 'scf.yield'",
    ),
    (
        "parameter-without-type",
        "func.func @f(%a, %b: i32) {\n  tile.return\n}\n",
        1,
        16,
        "expected ':' and a type after %a, got ','",
    ),
    (
        "parameter-list-not-closed",
        "func.func @f(%a: i32 %b: i32) {\n  tile.return\n}\n",
        1,
        22,
        "expected ',' or ')', got '%b'",
    ),
    (
        "function-without-name",
        "func.func (%a: i32) {\n  tile.return\n}\n",
        1,
        11,
        "expected function name like '@kernel', got '('",
    ),
    (
        "missing-closing-brace-of-function",
        "func.func @f() {\n  tile.barrier\n  tile.return\n",
        4,
        1,
        "expected '}' to close the region",
    ),
    (
        "missing-closing-brace-without-final-newline",
        "func.func @f() {\n  tile.return",
        2,
        14,
        "expected '}' to close the region",
    ),
    (
        "missing-closing-brace-of-module",
        "module attributes {a = 1} {\n  func.func @f() {\n    tile.return\n  }\n",
        5,
        1,
        "expected '}' to close the module",
    ),
    (
        "stray-closing-brace",
        "func.func @f() {\n  tile.return\n}\n}\n",
        4,
        1,
        "expected operation name, got '}'",
    ),
    (
        "bad-location",
        'func.func @f() {\n  tile.return loc("k.py":3)\n}\n',
        2,
        27,
        "expected ':', got ')'",
    ),
]


@pytest.mark.parametrize(
    ("text", "line", "col", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_parse_error_message(text: str, line: int, col: int, message: str) -> None:
    with pytest.raises(ParseError) as info:
        parse_module(text, "input.tir")
    err = info.value
    source_line = text.split("\n")[line - 1]
    assert (err.filename, err.line, err.col, err.message) == ("input.tir", line, col, message)
    assert err.source_line == source_line
    caret = " " * (col - 1) + "^"
    assert str(err) == f"input.tir:{line}:{col}: error: {message}\n{source_line}\n{caret}"


def test_parse_error_default_filename() -> None:
    with pytest.raises(ParseError) as info:
        parse_module("func.func @f() {\n  %x = arith.addi %y, %y : i32\n}\n")
    assert str(info.value).startswith("<input>:2:19: error: use of undefined value %y\n")


def test_parse_error_with_tabs_and_comments_keeps_columns() -> None:
    text = "// a comment { with braces\nfunc.func @f() {\n\t%x = arith.addi %y, %y : i32 // trailing\n}\n"
    with pytest.raises(ParseError) as info:
        parse_module(text, "k.tir")
    err = info.value
    assert (err.line, err.col) == (3, 18)
    assert str(err).splitlines()[1:] == [
        "\t%x = arith.addi %y, %y : i32 // trailing",
        " " * 17 + "^",
    ]


def test_names_are_scoped_per_function() -> None:
    text = (
        "func.func @f(%a: i32) -> i32 {\n  %x = arith.addi %a, %a : i32\n  tile.return %x\n}\n"
        "\n"
        "func.func @g(%a: i32) -> i32 {\n  %x = arith.muli %a, %a : i32\n  tile.return %x\n}\n"
    )
    assert print_module(parse_module(text)) == text


def test_comments_and_whitespace_are_ignored() -> None:
    text = (
        "// leading comment\n"
        "func.func   @f( %a : i32 )->i32{// trailing\n"
        "  %x=arith.addi %a,%a:i32\n"
        "\n"
        "  tile.return %x}\n"
    )
    expected = (
        "func.func @f(%a: i32) -> i32 {\n  %x = arith.addi %a, %a : i32\n  tile.return %x\n}\n"
    )
    assert print_module(parse_module(text)) == expected


def test_empty_input_is_an_empty_module() -> None:
    assert print_module(parse_module("// nothing here\n")) == ""


def test_sibling_regions_may_reuse_a_value_name() -> None:
    text = (
        "func.func @f(%c: i1) {\n"
        "  scf.if %c {\n    %t = arith.constant {value = 1 : i32} : i32\n    scf.yield\n  } {\n"
        "    %t = arith.constant {value = 2 : i32} : i32\n    scf.yield\n  }\n"
        "  tile.return\n}\n"
    )
    printed = print_module(parse_module(text))
    assert "%t = arith.constant {value = 1 : i32}" in printed
    assert "%t_1 = arith.constant {value = 2 : i32}" in printed
    assert print_module(parse_module(printed)) == printed
