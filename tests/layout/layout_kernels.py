"""Kernels for the layout tests, as tir: the examples and a few small ones written here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import tilec
import tilec.language as tl
from tilec.dialects.arith import ConstantOp
from tilec.frontend import compile_to_tir
from tilec.ir.attributes import IntegerAttr
from tilec.ir.core import Operation
from tilec.pipeline import plugin_pass_manager

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# name -> (file, kernel, signature, constexprs)
EXAMPLE_KERNELS = {
    "vector_add": (
        "vector_add.py",
        "add_kernel",
        {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"},
        {"BLOCK_SIZE": 1024},
    ),
    "softmax": (
        "softmax.py",
        "softmax_kernel",
        {
            "output_ptr": "*fp32",
            "input_ptr": "*fp32",
            "input_row_stride": "i32",
            "output_row_stride": "i32",
            "n_cols": "i32",
        },
        {"BLOCK_SIZE": 1024},
    ),
    "layernorm": (
        "layernorm.py",
        "layer_norm_fwd",
        {
            "X": "*fp32",
            "Y": "*fp32",
            "W": "*fp32",
            "B": "*fp32",
            "Mean": "*fp32",
            "Rstd": "*fp32",
            "stride": "i32",
            "N": "i32",
            "eps": "fp32",
        },
        {"BLOCK_SIZE": 1024},
    ),
    "matmul": (
        "matmul.py",
        "matmul_kernel",
        {
            "a_ptr": "*fp16",
            "b_ptr": "*fp16",
            "c_ptr": "*fp32",
            "bias_ptr": "*fp16",
            **{n: "i32" for n in ("M", "N", "K", "stride_am", "stride_ak", "stride_bk")},
            **{n: "i32" for n in ("stride_bn", "stride_cm", "stride_cn")},
        },
        {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32},
    ),
    "histogram": (
        "histogram.py",
        "histogram_kernel",
        {"x_ptr": "*i32", "hist_ptr": "*i32", "n_elements": "i32"},
        {"BLOCK_SIZE": 1024},
    ),
}


def load_example(file: str, kernel: str):
    spec = importlib.util.spec_from_file_location(
        f"layout_example_{Path(file).stem}", EXAMPLES / file
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, kernel)


def to_tir(
    fn,
    signature: dict,
    constexprs: dict,
    divisible: tuple[str, ...] = (),
    equal_to_1: tuple[str, ...] = (),
) -> Operation:
    """The kernel's tir after the default tir pipeline, with `tile.divisibility = 16` on the
    `divisible` arguments and the `equal_to_1` ones compiled in (as the runtime specializes)."""
    module = compile_to_tir(fn, signature, constexprs)
    func = next(op for op in module.walk() if op.name == "func.func")
    runtime = [p for p in signature if p not in constexprs]
    for index, param in enumerate(runtime):
        if param in divisible and param not in equal_to_1:
            func.set_argument_attribute(index, "tile.divisibility", IntegerAttr(16))
        if param in equal_to_1:
            argument = func.regions[0].block.args[index]
            one = ConstantOp(IntegerAttr(1, argument.type))
            func.regions[0].block.insert_before(one, func.regions[0].block.first_op)
            argument.replace_all_uses_with(one.results[0])
    plugin_pass_manager().run(module, None, stages=("tir",))
    return module


def example_tir(
    name: str, *, divisible: bool = True, equal_to_1: tuple[str, ...] = ()
) -> Operation:
    file, kernel, signature, constexprs = EXAMPLE_KERNELS[name]
    fn = load_example(file, kernel)
    divisible_args = _divisible(signature) if divisible else ()
    return to_tir(fn, signature, constexprs, divisible_args, equal_to_1)


@tilec.jit
def softmax_2d(out_ptr, in_ptr, n_rows, n_cols, ROWS: tl.constexpr, COLS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, COLS)
    offsets = rows[:, None] * n_cols + cols[None, :]
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(in_ptr + offsets, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=1)[:, None]
    e = tl.exp(x)
    tl.store(out_ptr + offsets, e / tl.sum(e, axis=1)[:, None], mask=mask)


@tilec.jit
def outer_add(x_ptr, y_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M))
    y = tl.load(y_ptr + tl.arange(0, N))
    offsets = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(out_ptr + offsets, x[:, None] + y[None, :])


@tilec.jit
def row_sums(out_ptr, in_ptr, N: tl.constexpr, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, N, BLOCK):
        acc += tl.load(in_ptr + tl.program_id(0) * N + start + tl.arange(0, BLOCK))
    tl.store(out_ptr + tl.program_id(0), tl.sum(acc, axis=0))


@tilec.jit
def mixed(x_ptr, out_ptr, idx_ptr, n, flag, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    if flag > 0:
        y = x * 2.0
    else:
        y = tl.exp(x)
    i = 0
    while i < n:
        y = y + 1.0
        i += 1
    scanned = tl.cumsum(y, axis=1)
    best = tl.argmax(scanned, axis=1)
    tl.store(idx_ptr + rows, best)
    t = tl.trans(scanned)
    r = tl.reshape(t, (M * N,))
    tl.store(out_ptr + tl.arange(0, M * N), r)
    g = tl.load(x_ptr + best)
    tl.atomic_add(out_ptr + best, g)


SMALL_KERNELS = {
    "mixed": (
        mixed,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "idx_ptr": "*i32", "n": "i32", "flag": "i32"},
        {"M": 16, "N": 32},
    ),
    "softmax_2d": (
        softmax_2d,
        {"out_ptr": "*fp32", "in_ptr": "*fp32", "n_rows": "i32", "n_cols": "i32"},
        {"ROWS": 4, "COLS": 256},
    ),
    "outer_add": (
        outer_add,
        {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32"},
        {"M": 32, "N": 64},
    ),
    "row_sums": (row_sums, {"out_ptr": "*fp32", "in_ptr": "*fp32"}, {"N": 4096, "BLOCK": 512}),
}


def small_tir(name: str, *, divisible: bool = True) -> Operation:
    fn, signature, constexprs = SMALL_KERNELS[name]
    return to_tir(fn, signature, constexprs, _divisible(signature) if divisible else ())


def _divisible(signature: dict) -> tuple[str, ...]:
    """Every pointer and integer argument, as the runtime marks 16-byte aligned arrays and
    multiples of 16."""
    return tuple(p for p, t in signature.items() if t.startswith(("*", "i")))
