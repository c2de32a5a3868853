"""Round trip of every registered op: parse, verify, print, re-parse, with and without locations.

`SAMPLES` maps each op name of `OP_REGISTRY` to a module that holds a valid instance of it, written
in the printer's canonical form. `test_every_registered_op_has_a_sample` fails when an op is added
without a sample here, so every op's text form stays covered.
"""

from __future__ import annotations

import re

import pytest

import tilec.dialects  # noqa: F401  (fills OP_REGISTRY)
from tilec.ir import (
    OP_REGISTRY,
    ArrayAttr,
    Attribute,
    DenseAttr,
    DialectAttr,
    DictAttr,
    FileLineColLoc,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    Operation,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    i1,
    i32,
    parse_module,
    print_module,
    register_attribute,
    verify,
)
from tilec.ir.attributes import ATTRIBUTE_REGISTRY
from tilec.plugin.manager import load_ir_modules

load_ir_modules()  # the backends' layouts and ops (#gpu.mma, gpu.warp_group_dot) register as imported


def _func(body: str, params: str = "", results: str = "") -> str:
    """A module holding one function `@f`; `body` is its indented ops, one a line."""
    signature = f"func.func @f({params})" + (f" -> {results}" if results else "")
    return f"{signature} {{\n{body.rstrip()}\n}}\n"


def _int_binary(name: str) -> str:
    return _func(
        f"  %r = {name} %a, %b : tensor<4xi32>\n  tile.return %r",
        "%a: tensor<4xi32>, %b: tensor<4xi32>",
        "tensor<4xi32>",
    )


def _float_binary(name: str) -> str:
    return _func(f"  %r = {name} %a, %b : f32\n  tile.return %r", "%a: f32, %b: f32", "f32")


def _float_unary(name: str) -> str:
    return _func(
        f"  %r = {name} %a : tensor<2x8xf16>\n  tile.return %r",
        "%a: tensor<2x8xf16>",
        "tensor<2x8xf16>",
    )


def _cast(name: str, source: str, result: str) -> str:
    return _func(f"  %r = {name} %a : {result}\n  tile.return %r", f"%a: {source}", result)


INT_BINARY_OPS = [
    "arith.addi", "arith.subi", "arith.muli", "arith.divsi", "arith.divui", "arith.remsi",
    "arith.remui", "arith.andi", "arith.ori", "arith.xori", "arith.shli", "arith.shrsi",
    "arith.shrui", "arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui",
]  # fmt: skip
FLOAT_BINARY_OPS = [
    "arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.remf", "arith.maxnumf",
    "arith.minnumf", "arith.maximumf", "arith.minimumf",
]  # fmt: skip
FLOAT_UNARY_OPS = [
    "arith.negf", "math.exp", "math.exp2", "math.log", "math.log2", "math.sqrt", "math.rsqrt",
    "math.sin", "math.cos", "math.erf", "math.tanh", "math.floor", "math.ceil", "math.absf",
]  # fmt: skip

