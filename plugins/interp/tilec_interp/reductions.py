"""`tile.reduce` and `tile.scan`.

A combiner that is a single `arith` op of its two arguments (`addf`, `addi`, `maxnumf`,
`maximumf`, `minnumf`, `minimumf`, `maxsi`, ..., `andi`) runs as a NumPy ufunc reduction or
accumulation in the element type (integer sums wrap; float sums use NumPy's pairwise order, scans
are sequential). Other combiners are evaluated generically: reductions as a tree over the axis
(pairs (0,1), (2,3), ..., an odd last element carried to the next level), scans sequentially,
vectorized over programs and other axes.

f16 and bf16 operands whose combiner is made only of float adds, maxima and minima (`tl.sum`,
`tl.cumsum`, a `tl.reduce`/`tl.associative_scan` of `a + b`) are accumulated in float32 and each
result rounded once to its type. A GPU rounds every step to f16, but in a tree (lanes, warps)
whose partial sums carry few roundings each; a sequential f16 scan carries one rounding per
element (a 1024-element f16 cumsum drifted 4% from the exact sums, so `check=True` failed on a
correct GPU result). Accumulating in float32 makes the reference the near-exact sum, which every
summation order of the GPU stays close to. Other f16/bf16 combiners (products, user functions)
round every step in the element type.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tilec.dialects import arith
from tilec.dialects.tile import ReduceOp, ScanOp
from tilec.ir.core import Operation
from tilec.ir.types import FloatType, element_type, f32
from tilec_interp import dtypes, ops
from tilec_interp.context import Context

# The combiner op's ufunc and how integer operands are viewed ("s" signed, "u" unsigned).
_UFUNCS: dict[type[Operation], tuple[np.ufunc, str]] = {
    arith.AddFOp: (np.add, ""),
    arith.MulFOp: (np.multiply, ""),
    arith.AddIOp: (np.add, ""),
    arith.MulIOp: (np.multiply, ""),
    arith.MaxNumFOp: (np.fmax, ""),
    arith.MinNumFOp: (np.fmin, ""),
    arith.MaximumFOp: (np.maximum, ""),
    arith.MinimumFOp: (np.minimum, ""),
    arith.MaxSIOp: (np.maximum, "s"),
    arith.MinSIOp: (np.minimum, "s"),
    arith.MaxUIOp: (np.maximum, "u"),
    arith.MinUIOp: (np.minimum, "u"),
    arith.AndIOp: (np.bitwise_and, ""),
    arith.OrIOp: (np.bitwise_or, ""),
    arith.XOrIOp: (np.bitwise_xor, ""),
}

_WIDENED: dict[type[Operation], Callable] = {
    op_class: ops.float_function(op_class)
    for op_class in (
        arith.AddFOp,
        arith.MaxNumFOp,
        arith.MinNumFOp,
        arith.MaximumFOp,
        arith.MinimumFOp,
    )
}
"""Combiner ops that f16/bf16 reductions and scans run on float32 values (see the module doc)."""


def _simple_combiner(op: ReduceOp | ScanOp):
    """The (ufunc, view dtype or None) of a one-op combiner, or None."""
    if len(op.srcs) != 1:
        return None
    block = op.combiner.block
    body = list(block.ops)
    if len(body) != 2:
        return None
    binary, ret = body
    found = _UFUNCS.get(type(binary))
    if found is None or list(ret.operands) != [binary.results[0]]:
        return None
    if set(binary.operands) != set(block.args) or len(binary.operands) != 2:
        return None
    ufunc, view = found
    t = op.srcs[0].type
    et = element_type(t)
    if dtypes.value_dtype(t) == np.bool_:
        return None
    if _is_narrow_float(et) and ufunc in (np.add, np.multiply):
        return None
    if view == "s":
        return ufunc, dtypes.signed_dtype(t)
    if view == "u":
        return ufunc, dtypes.unsigned_dtype(t)
    return ufunc, None


def _is_narrow_float(t) -> bool:
    t = element_type(t)
    return isinstance(t, FloatType) and t.name in ("f16", "bf16")


def _widened_combiner(op: ReduceOp | ScanOp) -> list[Callable] | None:
    """The float32 functions of a combiner to accumulate in float32 (see the module doc): one
    per op before the terminator, or None where the operands are not narrow floats or an op is
    not a float add, maximum or minimum."""
    types = [src.type for src in op.srcs]
    if not any(_is_narrow_float(t) for t in types):
        return None
    if not all(_is_narrow_float(t) or element_type(t) == f32 for t in types):
        return None
    block = op.combiner.block
    *body, ret = block.ops
    known = set(block.args)
    for inner in body:
        if type(inner) not in _WIDENED or not known.issuperset(inner.operands):
            return None
        known.update(inner.results)
    if not known.issuperset(ret.operands):
        return None
    return [_WIDENED[type(inner)] for inner in body]


def _widened_combine(op: ReduceOp | ScanOp, functions: list[Callable], lhs: list, rhs: list):
    """The combiner applied to float32 arrays, without rounding between its ops."""
    block = op.combiner.block
    values = dict(zip(block.args, (*lhs, *rhs), strict=True))
    *body, ret = block.ops
    with np.errstate(all="ignore"):
        for inner, function in zip(body, functions, strict=True):
            args = [values[v] for v in inner.operands]
            values[inner.results[0]] = np.asarray(function(*args), np.float32)
    return [values[v] for v in ret.operands]


def _widen(xs: list) -> list:
    return [np.asarray(x, np.float32) for x in xs]


def _narrow(op: ReduceOp | ScanOp, results: list) -> list:
    """float32 results rounded once to the element types of `op`'s operands."""
    narrowed = []
    for src, r in zip(op.srcs, results, strict=True):
        if dtypes.is_bf16(src.type):
            narrowed.append(dtypes.bf16_round(r))
        else:
            with np.errstate(all="ignore"):
                narrowed.append(np.asarray(r).astype(dtypes.value_dtype(src.type)))
    return narrowed


