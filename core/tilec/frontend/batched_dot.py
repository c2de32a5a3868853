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
    stacked; `options` are tl.dot's keywords, passed to each batch's dot. Operands of rank 4
    and more (equal batch dimensions before the last two) are reshaped to one batch dimension
    and the result back, as Triton's tl.dot does."""
    if len(a.shape) != len(b.shape) or a.shape[:-2] != b.shape[:-2]:
        raise UserError(
            f"a batched tl.dot needs [..., M, K] x [..., K, N] operands of one rank and equal "
            f"batch dimensions, got {list(a.shape)} x {list(b.shape)}",
            "give both operands the same leading batch dimensions",
        )
    if len(a.shape) > 3:
        return _flattened(builtins, a, b, acc, options)
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


def _flattened(builtins: Any, a: TensorValue, b: TensorValue, acc: Any, options: dict) -> Any:
    """The dot of rank-4-and-more operands as a 3-D one: the batch dimensions as one."""
    sem, batch = builtins.sem, a.shape[:-2]
    count = 1
    for size in batch:
        count *= size
    flat_acc = None
    if acc is not None:
        acc_value = builtins.value(acc)
        if acc_value.shape != (*batch, a.shape[-2], b.shape[-1]):
            raise UserError(
                f"tl.dot accumulator must be {[*batch, a.shape[-2], b.shape[-1]]}, got "
                f"{list(acc_value.shape)}"
            )
        flat_acc = sem.reshape(acc_value, (count, *acc_value.shape[-2:]))
    flat_a = sem.reshape(a, (count, *a.shape[-2:]))
    flat_b = sem.reshape(b, (count, *b.shape[-2:]))
    result = batched_dot(builtins, flat_a, flat_b, flat_acc, **options)
    return sem.reshape(result, (*batch, *result.shape[-2:]))


def _batch(builtins: Any, x: TensorValue, index: int) -> TensorValue:
    """x[index] of a 3-D block, exactly (its bits picked along the batch axis)."""
    bits, restore = builtins.as_bits(x)
    mask = builtins.sem.binary("==", builtins.iota(x.shape[0], 0, x.shape), index)
    return restore(builtins.pick(bits, mask, 0))