SAMPLES: dict[str, str] = {
    **{name: _int_binary(name) for name in INT_BINARY_OPS},
    **{name: _float_binary(name) for name in FLOAT_BINARY_OPS},
    **{name: _float_unary(name) for name in FLOAT_UNARY_OPS},
    "arith.extsi": _cast("arith.extsi", "tensor<8xi8>", "tensor<8xi32>"),
    "arith.extui": _cast("arith.extui", "u16", "u64"),
    "arith.trunci": _cast("arith.trunci", "i64", "i1"),
    "arith.extf": _cast("arith.extf", "bf16", "f32"),
    "arith.truncf": _cast("arith.truncf", "tensor<4xf64>", "tensor<4xf16>"),
    "arith.sitofp": _cast("arith.sitofp", "i32", "f64"),
    "arith.uitofp": _cast("arith.uitofp", "u8", "f16"),
    "arith.fptosi": _cast("arith.fptosi", "f32", "i8"),
    "arith.fptoui": _cast("arith.fptoui", "tensor<2x2xf32>", "tensor<2x2xu32>"),
    "arith.bitcast": _cast("arith.bitcast", "f32", "i32"),
    "arith.constant": _func(
        "  %c = arith.constant {value = -7 : i32} : i32\n"
        "  %h = arith.constant {value = -0.0 : f16} : f16\n"
        "  %n = arith.constant {value = nan : f32} : f32\n"
        "  %t = arith.constant {value = dense<1e-300> : tensor<4xf64>} : tensor<4xf64>\n"
        "  %m = arith.constant {value = dense<true> : tensor<2x2xi1>} : tensor<2x2xi1>\n"
        "  %w = arith.constant {value = 42} : i64\n"
        "  %b = arith.constant {value = false} : i1\n"
        "  tile.return"
    ),
    "arith.cmpi": _func(
        '  %r = arith.cmpi %a, %b {predicate = "ult"} : tensor<4xi1>\n  tile.return %r',
        "%a: tensor<4xu8>, %b: tensor<4xu8>",
        "tensor<4xi1>",
    ),
    "arith.cmpf": _func(
        '  %r = arith.cmpf %a, %b {predicate = "uno"} : i1\n  tile.return %r',
        "%a: f64, %b: f64",
        "i1",
    ),
    "arith.select": _func(
        "  %r = arith.select %c, %a, %b : tensor<4xf32>\n  tile.return %r",
        "%c: i1, %a: tensor<4xf32>, %b: tensor<4xf32>",
        "tensor<4xf32>",
    ),
    "math.absi": _func("  %r = math.absi %a : i16\n  tile.return %r", "%a: i16", "i16"),
    "math.fma": _func(
        "  %r = math.fma %a, %b, %c : f32\n  tile.return %r", "%a: f32, %b: f32, %c: f32", "f32"
    ),
    "builtin.module": (
        'module attributes {tile.num_warps = 4 : i32, tile.target = "sm_90"} {\n'
        "  func.func @f() {\n"
        "    tile.return\n"
        "  }\n"
        "}\n"
    ),
    "func.func": (
        "func.func @helper(%x: f32, %y: f32) -> (f32, f32) attributes {tile.noinline = unit} {\n"
        "  tile.return %y, %x\n"
        "}\n"
        "\n"
        'func.func @kernel(%p: !tile.ptr<f32> {tile.divisibility = 16, tile.name = "x"}, '
        "%n: i32 {tile.equal_to_1 = unit}) {\n"
        "  tile.return\n"
        "}\n"
    ),
    "scf.for": _func(
        "  %c0 = arith.constant {value = 0 : i32} : i32\n"
        "  %c8 = arith.constant {value = 8 : i32} : i32\n"
        "  %c1 = arith.constant {value = 1 : i32} : i32\n"
        "  %r, %s = scf.for %c0, %c8, %c1, %a, %b : f32, tensor<4xi32> {\n"
        "  ^bb0(%i: i32, %acc: f32, %v: tensor<4xi32>):\n"
        "    %n = arith.addf %acc, %acc : f32\n"
        "    scf.yield %n, %v\n"
        "  }\n"
        "  tile.return %r",
        "%a: f32, %b: tensor<4xi32>",
        "f32",
    ),
    "scf.if": _func(
        "  %r = scf.if %c : i32 {\n"
        "    scf.yield %a\n"
        "  } {\n"
        "    %n = arith.subi %a, %a : i32\n"
        "    scf.yield %n\n"
        "  }\n"
        "  scf.if %c {\n"
        "    tile.barrier\n"
        "    scf.yield\n"
        "  }\n"
        "  tile.return %r",
        "%c: i1, %a: i32",
        "i32",
    ),
    "scf.while": _func(
        "  %r = scf.while %a : i32 {\n"
        "  ^bb0(%x: i32):\n"
        '    %more = arith.cmpi %x, %n {predicate = "slt"} : i1\n'
        "    scf.condition %more, %x\n"
        "  } {\n"
        "  ^bb0(%y: i32):\n"
        "    %z = arith.addi %y, %y : i32\n"
        "    scf.yield %z\n"
        "  }\n"
        "  tile.return %r",
        "%a: i32, %n: i32",
        "i32",
    ),
    "tile.program_id": _func(
        "  %p = tile.program_id {axis = 2 : i32} : i32\n  tile.return %p", results="i32"
    ),
    "tile.num_programs": _func(
        "  %p = tile.num_programs {axis = 0 : i32} : i32\n  tile.return %p", results="i32"
    ),
    "tile.make_range": _func(
        "  %r = tile.make_range {start = 16 : i32, end = 48 : i32} : tensor<32xi32>\n"
        "  tile.return %r",
        results="tensor<32xi32>",
    ),
    "tile.splat": _func(
        "  %r = tile.splat %p : tensor<8x!tile.ptr<bf16>>\n  tile.return %r",
        "%p: !tile.ptr<bf16>",
        "tensor<8x!tile.ptr<bf16>>",
    ),
    "tile.broadcast": _func(
        "  %r = tile.broadcast %a : tensor<4x8xf32>\n  tile.return %r",
        "%a: tensor<1x8xf32>",
        "tensor<4x8xf32>",
    ),
    "tile.expand_dims": _func(
        "  %r = tile.expand_dims %a {axis = 1 : i32} : tensor<8x1xf32>\n  tile.return %r",
        "%a: tensor<8xf32>",
        "tensor<8x1xf32>",
    ),
    "tile.reshape": _func(
        "  %r = tile.reshape %a : tensor<2x4x2xi8>\n  tile.return %r",
        "%a: tensor<16xi8>",
        "tensor<2x4x2xi8>",
    ),
    "tile.trans": _func(
        "  %r = tile.trans %a {order = [1, 0]} : tensor<8x2xf16>\n  tile.return %r",
        "%a: tensor<2x8xf16>",
        "tensor<8x2xf16>",
    ),
    "tile.fp_to_fp": _func(
        '  %e = tile.fp_to_fp %a {rounding = "rtne"} : tensor<4xf8E4M3FN>\n'
        '  %f = tile.fp_to_fp %e {rounding = "rtne"} : tensor<4xf8E5M2>\n'
        '  %g = tile.fp_to_fp %f {rounding = "rtne"} : tensor<4xf8E4M3FNUZ>\n'
        '  %h = tile.fp_to_fp %g {rounding = "rtne"} : tensor<4xf8E5M2FNUZ>\n'
        '  %i = tile.fp_to_fp %h {rounding = "rtne"} : tensor<4xf8E4M3B15>\n'
        "  %r = tile.fp_to_fp %i : tensor<4xf32>\n  tile.return %r",
        "%a: tensor<4xf32>",
        "tensor<4xf32>",
    ),
    "tile.addptr": _func(
        "  %r = tile.addptr %p, %o : tensor<4x!tile.ptr<f32>>\n  tile.return %r",
        "%p: tensor<4x!tile.ptr<f32>>, %o: tensor<4xi64>",
        "tensor<4x!tile.ptr<f32>>",
    ),
    "tile.int_to_ptr": _func(
        "  %r = tile.int_to_ptr %a : !tile.ptr<i8, 3>\n  tile.return %r",
        "%a: i64",
        "!tile.ptr<i8, 3>",
    ),
    "tile.ptr_to_int": _func(
        "  %r = tile.ptr_to_int %p : tensor<2xi64>\n  tile.return %r",
        "%p: tensor<2x!tile.ptr<f32>>",
        "tensor<2xi64>",
    ),
    "tile.load": _func(
        "  %a = tile.load %s : f32\n"
        "  %b = tile.load %p, %m : tensor<4xf32>\n"
        '  %c = tile.load %p, %m, %o {cache = ".cg", eviction = "evict_last", volatile = unit} '
        ": tensor<4xf32>\n"
        "  tile.return",
        "%s: !tile.ptr<f32>, %p: tensor<4x!tile.ptr<f32>>, %m: tensor<4xi1>, %o: tensor<4xf32>",
    ),
    "tile.descriptor_load": _func(
        "  %a = tile.descriptor_load %p, %m, %o, %i, %j {base_param = 0, in_kernel = unit, "
        'padding = "zero", shape_params = [1, -8], stride_params = [2, -1]} : tensor<4x8xf16>\n'
        "  tile.return",
        "%x: !tile.ptr<f16>, %n: i32, %s: i64, %p: tensor<4x8x!tile.ptr<f16>>, "
        "%m: tensor<4x8xi1>, %o: tensor<4x8xf16>, %i: i64, %j: i64",
    ),
    "tile.descriptor_store": _func(
        '  tile.descriptor_store %p, %v, %m, %i, %j {base_param = 0, padding = "zero", '
        "shape_params = [1, 1], stride_params = [2, -1]}\n"
        "  tile.return",
        "%x: !tile.ptr<f16>, %n: i32, %s: i64, %p: tensor<4x8x!tile.ptr<f16>>, "
        "%v: tensor<4x8xf16>, %m: tensor<4x8xi1>, %i: i64, %j: i64",
    ),
    "tile.store": _func(
        "  tile.store %s, %v\n"
        '  tile.store %p, %w, %m {cache = ".wt", eviction = "evict_first"}\n'
        "  tile.return",
        "%s: !tile.ptr<i32>, %v: i32, %p: tensor<4x!tile.ptr<f32>>, %w: tensor<4xf32>, "
        "%m: tensor<4xi1>",
    ),
    "tile.atomic_rmw": _func(
        '  %old = tile.atomic_rmw %p, %v, %m {kind = "add", sem = "acq_rel", scope = "gpu"} '
        ": tensor<4xf32>\n"
        '  %x = tile.atomic_rmw %q, %w {kind = "xor", sem = "relaxed", scope = "cta"} : u32\n'
        "  tile.return",
        "%p: tensor<4x!tile.ptr<f32>>, %v: tensor<4xf32>, %m: tensor<4xi1>, %q: !tile.ptr<u32>, "
        "%w: u32",
    ),
    "tile.atomic_cas": _func(
        '  %old = tile.atomic_cas %p, %c, %v {sem = "acquire", scope = "sys"} : i32\n'
        "  tile.return %old",
        "%p: !tile.ptr<i32>, %c: i32, %v: i32",
        "i32",
    ),
    "tile.reduce": _func(
        "  %s = tile.reduce %y {axis = 0 : i32} : f32 {\n"
        "  ^bb0(%a: f32, %b: f32):\n"
        "    %t = arith.addf %a, %b : f32\n"
        "    tile.reduce.return %t\n"
        "  }\n"
        "  %mv, %mi = tile.reduce %x, %i {axis = 1 : i32} : tensor<4xf32>, tensor<4xi32> {\n"
        "  ^bb0(%va: f32, %ia: i32, %vb: f32, %ib: i32):\n"
        '    %gt = arith.cmpf %va, %vb {predicate = "ogt"} : i1\n'
        "    %v = arith.select %gt, %va, %vb : f32\n"
        "    %j = arith.select %gt, %ia, %ib : i32\n"
        "    tile.reduce.return %v, %j\n"
        "  }\n"
        "  tile.return %s",
        "%y: tensor<16xf32>, %x: tensor<4x8xf32>, %i: tensor<4x8xi32>",
        "f32",
    ),
    "tile.scan": _func(
        "  %s = tile.scan %x {axis = 0 : i32, reverse = 1 : i32} : tensor<16xi32> {\n"
        "  ^bb0(%a: i32, %b: i32):\n"
        "    %t = arith.addi %a, %b : i32\n"
        "    tile.scan.return %t\n"
        "  }\n"
        "  tile.return %s",
        "%x: tensor<16xi32>",
        "tensor<16xi32>",
    ),
    "tile.dot": _func(
        '  %d = tile.dot %a, %b, %c {input_precision = "tf32"} : tensor<16x32xf32>\n'
        "  tile.return %d",
        "%a: tensor<16x64xf16>, %b: tensor<64x32xf16>, %c: tensor<16x32xf32>",
        "tensor<16x32xf32>",
    ),
    "tile.call": (
        "func.func @g(%x: f32) -> f32 {\n"
        "  tile.return %x\n"
        "}\n"
        "\n"
        "func.func @f(%y: f32) -> f32 {\n"
        "  %r = tile.call %y {callee = @g} : f32\n"
        "  tile.call {callee = @h}\n"
        "  tile.return %r\n"
        "}\n"
        "\n"
        "func.func @h() {\n"
        "  tile.return\n"
        "}\n"
    ),
    "tile.return": _func("  tile.return %a, %b", "%a: i32, %b: f32", "(i32, f32)"),
    "tile.print": _func(
        '  tile.print %a, %b {prefix = "a \\"quoted\\" \\\\ line\\nnext: ", hex = unit}\n'
        '  tile.print {prefix = ""}\n'
        "  tile.return",
        "%a: i32, %b: tensor<4xf32>",
    ),
    "tile.barrier": _func("  tile.barrier\n  tile.return"),
    "tile.elementwise_inline_asm": _func(
        '  %r = tile.elementwise_inline_asm %a, %b {asm_string = "and.b32 $0, $1, $2;\\n\\tshl.b32'
        ' $0, $0, 3;", constraints = "=r,r,r", pack = 4 : i32} : tensor<8xu8>\n  tile.return %r',
        "%a: tensor<8xu8>, %b: tensor<8xu8>",
        "tensor<8xu8>",
    ),
    "tile.elementwise_inline_asm_effects": _func(
        '  %r, %s = tile.elementwise_inline_asm_effects {asm_string = "mov.u32 $0, %clock;\\n\\t'
        'mov.u32 $1, %clock_hi;", constraints = "=r,=r", pack = 1 : i32} : u32, u32\n'
        "  tile.return %r",
        "",
        "u32",
    ),
    "tile.assert": _func(
        '  tile.assert %c {message = "index out of bounds"}\n  tile.return', "%c: tensor<8xi1>"
    ),
    "gpu.convert_layout": (
        "#blocked = #gpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], "
        "warpsPerCTA = [4], order = [0]}>\n"
        "#blocked1 = #gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], "
        "warpsPerCTA = [4], order = [0]}>\n"
        + _func(
            "  %r = gpu.convert_layout %a : tensor<512xf32, #blocked1>\n  tile.return",
            "%a: tensor<512xf32, #blocked>",
        )
    ),
}
SAMPLES["gpu.local_alloc"] = (
    "#blocked = #gpu.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], "
    "warpsPerCTA = [4, 1], order = [1, 0]}>\n"
    "#mma = #gpu.mma<{version = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>\n"
    "#dot_op = #gpu.dot_op<{opIdx = 0, parent = #mma, kWidth = 2}>\n"
    + _func(
        "  %buf = gpu.local_alloc : !gpu.memdesc<3x64x32xf16>\n"
        "  gpu.async_copy_global_to_local %p, %buf, %s, %m\n"
        "  gpu.async_copy_global_to_local %p, %buf, %s\n"
        "  gpu.async_commit_group\n"
        "  gpu.async_wait {num = 1 : i32}\n"
        "  %a = gpu.local_load %buf, %s : tensor<64x32xf16, #dot_op>\n"
        "  gpu.local_store %t, %buf, %s\n"
        "  gpu.local_dealloc %buf\n"
        "  tile.return",
        "%p: tensor<64x32x!tile.ptr<f16>, #blocked>, %m: tensor<64x32xi1, #blocked>, %s: i32, "
        "%t: tensor<64x32xf16, #blocked>",
    )
)
for _name in ("local_dealloc", "async_copy_global_to_local", "async_commit_group",
              "async_wait", "local_load", "local_store"):  # fmt: skip
    SAMPLES[f"gpu.{_name}"] = SAMPLES["gpu.local_alloc"]