def _combine(interp, op, ctx, lhs: list, rhs: list) -> list:
    """Apply the combiner element-wise to equally shaped arrays."""
    shape = lhs[0].shape
    flat = [np.ascontiguousarray(x).reshape(-1) for x in (*lhs, *rhs)]
    sub = Context(flat[0].size, ctx.pids, ctx.grid, None)
    out = interp.run_block(op.combiner.block, {}, sub, flat)
    return [np.asarray(x).reshape(shape) for x in out]


def reduce_op(interp, op: ReduceOp, env: dict, ctx) -> list:
    """The results of `op` over a chunk of programs: one array per combined operand."""
    axis = op.axis.value + 1
    xs = [env[v] for v in op.srcs]
    simple = _simple_combiner(op)
    if simple is not None:
        ufunc, view = simple
        x = xs[0]
        if view is not None:
            return [ufunc.reduce(x.view(view), axis=axis).view(x.dtype)]
        return [ufunc.reduce(x, axis=axis, dtype=x.dtype)]
    widened = _widened_combiner(op)
    if widened is not None:
        xs = _widen(xs)
    xs = [np.moveaxis(x, axis, -1) for x in xs]
    while xs[0].shape[-1] > 1:
        length = xs[0].shape[-1]
        half = length // 2
        left = [x[..., 0 : 2 * half : 2] for x in xs]
        right = [x[..., 1 : 2 * half : 2] for x in xs]
        if widened is not None:
            merged = _widened_combine(op, widened, left, right)
        else:
            merged = _combine(interp, op, ctx, left, right)
        if length % 2:
            merged = [
                np.concatenate([m, x[..., -1:]], axis=-1) for m, x in zip(merged, xs, strict=True)
            ]
        xs = merged
    results = [x[..., 0] for x in xs]
    return _narrow(op, results) if widened is not None else results


def scan_op(interp, op: ScanOp, env: dict, ctx) -> list:
    """The inclusive scans of `op`'s operands over a chunk of programs."""
    axis = op.axis.value + 1
    reverse = bool(op.reverse.value) if op.reverse is not None else False
    xs = [env[v] for v in op.srcs]
    if reverse:
        xs = [np.flip(x, axis) for x in xs]
    simple = _simple_combiner(op)
    if simple is not None:
        ufunc, view = simple
        x = xs[0]
        if view is not None:
            results = [ufunc.accumulate(x.view(view), axis=axis).view(x.dtype)]
        else:
            results = [ufunc.accumulate(x, axis=axis, dtype=x.dtype)]
    else:
        widened = _widened_combiner(op)
        if widened is not None:
            xs = _widen(xs)
        moved = [np.moveaxis(x, axis, -1) for x in xs]
        outs = [np.empty_like(m) for m in moved]
        for o, m in zip(outs, moved, strict=True):
            o[..., 0] = m[..., 0]
        running = [m[..., 0] for m in moved]
        for i in range(1, moved[0].shape[-1]):
            column = [m[..., i] for m in moved]
            if widened is not None:
                running = _widened_combine(op, widened, running, column)
            else:
                running = _combine(interp, op, ctx, running, column)
            for o, r in zip(outs, running, strict=True):
                o[..., i] = r
        results = [np.moveaxis(o, -1, axis) for o in outs]
        if widened is not None:
            results = _narrow(op, results)
    if reverse:
        results = [np.flip(r, axis) for r in results]
    return results
