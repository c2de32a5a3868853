"""`math.*` -> LLVM IR, element by element.

Each function goes to the target first (`TargetInfo.math`: an instruction or intrinsic, e.g.
NVPTX's `ex2.approx.f32`); where the target has none, f16 and bf16 are computed in f32 and
rounded back, `sqrt`/`floor`/`ceil`/`absf`/`fma` become LLVM intrinsics, `rsqrt` is `1 / sqrt`,
and the transcendental functions take the generic expansions of `math_expansions` (f64 ones
about one ulp accurate, since NVPTX has no f64 `exp`, `log`, `sin`, ... instructions).
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from tilec.dialects import math
from tilec.ir.core import Operation
from tilec.ir.types import element_type
from tilec.lowering.context import (
    BF16,
    F16,
    F32,
    F64,
    I1,
    LoweringContext,
    LoweringError,
    _where,
    call_intrinsic,
    lowers,
)
from tilec.lowering.elementwise import map_registers
from tilec.lowering.math_expansions import F64_FUNCTIONS, erf_f32, tanh_f32
from tilec.lowering.target import TargetInfo

MATH_FUNCTIONS: dict[type[Operation], str] = {
    math.ExpOp: "exp",
    math.Exp2Op: "exp2",
    math.LogOp: "log",
    math.Log2Op: "log2",
    math.SqrtOp: "sqrt",
    math.RsqrtOp: "rsqrt",
    math.SinOp: "sin",
    math.CosOp: "cos",
    math.ErfOp: "erf",
    math.TanhOp: "tanh",
    math.FloorOp: "floor",
    math.CeilOp: "ceil",
    math.AbsFOp: "absf",
    math.FmaOp: "fma",
}
"""Per float `math` op, the function name `TargetInfo.math` and the generic expansions take."""
FLOAT_FUNCTIONS = tuple(MATH_FUNCTIONS.values())
LLVM_INTRINSICS = {"sqrt": "sqrt", "floor": "floor", "ceil": "ceil", "absf": "fabs", "fma": "fma"}
FLOAT_TYPES = {"f16": F16, "bf16": BF16, "f32": F32, "f64": F64}
"""The LLVM type of each float `dtype` that `TargetInfo.math` is asked for."""
NATIVE_INTRINSICS = {
    "fma": "llvm.fma",
    "floor": "llvm.floor",
    "ceil": "llvm.ceil",
    "absf": "llvm.fabs",
}
"""The math functions that are one LLVM intrinsic at any float width (f16 and bf16 included)."""


def native_intrinsic(
    builder: ir.IRBuilder, name: str, args: Sequence[ir.Value], dtype: str
) -> ir.Value | None:
    """LLVM's intrinsic for `name` at `dtype` itself (`llvm.fma.f16`, ...) where `name` is one
    of `NATIVE_INTRINSICS`, else None: what a `TargetInfo.math` returns for the types whose
    instructions its target has (without it, the core computes f16 and bf16 in f32)."""
    intrinsic = NATIVE_INTRINSICS.get(name)
    if intrinsic is None or dtype not in FLOAT_TYPES:
        return None
    return call_intrinsic(builder, f"{intrinsic}.{dtype}", FLOAT_TYPES[dtype], args)


def math_value(
    builder: ir.IRBuilder, target: TargetInfo, name: str, args: Sequence[ir.Value], dtype: str
) -> ir.Value:
    """`name` (a `math.*` function without the prefix) of scalar `args` of float `dtype`."""
    value = target.math(builder, name, args, dtype)
    if value is not None:
        return value
    if dtype in ("f16", "bf16"):
        wide = [builder.fpext(a, F32) for a in args]
        return builder.fptrunc(math_value(builder, target, name, wide, "f32"), args[0].type)
    return _generic(builder, target, name, args, dtype)


def _generic(
    b: ir.IRBuilder, target: TargetInfo, name: str, args: Sequence[ir.Value], dtype: str
) -> ir.Value:
    ty = F64 if dtype == "f64" else F32
    if name in LLVM_INTRINSICS:
        return call_intrinsic(b, f"llvm.{LLVM_INTRINSICS[name]}.{dtype}", ty, args)
    (x,) = args
    if name == "rsqrt":
        return b.fdiv(ir.Constant(ty, 1.0), math_value(b, target, "sqrt", [x], dtype))
    if dtype == "f64":
        return F64_FUNCTIONS[name](b, x)

    def exp(v: ir.Value) -> ir.Value:
        return math_value(b, target, "exp", [v], "f32")

    if name == "erf":
        return erf_f32(b, x, exp)
    if name == "tanh":
        return tanh_f32(b, x, exp)
    return b.fptrunc(F64_FUNCTIONS[name](b, b.fpext(x, F64)), F32)


@lowers(*MATH_FUNCTIONS)
def _math(ctx: LoweringContext, op: Operation) -> None:
    name = MATH_FUNCTIONS[type(op)]
    dtype = str(element_type(op.results[0].type))
    if dtype not in ("f16", "bf16", "f32", "f64"):
        raise LoweringError(f"{_where(op)}'{op.name}' needs float operands, got {dtype}")
    fast_root = isinstance(op, math.SqrtOp) and op.ieee is None and dtype == "f32"

    def emit(*args: ir.Value) -> ir.Value:
        if fast_root:  # Triton's tl.sqrt; tl.sqrt_rn is `ieee`, f16 and bf16 round correctly
            root = ctx.target.math(ctx.builder, "fast_sqrt", args, dtype)
            if root is not None:
                return root
        return math_value(ctx.builder, ctx.target, name, args, dtype)

    map_registers(ctx, op, emit)


@lowers(math.AbsIOp)
def _absi(ctx: LoweringContext, op: math.AbsIOp) -> None:
    b = ctx.builder

    def emit(x: ir.Value) -> ir.Value:
        # `llvm.abs` with is_int_min_poison = false: the minimum wraps to itself, as in LLVM.
        return call_intrinsic(b, f"llvm.abs.i{x.type.width}", x.type, [x, ir.Constant(I1, 0)])

    map_registers(ctx, op, emit)


__all__ = ["FLOAT_FUNCTIONS", "MATH_FUNCTIONS", "math_value"]