SAMPLES["gpu.warp_group_dot"] = (
    "#mma = #gpu.mma<{version = 3, warpsPerCTA = [4, 1], instrShape = [16, 128, 16]}>\n"
    "#shared = #gpu.nvmma_shared<{swizzle = 128, transposed = false}>\n"
    "#shared1 = #gpu.nvmma_shared<{swizzle = 64, transposed = false}>\n"
    + _func(
        "  %buf = gpu.local_alloc : !gpu.memdesc<3x64x64xf16, #shared>\n"
        "  %a = gpu.local_load %buf, %s : tensor<64x64xf16, #shared>\n"
        "  %b = gpu.convert_layout %bt : tensor<64x128xf16, #shared1>\n"
        "  gpu.fence_async_shared\n"
        "  %d = gpu.warp_group_dot %a, %b, %c {pendings = 1 : i32} : tensor<64x128xf32, #mma>\n"
        "  %d1 = gpu.warp_group_dot_wait %d {pendings = 0 : i32} : tensor<64x128xf32, #mma>\n"
        "  gpu.local_dealloc %buf\n"
        "  tile.return",
        "%s: i32, %bt: tensor<64x128xf16, #mma>, %c: tensor<64x128xf32, #mma>",
    )
)
for _name in ("warp_group_dot_wait", "fence_async_shared"):
    SAMPLES[f"gpu.{_name}"] = SAMPLES["gpu.warp_group_dot"]
