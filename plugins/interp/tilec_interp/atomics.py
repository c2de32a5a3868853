"""`tile.atomic_rmw` and `tile.atomic_cas`: applied in program-major, then element order.

Each access returns the value memory held before it. Accesses are grouped by address; the r-th
access to an address happens in round r. Exact accumulating kinds (integer ops, float add
except bf16, float max/min) with many collisions on few addresses run as one ufunc `accumulate`
per address.
Float max/min are Triton 3.6's, on the bits (`_float_min_max`; `tilec.lowering.atomics`).
"""

from __future__ import annotations

import numpy as np

from tilec.dialects.tile import AtomicCASOp, AtomicRMWOp
from tilec.ir.types import element_type
from tilec_interp import dtypes
from tilec_interp.context import Context
from tilec_interp.ops import is_float_type


def atomic_rmw(interp, op: AtomicRMWOp, env: dict, ctx: Context) -> list:
    mask = None if op.mask is None else env[op.mask]
    return _atomic(interp, op, env, ctx, mask, None, op.kind.value)


def atomic_cas(interp, op: AtomicCASOp, env: dict, ctx: Context) -> list:
    return _atomic(interp, op, env, ctx, None, env[op.compare], "cas")


def _atomic(interp, op, env, ctx, mask, compare, kind):
    ptr = env[op.ptr]
    pointee = element_type(op.ptr.type).pointee
    sel = ctx.combine(mask, ptr.shape[1:])
    flat_sel = None if sel is None else np.ascontiguousarray(sel).reshape(-1)
    parts, dtype, n, _ = interp.resolve(op, ctx, ptr, flat_sel, pointee)
    value = np.broadcast_to(env[op.value], ptr.shape).reshape(-1)
    if compare is not None:
        compare = np.broadcast_to(compare, ptr.shape).reshape(-1)
    vtype = op.value.type
    old_all = np.zeros(n, dtypes.value_dtype(vtype))
    for buf, idx, pos in parts:
        positions = np.arange(n) if pos is None else pos
        memory = interp.writable(op, buf, dtype)
        # Apply in order: the r-th access to an address happens in round r.
        order = np.argsort(idx, kind="stable")
        sorted_idx = idx[order]
        starts = np.r_[True, sorted_idx[1:] != sorted_idx[:-1]]
        group_start = np.maximum.accumulate(np.where(starts, np.arange(idx.size), 0))
        rank = np.empty(idx.size, np.int64)
        rank[order] = np.arange(idx.size) - group_start
        rounds = int(rank.max()) + 1 if idx.size else 0
        groups = np.flatnonzero(starts)
        ufunc = _atomic_ufunc(kind, vtype)
        if ufunc is not None and rounds > 4 and rounds > groups.size:
            # Few addresses, many collisions: one sequential accumulate per address.
            func, view = ufunc
            ends = np.r_[groups[1:], idx.size]
            for s, e in zip(groups, ends, strict=True):
                where_val = positions[order[s:e]]
                where_mem = int(sorted_idx[s])
                seq = np.concatenate([memory[where_mem : where_mem + 1], value[where_val]])
                seq = _accumulate(func, view, seq)
                old_all[where_val] = seq[:-1]
                memory[where_mem] = seq[-1]
            continue
        for r in range(rounds):
            which = np.flatnonzero(rank == r)
            where_mem = idx[which]
            where_val = positions[which]
            old = dtypes.from_storage(memory[where_mem], pointee)
            new = _atomic_combine(kind, old, value[where_val], vtype, compare, where_val)
            memory[where_mem] = dtypes.to_storage(new, pointee)
            old_all[where_val] = old
    return [old_all.reshape(ptr.shape)]


ORDER = "order"
"""`_atomic_ufunc`'s view for float max/min: Triton's order of floats (`_order_keys`)."""


def _accumulate(func, view, seq):
    """`func.accumulate` of `seq` viewed as `view` (or in Triton's order of floats)."""
    if isinstance(view, str):
        return _from_order_keys(func.accumulate(_order_keys(seq)), seq.dtype)
    return func.accumulate(seq.view(view), dtype=view).view(seq.dtype)


def _order_keys(values):
    """Signed integers in the order of Triton's float max/min (`_float_min_max`): the bits where
    the sign bit is clear, the one's complement of the magnitude's bits where it is set."""
    bits = values.view(np.dtype(f"i{values.itemsize}"))
    return np.where(bits >= 0, bits, ~(bits & np.iinfo(bits.dtype).max))


def _from_order_keys(keys, dtype):
    bits = np.where(keys >= 0, keys, ~keys | np.iinfo(keys.dtype).min).astype(keys.dtype)
    return bits.view(dtype)


def _atomic_ufunc(kind, vtype):
    """(ufunc, dtype to view values as) for atomics that accumulate exactly, else None."""
    if dtypes.is_bf16(vtype) or dtypes.value_dtype(vtype) == np.bool_:
        return None
    dtype = dtypes.value_dtype(vtype)
    if is_float_type(vtype):
        return {"add": (np.add, dtype), "max": (np.maximum, ORDER), "min": (np.minimum, ORDER)}.get(
            kind
        )
    signed, unsigned = dtypes.signed_dtype(vtype), dtypes.unsigned_dtype(vtype)
    return {
        "add": (np.add, dtype),
        "max": (np.maximum, signed),
        "min": (np.minimum, signed),
        "umax": (np.maximum, unsigned),
        "umin": (np.minimum, unsigned),
        "and": (np.bitwise_and, dtype),
        "or": (np.bitwise_or, dtype),
        "xor": (np.bitwise_xor, dtype),
    }.get(kind)


def _atomic_combine(kind, old, value, vtype, compare, where_val):
    bf16 = dtypes.is_bf16(vtype)
    floating = is_float_type(vtype)
    if kind == "cas":
        return np.where(old == compare[where_val], value, old)
    if kind == "xchg":
        return value
    if kind == "add":
        if bf16:
            return dtypes.bf16_round(old.astype(np.float64) + value)
        return old + value
    if kind in ("max", "min") and floating:
        return _float_min_max(kind, old, value, vtype)
    if kind in ("max", "min", "umax", "umin"):
        view = dtypes.unsigned_dtype(vtype) if kind[0] == "u" else dtypes.signed_dtype(vtype)
        a, b = old.view(view), value.view(view)
        r = np.maximum(a, b) if kind.endswith("max") else np.minimum(a, b)
        return r.view(old.dtype)
    return {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[kind](old, value)


def _float_min_max(kind, old, value, vtype):
    """Triton 3.6's float atomic max (min): on the bits, a signed max (min) where the value's
    sign bit is clear, an unsigned min (max) where it is set. Floats are ordered by value (-0.0
    below +0.0), NaNs by their bits: with the sign bit clear above +inf, with it set below -inf."""
    signed, unsigned = dtypes.signed_dtype(vtype), dtypes.unsigned_dtype(vtype)
    old_s, value_s = old.view(signed), value.view(signed)
    old_u, value_u = old.view(unsigned), value.view(unsigned)
    if kind == "max":
        r = np.where(
            value_s < 0, np.minimum(old_u, value_u).view(signed), np.maximum(old_s, value_s)
        )
    else:
        r = np.where(
            value_s < 0, np.maximum(old_u, value_u).view(signed), np.minimum(old_s, value_s)
        )
    return r.view(old.dtype)
