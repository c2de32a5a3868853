"""Batched `tl.dot`: [B, M, K] x [B, K, N] (+ [B, M, N]) as Triton 3.6 takes it, compiled as B
two-dimensional dots, so every backend runs it with its own `tile.dot` (tensor cores included).
Each batch's operands are picked out of the 3-D blocks and the results put back as their bits
(`PermutationsMixin.pick`, `arith.select`), so no value is rounded or changed on the way."""

from __future__ import annotations

from typing import Any

from tilec.dialects import arith
from tilec.frontend.context import TensorValue
from tilec.frontend.errors import UserError


def batched_dot(builtins: Any, a: TensorValue, b: TensorValue, acc: Any, **options: Any) -> Any:
    """`builtins.tl_dot` of each batch of `a` and `b` (3-D, one batch dimension first),
    stacked; `options` are tl.dot's keywords, passed to each batch's dot."""
    if len(a.shape) != 3 or len(b.shape) != 3 or a.shape[0] != b.shape[0]:
        raise UserError(
            f"a batched tl.dot needs [B, M, K] x [B, K, N] operands, got {list(a.shape)} x "
            f"{list(b.shape)}",
            "give both operands the same leading batch dimension",
        )
    batches = a.shape[0]
    acc_value = None if acc is None else builtins.value(acc)
    if acc_value is not None and acc_value.shape != (batches, a.shape[1], b.shape[2]):
        raise UserError(
            f"tl.dot accumulator must be {[batches, a.shape[1], b.shape[2]]}, got "
            f"{list(acc_value.shape)}"
        )
    products = []
    for index in range(batches):
        acc_i = None if acc_value is None else _batch(builtins, acc_value, index)
        a_i, b_i = _batch(builtins, a, index), _batch(builtins, b, index)
        products.append(builtins.tl_dot(a_i, b_i, acc_i, **options))
    shape = (batches, *products[0].shape)
    where = builtins.iota(batches, 0, shape)
    sem = builtins.sem
    result = sem.broadcast_to(sem.expand_dims(products[0], 0), shape)
    for index, product in enumerate(products[1:], start=1):
        this = sem.binary("==", where, index)
        placed = sem.broadcast_to(sem.expand_dims(product, 0), shape)
        result = sem.create(arith.SelectOp, [this, placed, result], result.type)
    return result


def _batch(builtins: Any, x: TensorValue, index: int) -> TensorValue:
    """x[index] of a 3-D block, exactly (its bits picked along the batch axis)."""
    bits, restore = builtins.as_bits(x)
    mask = builtins.sem.binary("==", builtins.iota(x.shape[0], 0, x.shape), index)
    return restore(builtins.pick(bits, mask, 0))