SAMPLES["gpu.init_barriers"] = (
    "#shared = #gpu.nvmma_shared<{swizzle = 128, transposed = false}>\n"
    + _func(
        "  %buf = gpu.local_alloc : !gpu.memdesc<3x64x64xf16, #shared>\n"
        "  %bars = gpu.init_barriers : !gpu.memdesc<3x1xi64>\n"
        "  gpu.barrier_expect %bars, %s, %p {nbytes = 8192 : i32}\n"
        "  gpu.async_bulk_copy_global_to_local %buf, %s, %bars, %p, %i, %j {base_param = 0, "
        'shape_params = [1, 2], stride_params = [3, -1], padding = "zero"}\n'
        "  gpu.wait_barrier %bars, %s, %phase\n"
        "  gpu.inval_barriers %bars\n"
        "  gpu.local_dealloc %buf\n"
        "  tile.return",
        "%s: i32, %p: i1, %i: i64, %j: i64, %phase: i32",
    )
)
for _name in ("barrier_expect", "async_bulk_copy_global_to_local", "wait_barrier",
              "inval_barriers"):  # fmt: skip
    SAMPLES[f"gpu.{_name}"] = SAMPLES["gpu.init_barriers"]
SAMPLES["gpu.warp_specialize"] = _func(
    "  %bars = gpu.init_barriers : !gpu.memdesc<3x1xi64>\n"
    "  gpu.warp_specialize {producer_warps = 4} {\n"
    "    gpu.arrive_barrier %bars, %s, %p\n"
    "    gpu.warp_return\n"
    "  }\n"
    "  gpu.inval_barriers %bars\n"
    "  tile.return",
    "%s: i32, %p: i1",
)
for _name in ("arrive_barrier", "warp_return"):
    SAMPLES[f"gpu.{_name}"] = SAMPLES["gpu.warp_specialize"]
