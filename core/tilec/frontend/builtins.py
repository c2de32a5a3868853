"""The `tl.*` functions: each takes evaluated arguments and emits ops through `Semantics`."""

from __future__ import annotations

import contextlib
import operator
import re
from collections.abc import Callable
from typing import Any

from tilec import settings
from tilec.dialects import arith, math, tile
from tilec.dialects.tile import MEMORY_SCOPES, MEMORY_SEMANTICS
from tilec.frontend import block_pointers
from tilec.frontend.batched_dot import batched_dot
from tilec.frontend.block_pointers import BlockPointerValue
from tilec.frontend.compat_builtins import CompatBuiltinsMixin
from tilec.frontend.context import TensorValue
from tilec.frontend.dot_types import dot_types
from tilec.frontend.elementwise import ElementwiseMixin
from tilec.frontend.errors import UserError
from tilec.frontend.extra_builtins import ExtraBuiltinsMixin
from tilec.frontend.inline_asm import inline_asm_elementwise
from tilec.frontend.permutations import PermutationsMixin
from tilec.frontend.philox import RandomMixin
from tilec.frontend.reductions import ReductionsMixin
from tilec.frontend.scaled_dot import dot_scaled
from tilec.frontend.semantics import (
    Semantics,
    check_atomic_type,
    check_tensor_size,
    computation_type,
)
from tilec.frontend.split_dot import PARTS, split_dot
from tilec.ir.attributes import ArrayAttr, IntegerAttr, StringAttr, UnitAttr
from tilec.ir.core import Block, Operation, Value
from tilec.ir.types import (
    Float8Type,
    FloatType,
    IntegerType,
    TensorType,
    f32,
    i1,
    i32,
    is_power_of_two,
)
from tilec.language import PropagateNan, constexpr, dtype
from tilec.language import float32 as f32_dtype

UNARY_MATH: dict[str, type[Operation]] = {
    "exp": math.ExpOp, "exp2": math.Exp2Op, "log": math.LogOp, "log2": math.Log2Op,
    "sqrt": math.SqrtOp, "rsqrt": math.RsqrtOp, "sin": math.SinOp, "cos": math.CosOp,
    "erf": math.ErfOp, "floor": math.FloorOp, "ceil": math.CeilOp, "tanh": math.TanhOp,
}  # fmt: skip
"""The `tl` functions that are one `math` op on a float tensor (ints are cast to f32 first)."""

FLOAT_COMBINERS: dict[str, type[Operation]] = {
    "add": arith.AddFOp, "max": arith.MaxNumFOp, "min": arith.MinNumFOp,
}  # fmt: skip
SIGNED_COMBINERS: dict[str, type[Operation]] = {
    "add": arith.AddIOp, "max": arith.MaxSIOp, "min": arith.MinSIOp, "xor": arith.XOrIOp,
}  # fmt: skip
UNSIGNED_COMBINERS: dict[str, type[Operation]] = {
    "add": arith.AddIOp, "max": arith.MaxUIOp, "min": arith.MinUIOp, "xor": arith.XOrIOp,
}  # fmt: skip
"""The combiner op of `tl.sum` (add), `tl.max`, `tl.min` and `tl.xor_sum`, per element type."""


def _const(value: Any, what: str) -> Any:
    if isinstance(value, constexpr):
        value = value.value
    if isinstance(value, TensorValue):
        raise UserError(f"{what} must be a compile-time constant", "pass it as a tl.constexpr")
    return value


def _int(value: Any, what: str) -> int:
    """A compile-time integer; a bool (`BLOCK=True`) or a float is a user error."""
    value = _const(value, what)
    if not isinstance(value, bool):
        with contextlib.suppress(TypeError):
            return operator.index(value)  # int, NumPy integers
    raise UserError(
        f"{what} must be an int, got {value!r} ({type(value).__name__})",
        "pass an integer constexpr, e.g. BLOCK=1024",
    )


def _shape(value: Any) -> tuple[int, ...]:
    value = _const(value, "a shape")
    shape = (value,) if isinstance(value, int) else tuple(_const(d, "a shape") for d in value)
    for d in shape:
        if isinstance(d, bool):
            raise UserError(
                f"shape {list(shape)} has a bool dimension; dimensions are ints",
                "pass an integer constexpr, e.g. BLOCK=1024",
            )
        if not isinstance(d, int) or not is_power_of_two(d):
            raise UserError(
                f"shape {list(shape)} has a dimension that is not a power of two",
                "use power-of-two block sizes and mask the excess elements",
            )
    return shape


def _ir_type(value: Any) -> Any:
    value = _const(value, "a dtype")
    if not isinstance(value, dtype):
        raise UserError(f"expected a tl dtype such as tl.float32, got {value!r}")
    return value.ir_type


