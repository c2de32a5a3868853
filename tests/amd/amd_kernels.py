"""The kernels the AMD compile tests build: every example (specializations recorded from a run
of the example on the interpreter) and the kernels of the language and frontend tests (one or
more representative specializations each)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ["vector_add", "softmax", "layernorm", "matmul", "histogram"]


@attrs.frozen
class Spec:
    id: str
    kernel: object
    signature: dict
    constexprs: dict = attrs.field(factory=dict)
    divisibility: tuple = ()
    equal_to_1: tuple = ()


def example_specs() -> list[Spec]:
    """Each example's launches, recorded while it runs on the interpreter."""
    import tilec
    from tilec.runtime import compiler, launcher

    sys.path.insert(0, str(ROOT / "examples"))
    recorded: dict[tuple, Spec] = {}
    original = launcher.compile_cached

    def record(kernel, signature, constexprs, divisible, *args, **kwargs):
        equal_to_1 = kwargs.get("equal_to_1", args[-1] if len(args) >= 5 else ())
        key = (kernel.__name__, repr(sorted(signature.items())), repr(constexprs))
        recorded.setdefault(
            key,
            Spec(kernel.__name__, kernel, dict(signature), dict(constexprs), tuple(divisible),
                 tuple(equal_to_1)),
        )  # fmt: skip
        return original(kernel, signature, constexprs, divisible, *args, **kwargs)

    launcher.compile_cached = record
    try:
        tilec.set_backend("interp")
        for name in EXAMPLES:
            importlib.import_module(name).main()
    finally:
        launcher.compile_cached = original
        compiler.set_backend(None)
        sys.path.remove(str(ROOT / "examples"))
    return [attrs.evolve(s, id=f"example-{s.id}") for s in recorded.values()]


def language_specs() -> list[Spec]:
    sys.path.insert(0, str(ROOT / "tests" / "language"))
    sys.path.insert(0, str(ROOT / "tests" / "frontend"))
    import frontend_kernels as fk
    import language_kernels as lk

    import tilec.language as tl

    f32, f16, bf16, f64, i32 = "*fp32", "*fp16", "*bf16", "*fp64", "*i32"
    specs = []
    for op in ["add", "truediv", "mod", "minimum_nan", "lt", "where", "py_max"]:
        specs.append(Spec(f"binary-{op}", lk.binary_kernel, dict(x_ptr=f32, y_ptr=f32,
                          out_ptr=f32 if op != "lt" else "*i1"), dict(OP=op, N=256)))  # fmt: skip
    for op in ["floordiv", "and", "shl", "shr"]:
        specs.append(Spec(f"binary-{op}-i32", lk.binary_kernel, dict(x_ptr=i32, y_ptr=i32,
                          out_ptr=i32), dict(OP=op, N=256)))  # fmt: skip
    for op in ["exp", "log", "sqrt", "rsqrt", "sin", "cos", "sigmoid", "erf", "fma"]:
        for dtype in (f32, f16, bf16, f64):
            specs.append(Spec(f"unary-{op}-{dtype[1:]}", lk.unary_kernel,
                              dict(x_ptr=dtype, out_ptr=dtype), dict(OP=op, N=256)))  # fmt: skip
    specs.append(Spec("clamp", lk.clamp_kernel, dict(x_ptr=f32, out_ptr=f32, lo="fp32",
                      hi="fp32"), dict(PROPAGATE="all", N=256)))  # fmt: skip
    for target in ("bf16", "fp16", "i8", "u64"):
        specs.append(Spec(f"cast-{target}", lk.cast_kernel, dict(x_ptr=f32, out_ptr="*" + target),
                          dict(DTYPE=getattr(tl, {"bf16": "bfloat16", "fp16": "float16",
                               "i8": "int8", "u64": "uint64"}[target]), N=256)))  # fmt: skip
    for op in ["sum", "max", "argmax", "argmin", "xor_sum", "reduce_or", "reduce_max", "cumsum",
               "cumprod"]:  # fmt: skip
        dtype = i32 if op in ("xor_sum", "reduce_or") else f32
        specs.append(Spec(f"reduce-{op}", lk.reduce_kernel, dict(x_ptr=dtype, out_ptr=dtype),
                          dict(OP=op, M=16, N=64)))  # fmt: skip
    for op in ["trans", "reshape", "broadcast_to", "expand_dims", "zeros", "full"]:
        specs.append(Spec(f"shape-{op}", lk.shape_kernel, dict(x_ptr=f32, out_ptr=f32),
                          dict(OP=op, M=16, N=32)))  # fmt: skip
    specs.append(Spec("dot-f32", lk.dot_kernel, dict(a_ptr=f32, b_ptr=f32, c_ptr=f32),
                      dict(M=16, N=16, K=16, WITH_ACC=True)))  # fmt: skip
    specs.append(Spec("dot-f16", lk.dot_kernel, dict(a_ptr=f16, b_ptr=f16, c_ptr=f32),
                      dict(M=32, N=32, K=16, WITH_ACC=False)))  # fmt: skip
    for op, dtype in [("add", f32), ("max", i32), ("min", "*u32"), ("xchg", f32), ("cas", i32)]:
        specs.append(Spec(f"atomic-{op}", lk.atomic_kernel, dict(target_ptr=dtype,
                          value_ptr=dtype, old_ptr=dtype), dict(OP=op, N=128, SLOTS=8)))  # fmt: skip
    specs.append(Spec("grid", lk.grid_kernel, dict(out_ptr=i32, n="i32"), dict(BLOCK=64)))
    specs.append(Spec("masked-copy", lk.masked_copy_kernel, dict(x_ptr=f16, out_ptr=f16,
                      n="i32"), dict(OTHER=-1.5, BLOCK=128)))  # fmt: skip
    specs.append(Spec("print", lk.print_kernel, dict(x_ptr=f32), dict(N=64)))
    specs.append(Spec("frontend-add", fk.add_kernel, dict(x_ptr=f32, y_ptr=f32, output_ptr=f32,
                      n_elements="i32"), dict(BLOCK_SIZE=1024), ("x_ptr", "y_ptr", "output_ptr")))  # fmt: skip
    specs.append(Spec("frontend-softmax", fk.softmax_kernel, dict(out_ptr=f32, in_ptr=f32,
                      in_row_stride="i32", out_row_stride="i32", n_cols="i32"), dict(BLOCK=1024)))  # fmt: skip
    specs.append(Spec("frontend-matmul", fk.matmul_kernel, dict(a_ptr=f32, b_ptr=f32, c_ptr=f16,
                      M="i32", N="i32", K="i32"), dict(BLOCK_M=32, BLOCK_N=64, BLOCK_K=16)))  # fmt: skip
    specs.append(Spec("frontend-branchy", fk.branchy_kernel, dict(x_ptr=f32, out_ptr=f32,
                      n="i32", flag="i32"), dict(BLOCK=64, USE_SCALE=True)))  # fmt: skip
    specs.append(Spec("frontend-while", fk.while_kernel, dict(x_ptr=f32, n="i32")))
    specs.append(Spec("frontend-builtins", fk.builtins_kernel, dict(x_ptr=f32, u_ptr="*u32",
                      i_ptr=i32, n="i32"), dict(BLOCK=64)))  # fmt: skip
    return specs