SAMPLES["scf.yield"] = SAMPLES["scf.for"]
SAMPLES["scf.condition"] = SAMPLES["scf.while"]
SAMPLES["tile.reduce.return"] = SAMPLES["tile.reduce"]
SAMPLES["tile.scan.return"] = SAMPLES["tile.scan"]


def _op_names(module: Operation) -> set[str]:
    return {op.name for op in module.walk()}


def test_every_registered_op_has_a_sample() -> None:
    missing = sorted(set(OP_REGISTRY) - set(SAMPLES))
    assert missing == [], f"ops without a round-trip sample in SAMPLES: {missing}"
    stale = sorted(set(SAMPLES) - set(OP_REGISTRY))
    assert stale == [], f"samples for ops that are not registered: {stale}"


@pytest.mark.parametrize("op_name", sorted(SAMPLES))
def test_sample_round_trips(op_name: str) -> None:
    text = SAMPLES[op_name]
    module = parse_module(text, "sample.tir")
    assert op_name in _op_names(module)
    verify(module)
    printed = print_module(module)
    assert printed == text
    reparsed = parse_module(printed, "again.tir")
    verify(reparsed)
    assert print_module(reparsed) == text


@pytest.mark.parametrize("op_name", sorted(SAMPLES))
def test_sample_round_trips_with_locations(op_name: str) -> None:
    text = SAMPLES[op_name]
    module = parse_module(text, "sample.tir")
    with_locations = print_module(module, locations=True)
    # Every op except the module itself prints where it was parsed: the line and column of its name.
    lines = text.splitlines()
    for match in re.finditer(r'loc\("sample\.tir":(\d+):(\d+)\)', with_locations):
        line, col = int(match.group(1)), int(match.group(2))
        assert re.match(r"[a-z]+\.[a-z_.]+", lines[line - 1][col - 1 :]), (line, col)
    n_ops = sum(1 for op in module.walk() if op.name != "builtin.module")
    assert with_locations.count('loc("sample.tir":') == n_ops
    reparsed = parse_module(with_locations, "other.tir")
    verify(reparsed)
    assert print_module(reparsed, locations=True) == with_locations
    assert print_module(reparsed) == text