class Builtins(
    ReductionsMixin,
    CompatBuiltinsMixin,
    PermutationsMixin,
    RandomMixin,
    ElementwiseMixin,
    ExtraBuiltinsMixin,
):
    """Dispatch table from `tl` function names to the ops they emit."""

    def __init__(self, sem: Semantics, inline: Callable[..., Any] | None = None):
        self.sem = sem
        self.inline = inline  # inlines a @tilec.jit function: (callee, args, kwargs) -> result

    def call(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        method = getattr(self, f"tl_{name}", None)
        if name in UNARY_MATH:
            method = self.unary_math_of(UNARY_MATH[name])
        if method is None:
            raise UserError(f"tl.{name} is not supported by the frontend yet")
        self.check_effects(name, args, kwargs)
        try:
            return method(*args, **kwargs)
        except TypeError as err:
            text = re.sub(rf"\b\w+\.tl_{name}\(\)", f"tl.{name}()", str(err))  # any mixin
            raise UserError(f"bad arguments to tl.{name}: {text}") from None

    def value(self, x: Any) -> TensorValue:
        return self.sem.to_value(_const(x, "value") if isinstance(x, constexpr) else x)

    def tl_program_id(self, axis: Any = 0) -> TensorValue:
        axis_attr = IntegerAttr(_grid_axis(axis, "tl.program_id"), i32)
        return self.sem.create(tile.ProgramIdOp, [], i32, axis=axis_attr)

    def tl_num_programs(self, axis: Any = 0) -> TensorValue:
        axis_attr = IntegerAttr(_grid_axis(axis, "tl.num_programs"), i32)
        return self.sem.create(tile.NumProgramsOp, [], i32, axis=axis_attr)

    def tl_arange(self, start: Any, end: Any) -> TensorValue:
        start, end = _int(start, "tl.arange's start"), _int(end, "tl.arange's end")
        if not is_power_of_two(end - start):
            raise UserError(
                f"tl.arange({start}, {end}) has {end - start} elements, not a power of two",
                "use a power-of-two range, e.g. tl.arange(0, 1024), and mask the excess elements",
            )
        result_type = TensorType((end - start,), i32)
        check_tensor_size(result_type)
        if not -(2**31) <= start < end <= 2**31 - 1:
            raise UserError(
                f"tl.arange({start}, {end}) does not fit in int32, as Triton requires",
                "offset the range instead: base + tl.arange(0, N), with base an int64 scalar",
            )
        attrs = {"start": IntegerAttr(start, i32), "end": IntegerAttr(end, i32)}
        return self.sem.create(tile.MakeRangeOp, [], result_type, **attrs)

    def tl_full(self, shape: Any, value: Any, dtype: Any) -> TensorValue:
        shape, element = _shape(shape), _ir_type(dtype)
        if isinstance(value, TensorValue) and value.is_tensor:
            raise UserError(
                f"tl.full's value must be a scalar, got a tensor of shape {list(value.shape)}",
                "for a tensor of another shape use tl.broadcast_to(x, shape)",
            )
        if isinstance(value, TensorValue) and not shape:  # rank 0 of a runtime scalar
            return self.sem.cast(value, element)
        if not shape:  # rank 0: a scalar, as Triton's tl.full((), v, dtype)
            scalar = self.sem.to_value(_const(value, "value"), element)
            return self.sem.cast(scalar, element)
        if isinstance(value, TensorValue):
            return self.sem.splat(self.sem.cast(value, element), shape)
        return self.sem.constant(_const(value, "value"), TensorType(shape, element))

    def tl_zeros(self, shape: Any, dtype: Any) -> TensorValue:
        return self.tl_full(shape, 0, dtype)

    def tl_load(
        self,
        pointer: Any,
        mask: Any = None,
        other: Any = None,
        boundary_check: Any = (),
        padding_option: Any = "",
        cache_modifier: Any = "",
        eviction_policy: Any = "",
        volatile: Any = False,
    ) -> TensorValue:
        hints = dict(cache_modifier=cache_modifier, eviction_policy=eviction_policy)
        if isinstance(pointer, BlockPointerValue):
            hints["volatile"] = volatile
            return block_pointers.load(
                self, pointer, mask, other, boundary_check, padding_option, hints
            )
        _memory_hints("tl.load", boundary_check=boundary_check, padding_option=padding_option)
        attrs: dict[str, Any] = _cache_hints(LOAD_CACHE_MODIFIERS, cache_modifier, eviction_policy)
        is_volatile = _const(volatile, "volatile")
        if is_volatile not in (None, False, True):
            raise UserError(f"tl.load's volatile must be True or False, got {is_volatile!r}")
        if is_volatile:
            attrs["volatile"] = UnitAttr()
        ptr = self.value(pointer)
        pointee = self.sem.pointee(ptr)
        operands = [ptr]
        if mask is not None:
            operands.append(self.sem.broadcast_to(self.sem.cast(self.value(mask), i1), ptr.shape))
            if other is not None:
                other_value = self.sem.to_value(other, pointee)
                other_value = self.sem.cast(other_value, pointee)
                operands.append(self.sem.broadcast_to(other_value, ptr.shape))
        result = TensorType(ptr.shape, pointee) if ptr.is_tensor else pointee
        return self.sem.create(tile.LoadOp, operands, result, **attrs)

    def tl_store(
        self,
        pointer: Any,
        value: Any,
        mask: Any = None,
        boundary_check: Any = (),
        cache_modifier: Any = "",
        eviction_policy: Any = "",
    ) -> None:
        hints = dict(cache_modifier=cache_modifier, eviction_policy=eviction_policy)
        if isinstance(pointer, BlockPointerValue):
            return block_pointers.store(self, pointer, value, mask, boundary_check, hints)
        _memory_hints("tl.store", boundary_check=boundary_check)
        attrs = _cache_hints(STORE_CACHE_MODIFIERS, cache_modifier, eviction_policy)
        ptr = self.value(pointer)
        pointee = self.sem.pointee(ptr)
        stored = self.sem.cast(self.sem.to_value(value, pointee), pointee)
        operands = [ptr, self.sem.broadcast_to(stored, ptr.shape)]
        if mask is not None:
            operands.append(self.sem.broadcast_to(self.sem.cast(self.value(mask), i1), ptr.shape))
        self.sem.create_op(tile.StoreOp, operands, **attrs)

    def _atomic(
        self,
        kind: str,
        pointer: Any,
        value: Any,
        mask: Any = None,
        sem: Any = None,
        scope: Any = None,
    ) -> TensorValue:
        """`tile.atomic_rmw`: returns the values memory held before, per element."""
        ptr = self.value(pointer)
        pointee = self.sem.pointee(ptr)
        integer = isinstance(pointee, IntegerType)
        check_atomic_type(f"tl.atomic_{kind}", kind, pointee)
        if kind in ("and", "or", "xor") and not integer:
            raise UserError(
                f"tl.atomic_{kind} needs an integer pointer, got {pointee}",
                "bitwise atomics work on int32/int64 (or unsigned) memory",
            )
        if kind in ("max", "min") and integer and pointee.unsigned:  # type: ignore[attr-defined]
            kind = "u" + kind
        val = self.sem.cast(self.sem.to_value(value, pointee), pointee)
        operands = [ptr, val]
        if mask is not None:
            operands.append(self.sem.cast(self.value(mask), i1))
        operands = self.sem.broadcast_all(*operands)
        attrs = {"kind": StringAttr(kind), **_memory_order(sem, scope)}
        return self.sem.create(tile.AtomicRMWOp, operands, operands[1].type, **attrs)

    def tl_atomic_add(
        self, pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None
    ) -> TensorValue:
        return self._atomic("add", pointer, val, mask, sem, scope)

    def tl_atomic_max(
        self, pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None
    ) -> TensorValue:
        return self._atomic("max", pointer, val, mask, sem, scope)

    def tl_atomic_min(
        self, pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None
    ) -> TensorValue:
        return self._atomic("min", pointer, val, mask, sem, scope)

    def tl_atomic_xchg(
        self, pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None
    ) -> TensorValue:
        return self._atomic("xchg", pointer, val, mask, sem, scope)

    def tl_atomic_and(
        self, pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None
    ) -> TensorValue:
        return self._atomic("and", pointer, val, mask, sem, scope)

    def tl_atomic_or(
        self, pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None
    ) -> TensorValue:
        return self._atomic("or", pointer, val, mask, sem, scope)

    def tl_atomic_xor(
        self, pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None
    ) -> TensorValue:
        return self._atomic("xor", pointer, val, mask, sem, scope)

    def tl_atomic_cas(
        self, pointer: Any, cmp: Any, val: Any, sem: Any = None, scope: Any = None
    ) -> TensorValue:
        """`tile.atomic_cas`: where memory equals `cmp` it becomes `val`; returns the old values."""
        ptr = self.value(pointer)
        pointee = self.sem.pointee(ptr)
        check_atomic_type("tl.atomic_cas", "cas", pointee)
        compare = self.sem.cast(self.sem.to_value(cmp, pointee), pointee)
        new = self.sem.cast(self.sem.to_value(val, pointee), pointee)
        ptr, compare, new = self.sem.broadcast_all(ptr, compare, new)
        attrs = _memory_order(sem, scope)
        return self.sem.create(tile.AtomicCASOp, [ptr, compare, new], new.type, **attrs)

    def tl_where(self, condition: Any, x: Any, y: Any) -> TensorValue:
        cond = self.sem.cast(self.value(condition), i1)
        probe_x = x if isinstance(x, TensorValue) else None
        probe_y = y if isinstance(y, TensorValue) else None
        anchor = probe_x or probe_y
        target = anchor.dtype if anchor else None
        if probe_x and probe_y and probe_x.dtype != probe_y.dtype:
            target = computation_type(probe_x.dtype, probe_y.dtype, False, False, False)
        a = self.sem.cast(self.sem.to_value(x, target), target or self.sem.to_value(x).dtype)
        b = self.sem.cast(self.sem.to_value(y, a.dtype), a.dtype)
        cond, a, b = self.sem.broadcast_all(cond, a, b)
        return self.sem.create(arith.SelectOp, [cond, a, b], a.type)

    def _binary_math(
        self,
        x: Any,
        y: Any,
        int_ops: tuple[type[Operation], type[Operation]],
        float_op: type[Operation],
    ) -> TensorValue:
        """`float_op` on floats, else the signed or unsigned op of `int_ops`."""
        a, b = self.value(x), self.value(y)
        target = a.dtype if a.dtype == b.dtype else self.sem.binary("+", a, b).dtype
        a, b = self.sem.broadcast_all(self.sem.cast(a, target), self.sem.cast(b, target))
        if isinstance(target, FloatType):
            return self.sem.create(float_op, [a, b], a.type)
        signed_op, unsigned_op = int_ops
        unsigned = target.unsigned  # type: ignore[attr-defined]
        return self.sem.create(unsigned_op if unsigned else signed_op, [a, b], a.type)

    def tl_minimum(self, x: Any, y: Any, propagate_nan: Any = None) -> TensorValue:
        """Float NaN rule: `propagate_nan=tl.PropagateNan.NONE` (default) ignores a NaN operand
        (`arith.minnumf`), `ALL` returns NaN (`arith.minimumf`)."""
        float_op = _nan_op(arith.MinNumFOp, arith.MinimumFOp, propagate_nan)
        return self._binary_math(x, y, (arith.MinSIOp, arith.MinUIOp), float_op)

    def tl_maximum(self, x: Any, y: Any, propagate_nan: Any = None) -> TensorValue:
        """Like `tl_minimum`: `arith.maxnumf`, or `arith.maximumf` with `PropagateNan.ALL`."""
        float_op = _nan_op(arith.MaxNumFOp, arith.MaximumFOp, propagate_nan)
        return self._binary_math(x, y, (arith.MaxSIOp, arith.MaxUIOp), float_op)

    def tl_clamp(self, x: Any, min: Any, max: Any, propagate_nan: Any = None) -> TensorValue:
        """`minimum(maximum(x, min), max)`. With the default `propagate_nan=NONE` a NaN `x`
        gives `min` (Triton's rule), with `ALL` it gives NaN; integers are accepted too."""
        v = self.value(x)
        bounds = []
        for bound in (min, max):
            bound = bound.value if isinstance(bound, constexpr) else bound
            adapts = isinstance(v.dtype, FloatType) or isinstance(bound, int)
            if not isinstance(bound, TensorValue) and adapts:
                bound = self.sem.to_value(bound, v.dtype)  # literals take x's dtype
            bounds.append(bound)
        lo, hi = bounds
        return self.tl_minimum(self.tl_maximum(v, lo, propagate_nan), hi, propagate_nan)

    def _float(self, x: Any) -> TensorValue:
        v = self.value(x)
        self.sem.reject_float8("this math function", v)
        return v if isinstance(v.dtype, FloatType) else self.sem.cast(v, f32)

    def unary_math_of(self, cls: type[Operation]) -> Callable[..., TensorValue]:
        """`tl.exp`-like functions: `f(x)` emitting one `cls` op."""

        def emit(x: Any) -> TensorValue:
            return self.unary_math(cls, x)

        return emit

    def unary_math(self, cls: type[Operation], x: Any) -> TensorValue:
        self.sem.reject_float8(f"tl.{cls.name.split('.')[-1]}", self.value(x))
        v = self._float(x)
        return self.sem.create(cls, [v], v.type)

    def tl_abs(self, x: Any) -> TensorValue:
        v = self.value(x)
        self.sem.reject_float8("tl.abs", v)
        if isinstance(v.dtype, IntegerType) and (v.dtype.unsigned or v.dtype.width == 1):
            return v  # Triton: the absolute value of an unsigned (or bool) value is itself
        cls = math.AbsFOp if isinstance(v.dtype, FloatType) else math.AbsIOp
        return self.sem.create(cls, [v], v.type)

    def tl_sigmoid(self, x: Any) -> TensorValue:
        v = self._float(x)
        exp = self.sem.create(math.ExpOp, [self.sem.negate(v)], v.type)
        return self.sem.binary("/", 1.0, self.sem.binary("+", 1.0, exp))

    def tl_fma(self, x: Any, y: Any, z: Any) -> TensorValue:
        """`x * y + z` rounded once; operands of different float types meet in the type `+`
        gives them (`fma(f32, f16, f16)` is f32)."""
        values = [self._float(v) for v in (x, y, z)]
        target = values[0].dtype
        for v in values[1:]:
            target = computation_type(target, v.dtype, False, False, False)
        a, b, c = self.sem.broadcast_all(*(self.sem.cast(v, target) for v in values))
        return self.sem.create(math.FmaOp, [a, b, c], a.type)

    def tl_cdiv(self, x: Any, y: Any) -> Any:
        if not isinstance(x, TensorValue) and not isinstance(y, TensorValue):
            return -(-_const(x, "x") // _const(y, "y"))
        return self.sem.binary("//", self.sem.binary("-", self.sem.binary("+", x, y), 1), y)

    def _reduce(self, x: Any, axis: Any, kind: str, widen: bool = True) -> TensorValue:
        v = self.value(x)
        self.sem.reject_float8({"add": "tl.sum"}.get(kind, f"tl.{kind}"), v)
        axis = _const(axis, "axis")
        if not v.is_tensor:
            return v
        if axis is None:
            if len(v.shape) > 1:
                v = self.sem.reshape(v, (v.type.numel,))  # type: ignore[attr-defined]
            axis = 0
        if axis < 0:
            axis += len(v.shape)
        if not 0 <= axis < len(v.shape):
            raise UserError(f"axis {axis} is out of range for shape {list(v.shape)}")
        if widen and kind == "add" and isinstance(v.dtype, IntegerType) and v.dtype.width < 32:
            # Triton widens to the 32-bit type of the same signedness (i1 counts as signed).
            v = self.sem.cast(v, IntegerType(32, v.dtype.unsigned and v.dtype.width > 1))
        element = v.dtype
        reduced = v.shape[:axis] + v.shape[axis + 1 :]
        result_type = TensorType(reduced, element) if reduced else element
        combiner = Block([element, element])
        if isinstance(element, FloatType):
            if kind == "xor":
                raise UserError(
                    f"tl.xor_sum needs an integer tensor, got {element}", "cast it with .to()"
                )
            combiner_op = FLOAT_COMBINERS[kind]
        else:
            unsigned = element.unsigned  # type: ignore[attr-defined]
            combiner_op = (UNSIGNED_COMBINERS if unsigned else SIGNED_COMBINERS)[kind]
        builder = self.sem.builder
        op = builder.create(tile.ReduceOp, [v.value], [result_type], {"axis": _i32(axis)})
        op.regions[0].add_block(combiner)
        with builder.at(combiner):
            args: list[Value] = list(combiner.args)
            combined = builder.create(combiner_op, args, [element])
            builder.create(tile.ReduceReturnOp, [combined.result])
        return TensorValue(op.result)

    def tl_sum(
        self, x: Any, axis: Any = None, keep_dims: Any = False, dtype: Any = None
    ) -> TensorValue:
        """With `dtype`, the input is cast to it and summed in it (no widening), as Triton."""
        v = self.value(x)
        given = _const(dtype, "dtype") is not None
        if given:
            v = self.sem.cast(v, _ir_type(dtype))
        return self.keep_dims(self._reduce(v, axis, "add", not given), v, axis, keep_dims)

    def tl_xor_sum(self, x: Any, axis: Any = None, keep_dims: Any = False) -> TensorValue:
        """The bitwise xor of the elements along `axis` (integers only, no widening)."""
        v = self.value(x)
        return self.keep_dims(self._reduce(v, axis, "xor"), v, axis, keep_dims)

    def tl_max(
        self,
        x: Any,
        axis: Any = None,
        return_indices: Any = False,
        return_indices_tie_break_left: Any = True,
        keep_dims: Any = False,
    ) -> Any:
        return self._extremum(
            "max", x, axis, return_indices, return_indices_tie_break_left, keep_dims
        )

    def tl_min(
        self,
        x: Any,
        axis: Any = None,
        return_indices: Any = False,
        return_indices_tie_break_left: Any = True,
        keep_dims: Any = False,
    ) -> Any:
        return self._extremum(
            "min", x, axis, return_indices, return_indices_tie_break_left, keep_dims
        )

    def _extremum(
        self, kind: str, x: Any, axis: Any, return_indices: Any, tie_break_left: Any, keep_dims: Any
    ) -> Any:
        """`tl.max`/`tl.min`: a reduction, or with `return_indices` the (value, index) pair."""
        if _const(return_indices, "return_indices"):
            return self.arg_reduce(x, axis, tie_break_left, keep_dims, kind)
        v = self.value(x)
        return self.keep_dims(self._reduce(v, axis, kind), v, axis, keep_dims)

    def tl_dot(
        self,
        a: Any,
        b: Any,
        acc: Any = None,
        input_precision: Any = None,
        allow_tf32: Any = None,
        max_num_imprecise_acc: Any = None,
        out_dtype: Any = None,
    ) -> TensorValue:
        """`a @ b (+ acc)`, batched for 3-D operands (`batched_dot`). f32 inputs are multiplied
        with the `input_precision` (Triton's meanings, `_dot_precision`), which the op records.
        The result's type follows Triton (`dot_types`): integer operands give the i32 sums
        whatever `out_dtype` says; an f16 `out_dtype` of f16 operands rounds the f32 result
        once, after the dot."""
        a, b = self.value(a), self.value(b)
        imprecise = _imprecise_acc(a, b, max_num_imprecise_acc)
        if len(a.shape) >= 3 or len(b.shape) >= 3:  # each batch's dot converts float8 itself
            return batched_dot(self, a, b, acc, input_precision=input_precision,
                               allow_tf32=allow_tf32, max_num_imprecise_acc=max_num_imprecise_acc,
                               out_dtype=out_dtype)  # fmt: skip
        a, b = self.sem.upcast_float8(a), self.sem.upcast_float8(b)  # 8-bit floats: in f16
        if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
            raise UserError(
                f"tl.dot needs [M, K] x [K, N] operands, got {list(a.shape)} x {list(b.shape)}",
                "check the block shapes; use tl.trans(b) if b is laid out [N, K]",
            )
        if a.dtype != b.dtype:
            raise UserError(f"tl.dot operands must have one dtype, got {a.dtype} and {b.dtype}")
        precision = _dot_precision(a.dtype, input_precision, allow_tf32)
        shape = (a.shape[0], b.shape[1])
        out = None if _const(out_dtype, "out_dtype") is None else _ir_type(out_dtype)
        wide, rounded = dot_types(a.dtype, out)  # Triton's result types (`dot_types`)
        if acc is None:
            acc_value = self.sem.constant(0, TensorType(shape, wide))
        else:
            rounded = None
            acc_value = self.value(acc)
            if acc_value.shape != shape:
                raise UserError(f"tl.dot accumulator must be {list(shape)}, got {acc_value.shape}")
            if out is not None and acc_value.dtype != out:
                raise UserError(
                    f"tl.dot's out_dtype {out} differs from the accumulator's {acc_value.dtype}",
                    "leave out out_dtype, or give an accumulator of that dtype",
                )
        if precision in PARTS:  # bf16x3, bf16x6: dots of bf16 parts (`split_dot`)
            if acc_value.dtype != f32:
                raise UserError(
                    f"tl.dot(..., input_precision={precision!r}) accumulates in f32; the "
                    f"accumulator is {acc_value.dtype}",
                    "give an f32 accumulator (convert the result afterwards)",
                )
            result = split_dot(self.sem, a, b, acc_value, precision)
            return result if rounded is None else self.sem.cast(result, rounded)
        attributes = {} if precision is None else {"input_precision": StringAttr(precision)}
        if imprecise is not None:
            attributes["max_num_imprecise_acc"] = IntegerAttr(imprecise, i32)
        result = self.sem.create(tile.DotOp, [a, b, acc_value], acc_value.type, **attributes)
        return result if rounded is None else self.sem.cast(result, rounded)

    def tl_dot_scaled(
        self,
        lhs: Any,
        lhs_scale: Any,
        lhs_format: Any,
        rhs: Any,
        rhs_scale: Any,
        rhs_format: Any,
        acc: Any = None,
        fast_math: Any = False,
        lhs_k_pack: Any = True,
        rhs_k_pack: Any = True,
        out_dtype: Any = f32_dtype,
    ) -> TensorValue:
        """Triton's microscaled dot, decoded and scaled in f16/bf16, then `tl.dot`
        (`tilec.frontend.scaled_dot`)."""
        return dot_scaled(self, lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc,
                          fast_math, lhs_k_pack, rhs_k_pack, out_dtype)  # fmt: skip

    def tl_inline_asm_elementwise(
        self, asm: Any, constraints: Any, args: Any, dtype: Any, is_pure: Any, pack: Any
    ) -> Any:
        """Target assembly over the broadcast `args` (`tilec.frontend.inline_asm`)."""
        return inline_asm_elementwise(self, asm, constraints, args, dtype, is_pure, pack)

    def tl_trans(self, x: Any, *dims: Any) -> TensorValue:
        order = tuple(_const(d, "dims") for d in dims)
        if len(order) == 1 and isinstance(order[0], (tuple, list)):
            order = tuple(order[0])
        return self.sem.trans(self.value(x), order or None)

    def tl_reshape(self, x: Any, shape: Any, *more: Any, can_reorder: Any = False) -> TensorValue:
        """`can_reorder=True` lets Triton permute the elements; keeping their order (what
        tilec always does) is one valid choice, so both values are honoured."""
        _const(can_reorder, "can_reorder")
        dims = _shape((shape, *more) if more else shape)
        return self.sem.reshape(self.value(x), dims)

    def tl_broadcast_to(self, x: Any, shape: Any, *more: Any) -> TensorValue:
        return self.sem.broadcast_to(self.value(x), _shape((shape, *more) if more else shape))

    def tl_expand_dims(self, x: Any, axis: Any) -> TensorValue:
        value, axes = self.value(x), _const(axis, "axis")
        axes = list(axes) if isinstance(axes, (tuple, list)) else [axes]
        rank = len(value.shape) + len(axes)
        if not all(isinstance(a, int) and not isinstance(a, bool) for a in axes):
            raise UserError(f"tl.expand_dims' axis must be an int or ints, got {axis!r}")
        hint = f"use distinct axes in [{-rank}, {rank - 1}]"
        for a in axes:
            if not -rank <= a < rank:  # Triton's texts, which its tests read
                raise UserError(
                    f"tl.expand_dims: invalid axis {a}. Expected {-rank} <= axis < {rank}", hint
                )
        placed = [a + rank if a < 0 else a for a in axes]
        if len(set(placed)) != len(placed):
            raise UserError(
                f"tl.expand_dims received duplicate axes, normalized axes = {placed}", hint
            )
        for a in sorted(placed):
            value = self.sem.expand_dims(value, a)
        return value

    def tl_multiple_of(self, x: Any, values: Any) -> Any:
        """Promise that `x`'s values are multiples of `values` (per dimension): an op attribute
        `tile.divisibility` the axis-info analysis (and so vectorization) reads."""
        return self._hint(x, values, "tile.divisibility", "tl.multiple_of")

    def tl_max_contiguous(self, x: Any, values: Any) -> Any:
        """Promise runs of `values` consecutive values in `x` (per dimension): `tile.contiguity`."""
        return self._hint(x, values, "tile.contiguity", "tl.max_contiguous")

    def _hint(self, x: Any, values: Any, key: str, where: str) -> Any:
        tensor = self.value(x)
        hint = _const(values, f"{where}'s values")
        hint = [hint] if isinstance(hint, int) else list(hint)
        rank = max(len(tensor.shape), 1)
        if (
            not hint
            or len(hint) not in (1, rank)
            or not all(isinstance(v, int) and v > 0 for v in hint)
        ):
            raise UserError(
                f"{where} takes a positive int or one per dimension ({rank}); got {values!r}"
            )
        owner = tensor.value.owner
        if isinstance(owner, Operation):  # a function argument carries its own attributes
            owner.attributes[key] = (
                IntegerAttr(hint[0])
                if len(hint) == 1
                else ArrayAttr([IntegerAttr(v) for v in hint])
            )
        return tensor

    def tl_static_assert(self, condition: Any, message: Any = "") -> None:
        if not _const(condition, "tl.static_assert's condition"):
            raise UserError(f"static assertion failed: {_const(message, 'message')}")

    def tl_device_print(self, prefix: Any, *values: Any, hex: Any = False) -> None:
        if _const(hex, "hex"):
            raise UserError(
                "tl.device_print(..., hex=True) is not supported by tilec yet",
                "print the values in decimal (leave out hex), or .to(tl.uint32, bitcast=True)",
            )
        operands = [self.value(v) for v in values]
        self.sem.create_op(tile.PrintOp, operands, prefix=StringAttr(_const(prefix, "prefix")))

    def tl_debug_barrier(self) -> None:
        self.sem.create_op(tile.BarrierOp, [])


def _nan_op(
    ignore_nan: type[Operation], propagate: type[Operation], propagate_nan: Any
) -> type[Operation]:
    """The float op of `tl.minimum`/`tl.maximum` for a `propagate_nan` argument: `ignore_nan`
    for `PropagateNan.NONE` (the default), `propagate` for `PropagateNan.ALL`."""
    value = _const(propagate_nan, "propagate_nan")
    if value is None or value == PropagateNan.NONE:
        return ignore_nan
    if value == PropagateNan.ALL:
        return propagate
    raise UserError(
        f"propagate_nan must be tl.PropagateNan.NONE or tl.PropagateNan.ALL, got {value!r}"
    )


def _i32(value: int) -> IntegerAttr:
    return IntegerAttr(value, i32)


def _memory_order(sem: Any, scope: Any) -> dict[str, StringAttr]:
    """The `sem`/`scope` attributes of an atomic: Triton's defaults are acq_rel and gpu."""
    sem = _const(sem, "sem") or "acq_rel"
    scope = _const(scope, "scope") or "gpu"
    if sem not in MEMORY_SEMANTICS:
        raise UserError(f"unknown atomic sem {sem!r}", f"use one of {', '.join(MEMORY_SEMANTICS)}")
    if scope not in MEMORY_SCOPES:
        raise UserError(f"unknown atomic scope {scope!r}", f"use one of {', '.join(MEMORY_SCOPES)}")
    return {"sem": StringAttr(sem), "scope": StringAttr(scope)}


MEMORY_HINT_DEFAULTS: dict[str, Any] = {
    "boundary_check": (),
    "padding_option": "",
}
"""Triton's `tl.load`/`tl.store` keywords besides `mask`/`other`, with their default values."""

MEMORY_HINT_REASONS: dict[str, str] = {
    "boundary_check": "it applies to block pointers (tl.make_block_ptr); the bounds of a "
    "pointer or a block of pointers are unknown to the compiler",
    "padding_option": "it applies to block pointers (tl.make_block_ptr); the bounds of a "
    "pointer or a block of pointers are unknown to the compiler",
}


def _memory_hints(where: str, **given: Any) -> None:
    """Accept each keyword at its default value (what tilec does); reject any other value by
    name, since tilec cannot honour it yet."""
    for name, value in given.items():
        value = _const(value, name)
        default = MEMORY_HINT_DEFAULTS[name]
        if value == default or value is None or (name == "boundary_check" and not value):
            continue
        raise UserError(
            f"{where}({name}={value!r}) is not supported: {MEMORY_HINT_REASONS[name]}",
            f"leave out {name} (its default, {default!r}, is what tilec does)",
        )


LOAD_CACHE_MODIFIERS = (".ca", ".cg", ".cv")
STORE_CACHE_MODIFIERS = (".wb", ".cg", ".cs", ".wt")
EVICTION_POLICIES = ("evict_first", "evict_last")
"""The values Triton 3.6 accepts besides "" (its `semantic.py`); the IR's `cache` and `eviction`
attributes of `tile.load`/`tile.store` carry them to the backends, which emit them."""


def _cache_hints(
    modifiers: tuple[str, ...], cache_modifier: Any, eviction_policy: Any
) -> dict[str, StringAttr]:
    """The `cache`/`eviction` attributes of a load or store, with Triton's errors for values
    it does not accept."""
    attrs: dict[str, StringAttr] = {}
    cache = _const(cache_modifier, "cache_modifier")
    if cache:
        if cache not in modifiers:
            raise UserError(
                f"Cache modifier {cache} not supported", f"use one of {', '.join(modifiers)}"
            )
        attrs["cache"] = StringAttr(cache)
    eviction = _const(eviction_policy, "eviction_policy")
    if eviction:
        if eviction not in EVICTION_POLICIES:
            raise UserError(
                f"Eviction policy {eviction} not supported",
                f"use one of {', '.join(EVICTION_POLICIES)}",
            )
        attrs["eviction"] = StringAttr(eviction)
    return attrs


def _grid_axis(axis: Any, where: str) -> int:
    value = _const(axis, "axis")
    if not isinstance(value, int) or isinstance(value, bool) or value not in (0, 1, 2):
        raise UserError(f"{where} axis must be 0, 1, or 2 but got {value!r}", "grids have 3 axes")
    return value


def _dot_precision(inputs: Any, input_precision: Any, allow_tf32: Any) -> str | None:
    """`tl.dot`'s input precision, as Triton resolves it: `input_precision`, else
    `TILEC_F32_DEFAULT` (Triton's `TRITON_F32_DEFAULT`), else "tf32" unless `allow_tf32=False`.
    It applies to f32 inputs (the result; None for other inputs): f16, bf16 and integer inputs
    are exact in every precision, and f64 inputs are multiplied in f64 whatever it says, as
    Triton's backends and interpreter do."""
    precision = _const(input_precision, "input_precision")
    tf32 = _const(allow_tf32, "allow_tf32")
    if precision is not None and tf32 is not None:
        raise UserError(
            "tl.dot takes input_precision or allow_tf32, not both",
            "give only input_precision (allow_tf32 is its deprecated spelling)",
        )
    if precision is not None and precision not in settings.F32_PRECISIONS:
        raise UserError(
            f"tl.dot's input_precision must be one of {', '.join(map(repr, settings.F32_PRECISIONS))}, "
            f"got {precision!r}"
        )
    if tf32 is not None and not isinstance(tf32, bool):
        raise UserError(f"tl.dot's allow_tf32 must be True or False, got {tf32!r}")
    if inputs != f32:
        return None
    if precision is None and settings.F32_DEFAULT.get() is not None:
        try:
            precision = settings.f32_default()
        except ValueError as error:
            raise UserError(str(error)) from None
    if precision is None:
        precision = "ieee" if tf32 is False else "tf32"
    return precision


IMPRECISE_ACC_DEFAULT = 2**30
"""`max_num_imprecise_acc` where `tl.dot` of float8 inputs leaves it out: Triton's default on
sm_90 (`max_num_imprecise_acc_default`), every product in the tensor cores' own accumulation."""


def _imprecise_acc(a: TensorValue, b: TensorValue, imprecise: Any) -> int | None:
    """The `max_num_imprecise_acc` of a `tl.dot` of `a` and `b` (Triton's): for float8 inputs
    (both), the products along K a target may sum in its reduced-precision float8 accumulation
    before adding them to the f32 accumulator (`IMPRECISE_ACC_DEFAULT` where left out; more than
    K is an error, as in Triton); None for other inputs, on which it has no effect, as in
    Triton."""
    limit = _const(imprecise, "max_num_imprecise_acc")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise UserError(
            f"tl.dot's max_num_imprecise_acc must be None or an int >= 0, got {limit!r}"
        )
    if not (isinstance(a.dtype, Float8Type) and isinstance(b.dtype, Float8Type)):
        return None
    k = a.shape[-1] if a.shape else 0
    if limit is not None and limit > k:
        raise UserError(
            f"tl.dot's max_num_imprecise_acc ({limit}) must be <= K ({k})",
            "give at most the dot's K, or leave it out",
        )
    return IMPRECISE_ACC_DEFAULT if limit is None else limit
