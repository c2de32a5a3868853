"""Verifier diagnostics: `file:line:col: error: 'op.name' op MESSAGE`, the op's text, and the source
line when the location names a readable file.

Each case is a small module with one error; the expected location is the line and column of the
offending op's name in the text (or its explicit `loc(...)`), and the expected op text is how that op
prints (ops with regions print their first line and ` ...`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import tilec.dialects  # noqa: F401  (fills OP_REGISTRY)
from tilec.ir import (
    OP_REGISTRY,
    Block,
    Diagnostic,
    FileLineColLoc,
    FunctionType,
    ModuleOp,
    Region,
    StringAttr,
    TypeAttr,
    f32,
    i32,
    parse_module,
    verify,
)

FILE = "kernel.tir"  # never read: no such file, so diagnostics have no source line


def _func(body: str, params: str = "", results: str = "") -> str:
    signature = f"func.func @f({params})" + (f" -> {results}" if results else "")
    return f"{signature} {{\n{body.rstrip()}\n}}\n"


def _diagnostic(text: str, filename: str = FILE) -> Diagnostic:
    module = parse_module(text, filename)
    with pytest.raises(Diagnostic) as info:
        verify(module)
    return info.value


def _locate(text: str, marker: str) -> tuple[int, int]:
    """Line and column (1-based) of the first `marker` in `text`."""
    index = text.index(marker)
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


# (id, text, marker (where the op's name starts), op name, message, op text)
CASES = [
    (
        "operand-constraint",
        _func("  %x = arith.addi %a, %b : i32\n  tile.return", "%a: i32, %b: f32"),
        "arith.addi",
        "arith.addi",
        "operand #1 ('rhs') must be integer or tensor of integers, got f32",
        "%x = arith.addi %a, %b : i32",
    ),
    (
        "operand-type-mismatch",
        _func("  %x = arith.addi %a, %b : i32\n  tile.return", "%a: i32, %b: i64"),
        "arith.addi",
        "arith.addi",
        "requires the same type for all operands and results, got i32, i64, i32",
        "%x = arith.addi %a, %b : i32",
    ),
    (
        "result-type-mismatch",
        _func("  %x = math.exp %a : f64\n  tile.return", "%a: f32"),
        "math.exp",
        "math.exp",
        "requires the same type for all operands and results, got f32, f64",
        "%x = math.exp %a : f64",
    ),
    (
        "elementwise-shape-mismatch",
        _func(
            "  %x = arith.addf %a, %b : tensor<4xf32>\n  tile.return",
            "%a: tensor<4xf32>, %b: tensor<8xf32>",
        ),
        "arith.addf",
        "arith.addf",
        "requires operands and results of equal shape, got shapes 4, 8",
        "%x = arith.addf %a, %b : tensor<4xf32>",
    ),
    (
        "elementwise-scalar-and-tensor",
        _func(
            "  %q = tile.addptr %p, %o : tensor<4x!tile.ptr<f32>>\n  tile.return",
            "%p: tensor<4x!tile.ptr<f32>>, %o: i32",
        ),
        "tile.addptr",
        "tile.addptr",
        "mixes scalars and tensors; splat the scalar to the tensor's shape first",
        "%q = tile.addptr %p, %o : tensor<4x!tile.ptr<f32>>",
    ),
    (
        "compare-result-shape",
        _func(
            '  %m = arith.cmpi %a, %b {predicate = "eq"} : i1\n  tile.return',
            "%a: tensor<4xi32>, %b: tensor<4xi32>",
        ),
        "arith.cmpi",
        "arith.cmpi",
        "mixes scalars and tensors; splat the scalar to the tensor's shape first",
        '%m = arith.cmpi %a, %b {predicate = "eq"} : i1',
    ),
    (
        "select-branch-types",
        _func("  %r = arith.select %c, %a, %b : f32\n  tile.return", "%c: i1, %a: f32, %b: f16"),
        "arith.select",
        "arith.select",
        "true and false values must both have the result type f32, got f32 and f16",
        "%r = arith.select %c, %a, %b : f32",
    ),
    (
        "non-power-of-two-result",
        _func(
            "  %r = tile.make_range {start = 0 : i32, end = 3 : i32} : tensor<3xi32>\n  tile.return"
        ),
        "tile.make_range",
        "tile.make_range",
        "tensor dimensions must be powers of two, got tensor<3xi32>",
        "%r = tile.make_range {start = 0 : i32, end = 3 : i32} : tensor<3xi32>",
    ),
    (
        "non-power-of-two-argument",
        _func("  tile.return", "%a: tensor<4x6xf32>"),
        "func.func",
        "func.func",
        "tensor dimensions must be powers of two, got tensor<4x6xf32>",
        "func.func @f(%a: tensor<4x6xf32>) { ...",
    ),
    (
        "missing-terminator-in-function",
        _func("  %x = arith.addi %a, %a : i32", "%a: i32"),
        "func.func",
        "func.func",
        "region must end with a terminator op, found 'arith.addi'",
        "func.func @f(%a: i32) { ...",
    ),
    (
        "missing-terminator-in-loop",
        _func(
            "  scf.for %a, %a, %a {\n  ^bb0(%i: i32):\n    tile.barrier\n  }\n  tile.return",
            "%a: i32",
        ),
        "scf.for",
        "scf.for",
        "body must end with 'scf.yield'",
        "scf.for %a, %a, %a { ...",
    ),
    (
        "terminator-not-last",
        _func("  tile.return\n  tile.barrier"),
        "tile.return",
        "tile.return",
        "must be the last operation in its block",
        "tile.return",
    ),
    (
        "terminator-in-wrong-parent",
        _func("  scf.yield"),
        "scf.yield",
        "scf.yield",
        "expects parent op 'scf.for' or 'scf.if' or 'scf.while'",
        "scf.yield",
    ),
    (
        "for-yield-types",
        _func(
            "  %r = scf.for %a, %a, %a, %a : i32 {\n"
            "  ^bb0(%i: i32, %acc: i32):\n"
            "    %f = arith.sitofp %acc : f32\n"
            "    scf.yield %f\n"
            "  }\n"
            "  tile.return",
            "%a: i32",
        ),
        "scf.for",
        "scf.for",
        "body yields (f32) but (i32) is expected",
        "%r = scf.for %a, %a, %a, %a : i32 { ...",
    ),
    (
        "for-body-arguments",
        _func(
            "  %r = scf.for %a, %a, %a, %a : i32 {\n"
            "  ^bb0(%i: i32):\n"
            "    scf.yield %i\n"
            "  }\n"
            "  tile.return",
            "%a: i32",
        ),
        "scf.for",
        "scf.for",
        "body arguments (i32) must be the induction variable and the loop-carried values (i32, i32)",
        "%r = scf.for %a, %a, %a, %a : i32 { ...",
    ),
    (
        "for-bound-types",
        _func(
            "  scf.for %a, %b, %a {\n  ^bb0(%i: i32):\n    scf.yield\n  }\n  tile.return",
            "%a: i32, %b: i64",
        ),
        "scf.for",
        "scf.for",
        "bounds and step must have one type, got i32, i64, i32",
        "scf.for %a, %b, %a { ...",
    ),
    (
        "if-then-yield-types",
        _func(
            "  %r = scf.if %c : f32 {\n    scf.yield %a\n  } {\n    scf.yield %b\n  }\n  tile.return",
            "%c: i1, %a: i32, %b: f32",
        ),
        "scf.if",
        "scf.if",
        "then region yields (i32) but (f32) is expected",
        "%r = scf.if %c : f32 { ...",
    ),
    (
        "if-else-yield-count",
        _func(
            "  %r = scf.if %c : f32 {\n    scf.yield %b\n  } {\n    scf.yield %b, %b\n  }\n  tile.return",
            "%c: i1, %b: f32",
        ),
        "scf.if",
        "scf.if",
        "else region yields (f32, f32) but (f32) is expected",
        "%r = scf.if %c : f32 { ...",
    ),
    (
        "if-results-without-else",
        _func("  %r = scf.if %c : f32 {\n    scf.yield %b\n  }\n  tile.return", "%c: i1, %b: f32"),
        "scf.if",
        "scf.if",
        "must have an else region because it has results",
        "%r = scf.if %c : f32 { ...",
    ),
    (
        "if-condition-not-scalar",
        _func("  scf.if %c {\n    scf.yield\n  }\n  tile.return", "%c: tensor<4xi1>"),
        "scf.if",
        "scf.if",
        "operand #0 ('condition') must be i1, got tensor<4xi1>",
        "scf.if %c { ...",
    ),
    (
        "while-after-yield-types",
        _func(
            "  %r = scf.while %a : i32 {\n"
            "  ^bb0(%x: i32):\n"
            "    scf.condition %c, %x\n"
            "  } {\n"
            "  ^bb0(%y: i32):\n"
            "    scf.yield %c\n"
            "  }\n"
            "  tile.return",
            "%a: i32, %c: i1",
        ),
        "scf.while",
        "scf.while",
        "after region yields (i1) but (i32) is expected",
        "%r = scf.while %a : i32 { ...",
    ),
    (
        "while-condition-forwards",
        _func(
            "  %r = scf.while %a : i32 {\n"
            "  ^bb0(%x: i32):\n"
            "    scf.condition %c, %c\n"
            "  } {\n"
            "  ^bb0(%y: i32):\n"
            "    scf.yield %y\n"
            "  }\n"
            "  tile.return",
            "%a: i32, %c: i1",
        ),
        "scf.while",
        "scf.while",
        "'scf.condition' forwards (i1) but the results are (i32)",
        "%r = scf.while %a : i32 { ...",
    ),
    (
        "load-mask-shape",
        _func(
            "  %v = tile.load %p, %m : tensor<4xf32>\n  tile.return",
            "%p: tensor<4x!tile.ptr<f32>>, %m: tensor<8xi1>",
        ),
        "tile.load",
        "tile.load",
        "mask shape 8 does not match the pointer shape 4",
        "%v = tile.load %p, %m : tensor<4xf32>",
    ),
    (
        "load-result-vs-pointee",
        _func("  %v = tile.load %p : tensor<4xf16>\n  tile.return", "%p: tensor<4x!tile.ptr<f32>>"),
        "tile.load",
        "tile.load",
        "value type tensor<4xf16> does not match the pointer type tensor<4x!tile.ptr<f32>>",
        "%v = tile.load %p : tensor<4xf16>",
    ),
    (
        "store-value-vs-pointee",
        _func("  tile.store %p, %v\n  tile.return", "%p: !tile.ptr<i64>, %v: i32"),
        "tile.store",
        "tile.store",
        "value type i32 does not match the pointer type !tile.ptr<i64>",
        "tile.store %p, %v",
    ),
    (
        "load-bad-cache-modifier",
        _func('  %v = tile.load %p {cache = ".xx"} : f32\n  tile.return', "%p: !tile.ptr<f32>"),
        "tile.load",
        "tile.load",
        "cache '.xx' is not one of '', '.ca', '.cg', '.cs', '.cv'",
        '%v = tile.load %p {cache = ".xx"} : f32',
    ),
    (
        "store-cache-modifier-of-a-load",
        _func('  tile.store %p, %v {cache = ".cv"}\n  tile.return', "%p: !tile.ptr<f32>, %v: f32"),
        "tile.store",
        "tile.store",
        "cache '.cv' is not one of '', '.wb', '.cg', '.cs', '.wt'",
        'tile.store %p, %v {cache = ".cv"}',
    ),
    (
        "atomic-kind-needs-integers",
        _func(
            '  %o = tile.atomic_rmw %p, %v {kind = "xor", sem = "relaxed", scope = "gpu"} : f32\n  tile.return',
            "%p: !tile.ptr<f32>, %v: f32",
        ),
        "tile.atomic_rmw",
        "tile.atomic_rmw",
        "atomic 'xor' needs integer values, got f32",
        '%o = tile.atomic_rmw %p, %v {kind = "xor", sem = "relaxed", scope = "gpu"} : f32',
    ),
    (
        "reduce-combiner-arity",
        _func(
            "  %s = tile.reduce %a {axis = 0 : i32} : f32 {\n"
            "  ^bb0(%x: f32, %y: f32, %z: f32):\n"
            "    tile.reduce.return %x\n"
            "  }\n"
            "  tile.return",
            "%a: tensor<8xf32>",
        ),
        "tile.reduce",
        "tile.reduce",
        "combiner arguments (f32, f32, f32) must be (f32, f32)",
        "%s = tile.reduce %a {axis = 0 : i32} : f32 { ...",
    ),
    (
        "reduce-combiner-returns",
        _func(
            "  %s = tile.reduce %a {axis = 0 : i32} : f32 {\n"
            "  ^bb0(%x: f32, %y: f32):\n"
            "    tile.reduce.return %x, %y\n"
            "  }\n"
            "  tile.return",
            "%a: tensor<8xf32>",
        ),
        "tile.reduce",
        "tile.reduce",
        "combiner returns (f32, f32) but (f32) is expected",
        "%s = tile.reduce %a {axis = 0 : i32} : f32 { ...",
    ),
    (
        "reduce-result-shape",
        _func(
            "  %s = tile.reduce %a {axis = 0 : i32} : tensor<8xf32> {\n"
            "  ^bb0(%x: f32, %y: f32):\n"
            "    tile.reduce.return %x\n"
            "  }\n"
            "  tile.return",
            "%a: tensor<8x4xf32>",
        ),
        "tile.reduce",
        "tile.reduce",
        "results must be (tensor<4xf32>), got (tensor<8xf32>)",
        "%s = tile.reduce %a {axis = 0 : i32} : tensor<8xf32> { ...",
    ),
    (
        "reduce-axis-out-of-range",
        _func(
            "  %s = tile.reduce %a {axis = 1 : i32} : f32 {\n"
            "  ^bb0(%x: f32, %y: f32):\n"
            "    tile.reduce.return %x\n"
            "  }\n"
            "  tile.return",
            "%a: tensor<8xf32>",
        ),
        "tile.reduce",
        "tile.reduce",
        "axis 1 is out of range for shape 8",
        "%s = tile.reduce %a {axis = 1 : i32} : f32 { ...",
    ),
    (
        "dot-shape-mismatch",
        _func(
            "  %d = tile.dot %a, %b, %c : tensor<16x32xf32>\n  tile.return",
            "%a: tensor<16x32xf16>, %b: tensor<16x32xf16>, %c: tensor<16x32xf32>",
        ),
        "tile.dot",
        "tile.dot",
        "shapes do not compose: 16x32 @ 16x32 + 16x32",
        "%d = tile.dot %a, %b, %c : tensor<16x32xf32>",
    ),
    (
        "dot-accumulator-shape",
        _func(
            "  %d = tile.dot %a, %b, %c : tensor<16x16xf32>\n  tile.return",
            "%a: tensor<16x32xf16>, %b: tensor<32x64xf16>, %c: tensor<16x16xf32>",
        ),
        "tile.dot",
        "tile.dot",
        "shapes do not compose: 16x32 @ 32x64 + 16x16",
        "%d = tile.dot %a, %b, %c : tensor<16x16xf32>",
    ),
    (
        "call-unknown-function",
        _func("  %r = tile.call %a {callee = @nope} : f32\n  tile.return", "%a: f32"),
        "tile.call",
        "tile.call",
        "calls @nope, which is not a function of this module",
        "%r = tile.call %a {callee = @nope} : f32",
    ),
    (
        "call-type-mismatch",
        "func.func @g(%x: f32) -> f32 {\n  tile.return %x\n}\n"
        + _func("  %r = tile.call %a {callee = @g} : f32\n  tile.return", "%a: i32"),
        "tile.call",
        "tile.call",
        "call types (i32) -> (f32) do not match @g's signature (f32) -> f32",
        "%r = tile.call %a {callee = @g} : f32",
    ),
    (
        "return-type-mismatch",
        _func("  tile.return %a", "%a: i32", "f32"),
        "tile.return",
        "tile.return",
        "returns (i32) but the function returns (f32)",
        "tile.return %a",
    ),
    (
        "return-count-mismatch",
        _func("  tile.return", "%a: i32", "i32"),
        "tile.return",
        "tile.return",
        "returns () but the function returns (i32)",
        "tile.return",
    ),
    (
        "bad-cmpi-predicate",
        _func('  %b = arith.cmpi %a, %a {predicate = "lt"} : i1\n  tile.return', "%a: i32"),
        "arith.cmpi",
        "arith.cmpi",
        "unknown predicate 'lt'; expected one of eq, ne, slt, sle, sgt, sge, ult, ule, ugt, uge",
        '%b = arith.cmpi %a, %a {predicate = "lt"} : i1',
    ),
    (
        "cmpf-with-integer-predicate",
        _func('  %b = arith.cmpf %a, %a {predicate = "slt"} : i1\n  tile.return', "%a: f32"),
        "arith.cmpf",
        "arith.cmpf",
        "unknown predicate 'slt'; expected one of false, oeq, ogt, oge, olt, ole, one, ord, ueq, ugt, "
        "uge, ult, ule, une, uno, true",
        '%b = arith.cmpf %a, %a {predicate = "slt"} : i1',
    ),
    (
        "extsi-must-widen",
        _func("  %b = arith.extsi %a : i16\n  tile.return", "%a: i32"),
        "arith.extsi",
        "arith.extsi",
        "result width must be wider than the source's: cannot cast i32 to i16",
        "%b = arith.extsi %a : i16",
    ),
    (
        "trunci-must-narrow",
        _func("  %b = arith.trunci %a : tensor<4xi32>\n  tile.return", "%a: tensor<4xi32>"),
        "arith.trunci",
        "arith.trunci",
        "result width must be narrower than the source's: cannot cast i32 to i32",
        "%b = arith.trunci %a : tensor<4xi32>",
    ),
    (
        "truncf-bf16-to-f16-same-width",
        _func("  %b = arith.truncf %a : f16\n  tile.return", "%a: bf16"),
        "arith.truncf",
        "arith.truncf",
        "result width must be narrower than the source's: cannot cast bf16 to f16",
        "%b = arith.truncf %a : f16",
    ),
    (
        "bitcast-same-width",
        _func("  %b = arith.bitcast %a : i64\n  tile.return", "%a: f32"),
        "arith.bitcast",
        "arith.bitcast",
        "result width must be the same as the source's: cannot cast f32 to i64",
        "%b = arith.bitcast %a : i64",
    ),
    (
        "extf-of-integer",
        _func("  %b = arith.extf %a : f64\n  tile.return", "%a: i32"),
        "arith.extf",
        "arith.extf",
        "source must be of FloatType elements, got i32",
        "%b = arith.extf %a : f64",
    ),
    (
        "cast-shape",
        _func("  %b = arith.sitofp %a : tensor<8xf32>\n  tile.return", "%a: tensor<4xi32>"),
        "arith.sitofp",
        "arith.sitofp",
        "requires operands and results of equal shape, got shapes 4, 8",
        "%b = arith.sitofp %a : tensor<8xf32>",
    ),
    (
        "make-range-end-before-start",
        _func(
            "  %r = tile.make_range {start = 8 : i32, end = 4 : i32} : tensor<4xi32>\n  tile.return"
        ),
        "tile.make_range",
        "tile.make_range",
        "end (4) must be greater than start (8)",
        "%r = tile.make_range {start = 8 : i32, end = 4 : i32} : tensor<4xi32>",
    ),
    (
        "make-range-result-size",
        _func(
            "  %r = tile.make_range {start = 0 : i32, end = 8 : i32} : tensor<16xi32>\n  tile.return"
        ),
        "tile.make_range",
        "tile.make_range",
        "result must be tensor<8xi32>, got tensor<16xi32>",
        "%r = tile.make_range {start = 0 : i32, end = 8 : i32} : tensor<16xi32>",
    ),
    (
        "trans-order-not-permutation",
        _func(
            "  %t = tile.trans %a {order = [0, 0]} : tensor<2x4xf32>\n  tile.return",
            "%a: tensor<2x4xf32>",
        ),
        "tile.trans",
        "tile.trans",
        "order [0, 0] is not a permutation of the dimensions of tensor<2x4xf32>",
        "%t = tile.trans %a {order = [0, 0]} : tensor<2x4xf32>",
    ),
    (
        "trans-result-shape",
        _func(
            "  %t = tile.trans %a {order = [1, 0]} : tensor<2x4xf32>\n  tile.return",
            "%a: tensor<2x4xf32>",
        ),
        "tile.trans",
        "tile.trans",
        "result must be tensor<4x2xf32>, got tensor<2x4xf32>",
        "%t = tile.trans %a {order = [1, 0]} : tensor<2x4xf32>",
    ),
    (
        "broadcast-incompatible",
        _func("  %b = tile.broadcast %a : tensor<4x8xf32>\n  tile.return", "%a: tensor<2x8xf32>"),
        "tile.broadcast",
        "tile.broadcast",
        "cannot broadcast shape 2x8 to 4x8: only dimensions of size 1 broadcast",
        "%b = tile.broadcast %a : tensor<4x8xf32>",
    ),
    (
        "broadcast-rank",
        _func("  %b = tile.broadcast %a : tensor<4x8xf32>\n  tile.return", "%a: tensor<8xf32>"),
        "tile.broadcast",
        "tile.broadcast",
        "cannot broadcast tensor<8xf32> to tensor<4x8xf32>: element type and rank must match",
        "%b = tile.broadcast %a : tensor<4x8xf32>",
    ),
    (
        "splat-element-type",
        _func("  %b = tile.splat %a : tensor<4xf32>\n  tile.return", "%a: f16"),
        "tile.splat",
        "tile.splat",
        "result element type must be f16, got tensor<4xf32>",
        "%b = tile.splat %a : tensor<4xf32>",
    ),
    (
        "attribute-of-wrong-kind",
        _func('  %p = tile.program_id {axis = "x"} : i32\n  tile.return'),
        "tile.program_id",
        "tile.program_id",
        "attribute 'axis' must be IntegerAttr, got \"x\"",
        '%p = tile.program_id {axis = "x"} : i32',
    ),
    (
        "constant-of-wrong-kind",
        _func("  %c = arith.constant {value = @f} : i32\n  tile.return"),
        "arith.constant",
        "arith.constant",
        "attribute 'value' must be IntegerAttr or FloatAttr or DenseAttr, got @f",
        "%c = arith.constant {value = @f} : i32",
    ),
    (
        "constant-type-mismatch",
        _func("  %c = arith.constant {value = 1 : i32} : i64\n  tile.return"),
        "arith.constant",
        "arith.constant",
        "value type i32 does not match result type i64",
        "%c = arith.constant {value = 1 : i32} : i64",
    ),
    (
        "missing-required-attribute",
        _func("  %r = tile.make_range {start = 0 : i32} : tensor<4xi32>\n  tile.return"),
        "tile.make_range",
        "tile.make_range",
        "requires attribute 'end'",
        "%r = tile.make_range {start = 0 : i32} : tensor<4xi32>",
    ),
    (
        "program-id-axis",
        _func("  %p = tile.program_id {axis = 3 : i32} : i32\n  tile.return"),
        "tile.program_id",
        "tile.program_id",
        "axis must be 0, 1 or 2, got 3",
        "%p = tile.program_id {axis = 3 : i32} : i32",
    ),
    (
        "operand-count",
        _func("  %x = arith.addi %a, %a, %a : i32\n  tile.return", "%a: i32"),
        "arith.addi",
        "arith.addi",
        "expects 2 operand(s), got 3",
        "%x = arith.addi %a, %a, %a : i32",
    ),
    (
        "optional-operand-count",
        _func("  tile.store %p, %v, %m, %m\n  tile.return", "%p: !tile.ptr<f32>, %v: f32, %m: i1"),
        "tile.store",
        "tile.store",
        "expects 2 to 3 operand(s), got 4",
        "tile.store %p, %v, %m, %m",
    ),
    (
        "local-store-tile",
        "#blocked = #gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], "
        "warpsPerCTA = [4, 1], order = [1, 0]}>\n"
        + _func(
            "  %buf = gpu.local_alloc : !gpu.memdesc<2x64x32xf16>\n"
            "  gpu.local_store %t, %buf, %s\n  tile.return",
            "%t: tensor<32x64xf16, #blocked>, %s: i32",
        ),
        "gpu.local_store",
        "gpu.local_store",
        "value tensor<32x64xf16, #gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], "
        "warpsPerCTA = [4, 1], order = [1, 0]}>> does not match a slot of "
        "!gpu.memdesc<2x64x32xf16> (64x32 of f16)",
        "gpu.local_store %t, %buf, %s",
    ),
    (
        "region-count",
        _func("  tile.barrier {\n    tile.return\n  }\n  tile.return"),
        "tile.barrier",
        "tile.barrier",
        "expects 0 region(s), got 1",
        "tile.barrier { ...",
    ),
]


@pytest.mark.parametrize(
    ("text", "marker", "op_name", "message", "op_text"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_verifier_diagnostic(
    text: str, marker: str, op_name: str, message: str, op_text: str
) -> None:
    err = _diagnostic(text)
    line, col = _locate(text, marker)
    assert str(err).split("\n") == [
        f"{FILE}:{line}:{col}: error: '{op_name}' op {message}",
        f"  {op_text}",
    ]
    assert err.op is not None and err.op.name == op_name


def test_explicit_location_replaces_the_text_position() -> None:
    text = _func(
        '  %x = arith.addi %a, %b : i32 loc("model.py":40:9)\n  tile.return', "%a: i32, %b: i64"
    )
    lines = str(_diagnostic(text)).split("\n")
    assert lines == [
        "model.py:40:9: error: 'arith.addi' op requires the same type for all operands and results, "
        "got i32, i64, i32",
        "  %x = arith.addi %a, %b : i32",
    ]


def test_unknown_location() -> None:
    text = _func("  %x = arith.addi %a, %b : i32 loc(unknown)\n  tile.return", "%a: i32, %b: f32")
    assert str(_diagnostic(text)).startswith("<unknown>: error: 'arith.addi' op operand #1 ('rhs')")


def test_python_source_line_is_shown(tmp_path: Path) -> None:
    source = tmp_path / "my_kernel.py"
    source.write_text("def kernel(x, y):\n    z = x + y\n    return z\n")
    text = _func(
        f'  %z = arith.addi %x, %y : i32 loc("{source}":2:5)\n  tile.return', "%x: i32, %y: f32"
    )
    lines = str(_diagnostic(text)).split("\n")
    assert lines == [
        f"{source}:2:5: error: 'arith.addi' op operand #1 ('rhs') must be integer or tensor of "
        "integers, got f32",
        "  %z = arith.addi %x, %y : i32",
        f"  {source}:2: z = x + y",
    ]


def test_tir_source_line_is_shown_when_the_file_exists(tmp_path: Path) -> None:
    path = tmp_path / "input.tir"
    text = _func("  %x = arith.addi %a, %b : i32\n  tile.return", "%a: i32, %b: f32")
    path.write_text(text)
    lines = str(_diagnostic(path.read_text(), str(path))).split("\n")
    assert lines[0].startswith(f"{path}:2:8: error: 'arith.addi' op ")
    assert lines[2] == f"  {path}:2: %x = arith.addi %a, %b : i32"


def test_nested_op_text_names_outer_values_as_printed() -> None:
    text = _func(
        "  %r = scf.for %lo, %hi, %st, %z : f32 {\n"
        "  ^bb0(%i: i32, %acc: f32):\n"
        "    %bad = arith.addf %acc, %i : f32\n"
        "    scf.yield %bad\n"
        "  }\n"
        "  tile.return",
        "%lo: i32, %hi: i32, %st: i32, %z: f32",
    )
    lines = str(_diagnostic(text)).split("\n")
    assert lines == [
        f"{FILE}:4:12: error: 'arith.addf' op operand #1 ('rhs') must be float or tensor of floats, got i32",
        "  %bad = arith.addf %acc, %i : f32",
    ]


# Errors that the text form cannot express: built with the Python API ---------------------------


def _parsed_function(text: str) -> tuple[ModuleOp, list]:
    module = parse_module(text, FILE)
    func = next(iter(module.body.ops))
    return module, list(func.entry_block.ops)


def test_use_before_definition() -> None:
    module, ops = _parsed_function(
        _func(
            "  %x = arith.addi %a, %a : i32\n  %y = arith.muli %x, %x : i32\n  tile.return",
            "%a: i32",
        )
    )
    add, mul = ops[0], ops[1]
    mul.detach()
    add.parent.insert_before(mul, add)
    with pytest.raises(Diagnostic) as info:
        verify(module)
    lines = str(info.value).split("\n")
    assert lines[0] == f"{FILE}:3:8: error: 'arith.muli' op operand #0 does not dominate this use"
    # The operand is defined after the use, so the op's text cannot name it yet (`%<<UNKNOWN>>`).
    assert lines[1].startswith("  %y = arith.muli ")
    assert len(lines) == 2


def test_use_outside_the_defining_region() -> None:
    module, ops = _parsed_function(
        _func(
            "  scf.if %c {\n    %t = arith.addi %a, %a : i32\n    scf.yield\n  }\n"
            "  %u = arith.muli %a, %a : i32\n  tile.return",
            "%a: i32, %c: i1",
        )
    )
    inner_add = next(iter(ops[0].regions[0].block.ops))
    ops[1].set_operand(0, inner_add.result)
    with pytest.raises(Diagnostic) as info:
        verify(module)
    assert str(info.value).split("\n")[0] == (
        f"{FILE}:6:8: error: 'arith.muli' op operand #0 is not defined in an enclosing scope of "
        "this use (it does not dominate the use)"
    )


def test_tensor_elements_must_be_scalars() -> None:
    text = _func("  tile.return", "%a: tensor<4xtensor<2xf32>>")
    with pytest.raises(Diagnostic, match=r"tensor elements must be integers, floats or pointers"):
        verify(parse_module(text, FILE))


def test_use_of_value_from_another_function() -> None:
    module = parse_module(
        _func("  %x = arith.addi %a, %a : i32\n  tile.return", "%a: i32")
        + _func("  tile.return", "%b: i32").replace("@f", "@g"),
        FILE,
    )
    f, g = list(module.body.ops)
    x = f.entry_block.first_op.result
    user = OP_REGISTRY["math.absi"].create([x], [i32], location=FileLineColLoc("k.py", 7, 3))
    g.entry_block.insert_before(user, g.entry_block.last_op)
    with pytest.raises(Diagnostic) as info:
        verify(module)
    assert str(info.value).split("\n") == [
        "k.py:7:3: error: 'math.absi' op operand #0 is not defined in an enclosing scope of "
        "this use (it does not dominate the use)",
        "  %0 = math.absi %<<UNKNOWN>> : i32",
    ]


def test_function_entry_block_arguments_must_match_the_signature() -> None:
    module, _ = _parsed_function(_func("  tile.return", "%a: i32, %b: f32"))
    func = next(iter(module.body.ops))
    func.attributes["function_type"] = TypeAttr(FunctionType([i32], []))
    with pytest.raises(Diagnostic) as info:
        verify(module)
    assert str(info.value).split("\n") == [
        f"{FILE}:1:1: error: 'func.func' op entry block arguments (i32, f32) do not match the "
        "signature (i32) -> ()",
        "  func.func @f(%a: i32, %b: f32) { ...",
    ]


def test_function_requires_its_name() -> None:
    module, _ = _parsed_function(_func("  tile.return"))
    func = next(iter(module.body.ops))
    func.attributes["sym_name"] = TypeAttr(f32)
    with pytest.raises(Diagnostic) as info:
        verify(module)
    assert str(info.value).split("\n") == [
        f"{FILE}:1:1: error: 'func.func' op attribute 'sym_name' must be StringAttr, got f32",
        "  func.func {sym_name = f32, function_type = () -> ()} { ...",
    ]
    del func.attributes["sym_name"]
    with pytest.raises(Diagnostic) as info:
        verify(module)
    assert str(info.value).split("\n") == [
        f"{FILE}:1:1: error: 'func.func' op requires attribute 'sym_name'",
        "  func.func {function_type = () -> ()} { ...",
    ]


def test_malformed_function_attributes_from_text() -> None:
    text = "func.func @f() attributes {function_type = 1} {\n  tile.return\n}\n"
    assert str(_diagnostic(text)).split("\n") == [
        f"{FILE}:1:1: error: 'func.func' op attribute 'function_type' must be TypeAttr, got 1",
        '  func.func {sym_name = "f", function_type = 1} { ...',
    ]
    text = "func.func @f() attributes {function_type = (i32) -> ()} {\n  tile.return\n}\n"
    assert str(_diagnostic(text)).split("\n")[0] == (
        f"{FILE}:1:1: error: 'func.func' op entry block arguments () do not match the signature "
        "(i32) -> ()"
    )


def test_call_next_to_a_function_with_a_malformed_name() -> None:
    text = (
        "func.func @g() {\n  tile.return\n}\n"
        "func.func @f() {\n  tile.call {callee = @f}\n  tile.return\n}\n"
    )
    module = parse_module(text, FILE)
    g = module.body.first_op
    g.attributes["sym_name"] = TypeAttr(f32)
    with pytest.raises(Diagnostic) as info:
        verify(module)
    assert str(info.value).split("\n")[0] == (
        f"{FILE}:1:1: error: 'func.func' op attribute 'sym_name' must be StringAttr, got f32"
    )


def test_duplicate_function_names() -> None:
    text = "func.func @f() {\n  tile.return\n}\nfunc.func @f(%a: i32) {\n  tile.return\n}\n"
    assert str(_diagnostic(text)).split("\n") == [
        f"{FILE}:4:1: error: 'func.func' op redefinition of function @f",
        "  func.func @f(%a: i32) { ...",
    ]


def test_function_body_must_not_be_empty() -> None:
    func = OP_REGISTRY["func.func"].create(
        attributes={"sym_name": StringAttr("f"), "function_type": TypeAttr(FunctionType([], []))},
        regions=[Region()],
    )
    with pytest.raises(Diagnostic) as info:
        verify(ModuleOp([func]))
    assert str(info.value).split("\n") == [
        "<unknown>: error: 'func.func' op region 'body' must not be empty",
        '  func.func {sym_name = "f", function_type = () -> ()}',
    ]


def test_empty_block_has_no_terminator() -> None:
    func = OP_REGISTRY["func.func"].create(
        attributes={"sym_name": StringAttr("f"), "function_type": TypeAttr(FunctionType([], []))},
        regions=[Region([Block()])],
    )
    with pytest.raises(Diagnostic) as info:
        verify(ModuleOp([func]))
    assert str(info.value).split("\n")[0] == (
        "<unknown>: error: 'func.func' op region must end with a terminator op, found an empty block"
    )


def test_valid_module_verifies() -> None:
    text = _func(
        "  %r = scf.for %a, %a, %a, %z : f32 {\n"
        "  ^bb0(%i: i32, %acc: f32):\n"
        "    %n = arith.addf %acc, %z : f32\n"
        "    scf.yield %n\n"
        "  }\n"
        "  tile.return %r",
        "%a: i32, %z: f32",
        "f32",
    )
    verify(parse_module(text, FILE))


def test_reduce_combiner_may_not_use_outer_values() -> None:
    text = _func(
        "  %r = tile.reduce %x {axis = 0 : i32} : f32 {\n"
        "  ^bb0(%a: f32, %b: f32):\n"
        "    %s = arith.addf %a, %y : f32\n"
        "    tile.reduce.return %s\n"
        "  }\n"
        "  tile.return",
        "%x: tensor<8xf32>, %y: f32",
    )
    with pytest.raises(Diagnostic) as info:
        verify(parse_module(text, FILE))
    assert str(info.value).split("\n")[0] == (
        f"{FILE}:4:10: error: 'arith.addf' op operand #1 is not defined in an enclosing scope of "
        "this use (it does not dominate the use)"
    )