def test_location_syntax_forms_round_trip() -> None:
    text = (
        "func.func @f(%a: i32) -> i32 {\n"
        '  %b = arith.addi %a, %a : i32 loc("dir with space/k\\"q\\".py":12:5)\n'
        "  %c = arith.muli %b, %b : i32 loc(unknown)\n"
        '  tile.return %c loc("k.py":0:0)\n'
        '} loc("k.py":1:1)\n'
    )
    module = parse_module(text, "ignored.tir")
    ops = {op.name: op for op in module.walk()}
    assert ops["arith.addi"].location == FileLineColLoc('dir with space/k"q".py', 12, 5)
    assert str(ops["arith.muli"].location) == "loc(unknown)"
    assert ops["func.func"].location == FileLineColLoc("k.py", 1, 1)
    assert print_module(module, locations=True) == text
    assert "loc(" not in print_module(module)


# Attributes ------------------------------------------------------------------------------------


ATTRIBUTE_TEXTS = [
    "16",
    "-3 : i8",
    "255 : u8",
    "true",
    "false",
    "1.5 : f32",
    "-0.0 : f64",
    "nan : f16",
    "inf : bf16",
    "-inf : f32",
    "1e-300 : f64",
    "1e+16 : f64",
    "5e-324 : f64",
    '""',
    '"tab\\there"',
    '"quote \\" backslash \\\\ newline \\n end"',
    "unit",
    "@kernel",
    "[]",
    "[1, [2, 3], {}]",
    '{a = 1, "key with space" = 2, "k\\"q" = unit, b.c$d = "x"}',
    "dense<0> : tensor<4xi32>",
    "dense<-2.5> : tensor<2x2xbf16>",
    "dense<nan> : tensor<8xf32>",
    "dense<true> : tensor<4xi1>",
    "dense<false> : tensor<1x2xi1>",
    "i32",
    "tensor<4x8x!tile.ptr<f16, 3>>",
    "(i32, tensor<4xf32>) -> (f32)",
    "() -> ()",
    "(i32) -> ((f32) -> (i1), i64)",
]


