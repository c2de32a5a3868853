"""Reductions and scans with combiner regions: `argmax`/`argmin`, `cumsum`/`cumprod`, and
`reduce`/`associative_scan` with a user `@tilec.jit` combine function inlined into the combiner.

A combiner region is isolated from above: it sees only its block arguments (the scalar elements
of the left then the right operand) and ops built inside it, so everything the combine needs
(constants included) is emitted inside the region.

NaN in `argmax`/`argmin` follows Triton's combine function exactly: `(v1, i1)` wins over
`(v2, i2)` when `v1 > v2` (`v1 < v2` for argmin) or, with `tie_break_left`, when `v1 == v2` and
`i1 < i2`. Every comparison with NaN is false, so a NaN wins exactly when it is the right-hand
operand of a combine: which element is returned for an input holding NaN depends on the
reduction order, as in Triton (no NaN-propagation guarantee).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tilec.dialects import arith, tile
from tilec.frontend.context import TensorValue
from tilec.frontend.errors import UserError
from tilec.frontend.kernel import KernelFunction
from tilec.ir.attributes import IntegerAttr
from tilec.ir.core import Block, Operation
from tilec.ir.types import FloatType, IntegerType, TensorType, Type, f32, i32
from tilec.language import constexpr
from tilec.language import dtype as tl_dtype

Combine = Callable[[list[TensorValue], list[TensorValue]], list[Any]]

COMBINER_TERMINATORS: dict[type[Operation], type[Operation]] = {
    tile.ReduceOp: tile.ReduceReturnOp,
    tile.ScanOp: tile.ScanReturnOp,
}
"""The op that ends the combiner region of a reduction or a scan."""


def _const(value: Any) -> Any:
    return value.value if isinstance(value, constexpr) else value


class ReductionsMixin:
    """Mixed into `Builtins` (which provides `sem`, `value` and `inline`)."""

    sem: Any
    inline: Any

    def value(self, x: Any) -> TensorValue:  # pragma: no cover - provided by Builtins
        raise NotImplementedError

    # Shared emitters -------------------------------------------------------------------------

    def _inputs(self, x: Any, what: str) -> list[TensorValue]:
        items = list(x) if isinstance(x, (tuple, list)) else [x]
        values = [self.value(v) for v in items]
        if not values or any(not v.is_tensor for v in values):
            raise UserError(f"{what} needs tensor inputs", "pass a tensor such as tl.arange(0, 16)")
        shapes = {v.shape for v in values}
        if len(shapes) != 1:
            raise UserError(f"{what} needs inputs of one shape, got {sorted(map(list, shapes))}")
        return values

    def _axis(self, values: list[TensorValue], axis: Any, what: str) -> tuple[list, int]:
        """Normalize `axis`; `None` flattens the inputs and reduces along the only axis."""
        axis = _const(axis)
        shape = values[0].shape
        if axis is None:
            if len(shape) > 1:
                numel = values[0].type.numel  # type: ignore[attr-defined]
                values = [self.sem.reshape(v, (numel,)) for v in values]
            return values, 0
        if not isinstance(axis, int):
            raise UserError(f"{what}'s axis must be a constant integer, got {axis!r}")
        if axis < 0:
            axis += len(shape)
        if not 0 <= axis < len(shape):
            raise UserError(f"axis {axis} is out of range for shape {list(shape)}")
        return values, axis

    def keep_dims(self, result: Any, source: TensorValue, axis: Any, keep: Any) -> Any:
        """With `keep`, put the reduced axis back as size 1 (every axis when `axis` is None)."""
        if not _const(keep) or not source.is_tensor:
            return result
        rank = len(source.shape)
        axis = _const(axis)
        if axis is None:
            return self.sem.splat(result, (1,) * rank)  # the full reduction is a scalar
        return self.sem.expand_dims(result, axis + rank if axis < 0 else axis)

    def _combiner_op(
        self,
        cls: type[tile.ReduceOp | tile.ScanOp],
        values: list[TensorValue],
        axis: int,
        combine: Combine,
        reverse: bool = False,
    ) -> list[TensorValue]:
        """Emit `tile.reduce` or `tile.scan` (`cls`) over `values` with the combiner `combine`
        builds."""
        elements: list[Type] = [v.dtype for v in values]
        shape = values[0].shape
        if cls is tile.ReduceOp:
            reduced = shape[:axis] + shape[axis + 1 :]
            result_types = [TensorType(reduced, t) if reduced else t for t in elements]
        else:
            result_types = [v.type for v in values]
        attributes = {"axis": IntegerAttr(axis, i32)}
        if reverse:
            attributes["reverse"] = IntegerAttr(1, i32)
        builder = self.sem.builder
        op = builder.create(cls, [v.value for v in values], result_types, attributes)
        block = Block(elements + elements)
        op.regions[0].add_block(block)
        n = len(values)
        with builder.at(block):
            args = [TensorValue(a) for a in block.args]
            outs = combine(args[:n], args[n:])
            if len(outs) != n:
                raise UserError(f"the combine function must return {n} value(s), got {len(outs)}")
            results = []
            for out, element in zip(outs, elements, strict=True):
                out = self.sem.to_value(out, element)
                if out.is_tensor:
                    raise UserError("the combine function must return scalars")
                results.append(self.sem.cast(out, element))
            builder.create(COMBINER_TERMINATORS[cls], [v.value for v in results])
        return [TensorValue(r) for r in op.results]

    def _user_combine(self, combine_fn: Any, what: str) -> Combine:
        combine_fn = _const(combine_fn)
        if not isinstance(combine_fn, KernelFunction):
            raise UserError(
                f"{what}'s combine_fn must be a @tilec.jit function, got {combine_fn!r}",
                "decorate the combine function with @tilec.jit",
            )

        def combine(lhs: list[TensorValue], rhs: list[TensorValue]) -> list[Any]:
            result = self.inline(combine_fn, [*lhs, *rhs], {})
            return list(result) if isinstance(result, (tuple, list)) else [result]

        return combine

    # tl.reduce / tl.associative_scan ---------------------------------------------------------

    def tl_reduce(self, input: Any, axis: Any, combine_fn: Any, keep_dims: Any = False) -> Any:
        values = self._inputs(input, "tl.reduce")
        source, axis_given = values[0], axis
        values, axis = self._axis(values, axis, "tl.reduce")
        results = self._combiner_op(
            tile.ReduceOp, values, axis, self._user_combine(combine_fn, "tl.reduce")
        )
        results = [self.keep_dims(r, source, axis_given, keep_dims) for r in results]
        single = not isinstance(input, (tuple, list))
        return results[0] if single else tuple(results)

    def tl_associative_scan(
        self, input: Any, axis: Any, combine_fn: Any, reverse: Any = False
    ) -> Any:
        values = self._inputs(input, "tl.associative_scan")
        values, axis = self._axis(values, axis, "tl.associative_scan")
        combine = self._user_combine(combine_fn, "tl.associative_scan")
        results = self._combiner_op(tile.ScanOp, values, axis, combine, bool(_const(reverse)))
        single = not isinstance(input, (tuple, list))
        return results[0] if single else tuple(results)

    # tl.cumsum / tl.cumprod ------------------------------------------------------------------

    def _cumulative(self, x: Any, axis: Any, reverse: Any, dtype: Any, kind: str) -> TensorValue:
        what = f"tl.cum{kind}"
        (v,) = self._inputs(x, what)
        (v,), axis = self._axis([v], axis, what)
        dtype = _const(dtype)
        if dtype is not None and not isinstance(dtype, tl_dtype):
            raise UserError(f"{what}'s dtype must be a tl dtype such as tl.int32, got {dtype!r}")
        if isinstance(v.dtype, FloatType) and v.dtype.name == "bf16":
            v = self.sem.cast(v, f32)  # Triton scans bf16 in f32
        if dtype is not None:
            v = self.sem.cast(v, dtype.ir_type)
        elif kind == "sum" and isinstance(v.dtype, IntegerType) and v.dtype.width < 32:
            v = self.sem.cast(v, IntegerType(32, v.dtype.unsigned and v.dtype.width > 1))
        float_op, int_op = (
            (arith.AddFOp, arith.AddIOp) if kind == "sum" else (arith.MulFOp, arith.MulIOp)
        )
        cls = float_op if isinstance(v.dtype, FloatType) else int_op

        def combine(lhs: list[TensorValue], rhs: list[TensorValue]) -> list[Any]:
            return [self.sem.create(cls, [lhs[0], rhs[0]], lhs[0].type)]

        return self._combiner_op(tile.ScanOp, [v], axis, combine, bool(_const(reverse)))[0]

    def tl_cumsum(self, input: Any, axis: Any = 0, reverse: Any = False, dtype: Any = None) -> Any:
        return self._cumulative(input, axis, reverse, dtype, "sum")

    def tl_cumprod(self, input: Any, axis: Any = 0, reverse: Any = False, dtype: Any = None) -> Any:
        return self._cumulative(input, axis, reverse, dtype, "prod")

    # tl.argmax / tl.argmin -------------------------------------------------------------------

    def arg_reduce(self, x: Any, axis: Any, tie_break_left: Any, keep: Any, kind: str) -> Any:
        """(value, index) of the max (min) along `axis`: `tl.max(..., return_indices=True)`."""
        what = f"tl.arg{kind}"
        (source,) = self._inputs(x, what)
        axis_given = axis
        (v,), axis = self._axis([source], axis, what)
        shape = v.shape
        size = shape[axis]
        index = self.sem.create(
            tile.MakeRangeOp,
            [],
            TensorType((size,), i32),
            start=IntegerAttr(0, i32),
            end=IntegerAttr(size, i32),
        )
        if len(shape) > 1:
            placed = tuple(size if d == axis else 1 for d in range(len(shape)))
            index = self.sem.broadcast_to(self.sem.reshape(index, placed), shape)
        left_ties = bool(_const(tie_break_left))
        symbol = ">" if kind == "max" else "<"

        def combine(lhs: list[TensorValue], rhs: list[TensorValue]) -> list[Any]:
            (v1, i1), (v2, i2) = lhs, rhs
            wins = self.sem.binary(symbol, v1, v2)
            if left_ties:
                tie = self.sem.binary(
                    "&", self.sem.binary("==", v1, v2), self.sem.binary("<", i1, i2)
                )
                wins = self.sem.binary("|", wins, tie)
            return [
                self.sem.create(arith.SelectOp, [wins, v1, v2], v1.type),
                self.sem.create(arith.SelectOp, [wins, i1, i2], i1.type),
            ]

        results = self._combiner_op(tile.ReduceOp, [v, index], axis, combine)
        return tuple(self.keep_dims(r, source, axis_given, keep) for r in results)

    def tl_argmax(
        self, input: Any, axis: Any, tie_break_left: Any = True, keep_dims: Any = False
    ) -> Any:
        return self.arg_reduce(input, axis, tie_break_left, keep_dims, "max")[1]

    def tl_argmin(
        self, input: Any, axis: Any, tie_break_left: Any = True, keep_dims: Any = False
    ) -> Any:
        return self.arg_reduce(input, axis, tie_break_left, keep_dims, "min")[1]
