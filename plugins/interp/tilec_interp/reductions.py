"""`tile.reduce` and `tile.scan`.

A combiner that is a single `arith` op of its two arguments (`addf`, `addi`, `maxnumf`,
`maximumf`, `minnumf`, `minimumf`, `maxsi`, ..., `andi`) runs as a NumPy ufunc reduction or
accumulation in the element type (integer sums wrap; float sums use NumPy's pairwise order, scans
are sequential). Other combiners, and f16/bf16 sums and products (which must round every step),
are evaluated generically: reductions as a tree over the axis (pairs (0,1), (2,3), ..., an odd last
element carried to the next level), scans sequentially, vectorized over programs and other axes.
"""

from __future__ import annotations

import numpy as np

from tilec.dialects import arith
from tilec.dialects.tile import ReduceOp, ScanOp
from tilec.ir.core import Operation
from tilec.ir.types import FloatType, element_type
from tilec_interp import dtypes
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
    if isinstance(et, FloatType) and et.name in ("f16", "bf16") and ufunc in (np.add, np.multiply):
        return None
    if view == "s":
        return ufunc, dtypes.signed_dtype(t)
    if view == "u":
        return ufunc, dtypes.unsigned_dtype(t)
    return ufunc, None


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
    xs = [np.moveaxis(x, axis, -1) for x in xs]
    while xs[0].shape[-1] > 1:
        length = xs[0].shape[-1]
        half = length // 2
        left = [x[..., 0 : 2 * half : 2] for x in xs]
        right = [x[..., 1 : 2 * half : 2] for x in xs]
        merged = _combine(interp, op, ctx, left, right)
        if length % 2:
            merged = [
                np.concatenate([m, x[..., -1:]], axis=-1) for m, x in zip(merged, xs, strict=True)
            ]
        xs = merged
    return [x[..., 0] for x in xs]


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
        moved = [np.moveaxis(x, axis, -1) for x in xs]
        outs = [np.empty_like(m) for m in moved]
        for o, m in zip(outs, moved, strict=True):
            o[..., 0] = m[..., 0]
        running = [m[..., 0] for m in moved]
        for i in range(1, moved[0].shape[-1]):
            running = _combine(interp, op, ctx, running, [m[..., i] for m in moved])
            for o, r in zip(outs, running, strict=True):
                o[..., i] = r
        results = [np.moveaxis(o, -1, axis) for o in outs]
    if reverse:
        results = [np.flip(r, axis) for r in results]
    return results