@pytest.mark.parametrize("attr_text", ATTRIBUTE_TEXTS)
def test_attribute_round_trips(attr_text: str) -> None:
    text = f"func.func @f() attributes {{x = {attr_text}}} {{\n  tile.return\n}}\n"
    module = parse_module(text)
    assert print_module(module) == text
    func = next(iter(module.body.ops))
    assert parse_module(print_module(module)).body.first_op.attributes == func.attributes


def test_unit_attributes_in_dictionaries_print_as_parseable_text() -> None:
    from tilec.ir.attributes import DictAttr, UnitAttr

    attr = DictAttr((("flag", UnitAttr()), ("a b", UnitAttr())))
    assert str(attr) == '{flag = unit, "a b" = unit}'
    text = f"func.func @f() attributes {{x = {attr}}} {{\n  tile.return\n}}\n"
    assert print_module(parse_module(text)) == text


def test_parsed_attribute_values() -> None:
    text = (
        'func.func @f() attributes {i = 7, t = true, s = "a\\"b\\\\c\\nd", '
        "fl = 2.0 : f16, ar = [1, 2 : i32], d = {k = unit}, "
        "z = dense<-0.0> : tensor<2xf32>, m = dense<true> : tensor<2xi1>} {\n"
        "  tile.return\n"
        "}\n"
    )
    attributes = next(iter(parse_module(text).body.ops)).attributes
    assert attributes["i"] == IntegerAttr(7)
    assert attributes["t"] == IntegerAttr(1, i1)
    assert attributes["s"] == StringAttr('a"b\\c\nd')
    assert attributes["fl"].value == 2.0 and str(attributes["fl"].type) == "f16"
    assert attributes["ar"] == ArrayAttr((IntegerAttr(1), IntegerAttr(2, i32)))
    assert attributes["d"] == DictAttr((("k", UnitAttr()),))
    zero = attributes["z"]
    assert isinstance(zero, DenseAttr) and str(zero.value) == "-0.0 : f32"
    assert attributes["m"] == DenseAttr(IntegerAttr(1, i1), TensorType((2,), i1))


def test_float_attribute_keeps_value_and_sign() -> None:
    for value in (0.1, -0.0, 1e-300, 5e-324, 1.7976931348623157e308, 123456789.0, 3.0):
        text = f"func.func @f() attributes {{x = {FloatAttr(value, f32)}}} {{\n  tile.return\n}}\n"
        parsed = next(iter(parse_module(text).body.ops)).attributes["x"]
        assert parsed == FloatAttr(value, f32)
        assert repr(parsed.value) == repr(value)


# Names -----------------------------------------------------------------------------------------


def test_numbered_and_named_values_round_trip() -> None:
    text = _func(
        "  %0 = arith.addi %a, %a : i32\n"
        "  %x = arith.addi %0, %0 : i32\n"
        "  %1 = arith.addi %x, %x : i32\n"
        "  tile.return %1",
        "%a: i32",
        "i32",
    )
    assert print_module(parse_module(text)) == text


def test_renumbers_and_deduplicates_names() -> None:
    text = _func(
        "  %7 = arith.addi %a, %a : i32\n"
        "  %b = arith.addi %7, %7 : i32\n"
        "  %3 = arith.addi %b, %b : i32\n"
        "  tile.return %3",
        "%a: i32",
        "i32",
    )
    module = parse_module(text)
    assert print_module(module) == text.replace("%7", "%0").replace("%3", "%1")
    ops = list(next(iter(module.body.ops)).entry_block.ops)
    ops[0].result.name_hint = "b"
    ops[2].result.name_hint = "9 weird name!"
    printed = print_module(module)
    assert "  %b = arith.addi %a, %a : i32\n  %b_1 = arith.addi %b, %b : i32\n" in printed
    assert "  %v9_weird_name_ = arith.addi %b_1, %b_1 : i32\n" in printed
    assert print_module(parse_module(printed)) == printed


# Dialect attributes as tensor encodings get aliases --------------------------------------------


class _PairAttr(DialectAttr):
    """A test-only dialect attribute: `#test_ir.pair<{a = 1, b = 2}>`."""

    name = "test_ir.pair"
    alias_prefix = "pair"

    def __init__(self, a: int, b: int):
        self.a, self.b = a, b

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _PairAttr) and (self.a, self.b) == (other.a, other.b)

    def __hash__(self) -> int:
        return hash((self.a, self.b))

    def parameters(self) -> dict[str, Attribute]:
        return {"a": IntegerAttr(self.a), "b": IntegerAttr(self.b)}

    @classmethod
    def from_parameters(cls, params: dict[str, Attribute]) -> _PairAttr:
        unknown = set(params) - {"a", "b"}
        if unknown:
            raise ValueError(f"unknown parameter '{sorted(unknown)[0]}'")
        return cls(params["a"].value, params["b"].value)  # type: ignore[attr-defined]


if _PairAttr.name not in ATTRIBUTE_REGISTRY:
    register_attribute(_PairAttr)


def test_tensor_encodings_print_as_aliases() -> None:
    text = (
        "#pair = #test_ir.pair<{a = 1, b = 2}>\n"
        "#pair1 = #test_ir.pair<{a = 3, b = 4}>\n"
        "func.func @f(%x: tensor<4xf32, #pair>, %w: tensor<4xf32, #pair1>) -> tensor<4xf32, #pair1> {\n"
        "  %y = arith.negf %x : tensor<4xf32, #pair>\n"
        "  %z = arith.negf %w : tensor<4xf32, #pair1>\n"
        "  tile.return %z\n"
        "}\n"
    )
    module = parse_module(text)
    verify(module)
    assert print_module(module) == text
    param = next(iter(module.body.ops)).entry_block.args[0]
    assert param.type.encoding == _PairAttr(1, 2)
    body = text.split("\n", 2)[2]
    inline = body.replace("#pair1", "#test_ir.pair<{a = 3, b = 4}>").replace(
        "#pair>", "#test_ir.pair<{a = 1, b = 2}>>"
    )
    assert "#pair" not in inline
    assert print_module(parse_module(inline)) == text


def test_module_container() -> None:
    module = parse_module(SAMPLES["builtin.module"])
    assert isinstance(module, ModuleOp)
    assert module.attributes["tile.target"] == StringAttr("sm_90")
    assert [f.name_str for f in module.functions] == ["f"]
    assert print_module(ModuleOp()) == ""


def test_op_without_operands_is_not_fed_the_next_ops_results() -> None:
    text = _func(
        "  tile.barrier\n"
        "  %x = tile.program_id {axis = 0 : i32} : i32\n"
        "  tile.barrier\n"
        "  %y, %z = scf.if %c : i32, i32 {\n"
        "    scf.yield %x, %x\n"
        "  } {\n"
        "    scf.yield %x, %x\n"
        "  }\n"
        "  tile.return",
        "%c: i1",
    )
    module = parse_module(text)
    barrier = module.body.first_op.entry_block.first_op
    assert barrier.name == "tile.barrier" and barrier.operands == ()
    verify(module)
    assert print_module(module) == text
