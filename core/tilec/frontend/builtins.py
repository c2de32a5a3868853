"""The `tl.*` functions: each takes evaluated arguments and emits ops through `Semantics`."""

from __future__ import annotations

from typing import Any

from tilec.frontend.context import TensorValue
from tilec.frontend.errors import UserError
from tilec.frontend.semantics import Semantics
from tilec.ir.attributes import IntegerAttr, StringAttr
from tilec.ir.core import Block, Value
from tilec.ir.types import FloatType, IntegerType, TensorType, f32, i1, i32, is_power_of_two
from tilec.language import constexpr, dtype

UNARY_MATH = {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "erf"}


def _const(value: Any, what: str) -> Any:
    if isinstance(value, constexpr):
        value = value.value
    if isinstance(value, TensorValue):
        raise UserError(f"{what} must be a compile-time constant", "pass it as a tl.constexpr")
    return value


def _shape(value: Any) -> tuple[int, ...]:
    value = _const(value, "a shape")
    shape = (value,) if isinstance(value, int) else tuple(_const(d, "a shape") for d in value)
    for d in shape:
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


class Builtins:
    """Dispatch table from `tl` function names to the ops they emit."""

    def __init__(self, sem: Semantics):
        self.sem = sem

    def call(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if name in UNARY_MATH:
            return self.unary_math(name, *args, **kwargs)
        method = getattr(self, f"tl_{name}", None)
        if method is None:
            raise UserError(f"tl.{name} is not supported by the frontend yet")
        try:
            return method(*args, **kwargs)
        except TypeError as err:
            raise UserError(f"bad arguments to tl.{name}: {err}") from None

    def value(self, x: Any) -> TensorValue:
        return self.sem.to_value(_const(x, "value") if isinstance(x, constexpr) else x)

    def tl_program_id(self, axis: Any = 0) -> TensorValue:
        return self.sem.op("tile.program_id", [], i32, axis=IntegerAttr(_const(axis, "axis"), i32))

    def tl_num_programs(self, axis: Any = 0) -> TensorValue:
        axis_attr = IntegerAttr(_const(axis, "axis"), i32)
        return self.sem.op("tile.num_programs", [], i32, axis=axis_attr)

    def tl_arange(self, start: Any, end: Any) -> TensorValue:
        start, end = _const(start, "tl.arange's start"), _const(end, "tl.arange's end")
        if not is_power_of_two(end - start):
            raise UserError(
                f"tl.arange({start}, {end}) has {end - start} elements, not a power of two",
                "use a power-of-two range, e.g. tl.arange(0, 1024), and mask the excess elements",
            )
        attrs = {"start": IntegerAttr(start, i32), "end": IntegerAttr(end, i32)}
        return self.sem.op("tile.make_range", [], TensorType((end - start,), i32), **attrs)

    def tl_full(self, shape: Any, value: Any, dtype: Any) -> TensorValue:
        shape, element = _shape(shape), _ir_type(dtype)
        if isinstance(value, TensorValue):
            return self.sem.splat(self.sem.cast(value, element), shape)
        return self.sem.constant(_const(value, "value"), TensorType(shape, element))

    def tl_zeros(self, shape: Any, dtype: Any) -> TensorValue:
        return self.tl_full(shape, 0, dtype)

    def tl_load(self, pointer: Any, mask: Any = None, other: Any = None, **_: Any) -> TensorValue:
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
        return self.sem.op("tile.load", operands, result)

    def tl_store(self, pointer: Any, value: Any, mask: Any = None, **_: Any) -> None:
        ptr = self.value(pointer)
        pointee = self.sem.pointee(ptr)
        stored = self.sem.cast(self.sem.to_value(value, pointee), pointee)
        operands = [ptr, self.sem.broadcast_to(stored, ptr.shape)]
        if mask is not None:
            operands.append(self.sem.broadcast_to(self.sem.cast(self.value(mask), i1), ptr.shape))
        self.sem.op("tile.store", operands, None)

    def tl_atomic_add(self, pointer: Any, value: Any, mask: Any = None, **_: Any) -> TensorValue:
        ptr = self.value(pointer)
        pointee = self.sem.pointee(ptr)
        operands = [ptr, self.sem.broadcast_to(self.sem.to_value(value, pointee), ptr.shape)]
        operands[1] = self.sem.cast(operands[1], pointee)
        if mask is not None:
            operands.append(self.sem.broadcast_to(self.sem.cast(self.value(mask), i1), ptr.shape))
        attrs = {"kind": StringAttr("add"), "sem": StringAttr("acq_rel")}
        return self.sem.op("tile.atomic_rmw", operands, operands[1].type, **attrs, scope=_gpu())

    def tl_where(self, condition: Any, x: Any, y: Any) -> TensorValue:
        cond = self.sem.cast(self.value(condition), i1)
        probe_x = x if isinstance(x, TensorValue) else None
        probe_y = y if isinstance(y, TensorValue) else None
        anchor = probe_x or probe_y
        target = anchor.dtype if anchor else None
        if probe_x and probe_y and probe_x.dtype != probe_y.dtype:
            from tilec.frontend.semantics import computation_type

            target = computation_type(probe_x.dtype, probe_y.dtype, False, False, False)
        a = self.sem.cast(self.sem.to_value(x, target), target or self.sem.to_value(x).dtype)
        b = self.sem.cast(self.sem.to_value(y, a.dtype), a.dtype)
        cond, a, b = self.sem.broadcast_all(cond, a, b)
        return self.sem.op("arith.select", [cond, a, b], a.type)

    def _binary_math(self, x: Any, y: Any, int_name: str, float_name: str) -> TensorValue:
        a, b = self.value(x), self.value(y)
        target = a.dtype if a.dtype == b.dtype else self.sem.binary("+", a, b).dtype
        a, b = self.sem.broadcast_all(self.sem.cast(a, target), self.sem.cast(b, target))
        if isinstance(target, FloatType):
            return self.sem.op(f"arith.{float_name}", [a, b], a.type)
        prefix = "u" if target.unsigned else "s"  # type: ignore[attr-defined]
        return self.sem.op(f"arith.{int_name.format(prefix)}", [a, b], a.type)

    def tl_minimum(self, x: Any, y: Any, **_: Any) -> TensorValue:
        return self._binary_math(x, y, "min{}i", "minnumf")

    def tl_maximum(self, x: Any, y: Any, **_: Any) -> TensorValue:
        return self._binary_math(x, y, "max{}i", "maxnumf")

    def _float(self, x: Any) -> TensorValue:
        v = self.value(x)
        return v if isinstance(v.dtype, FloatType) else self.sem.cast(v, f32)

    def unary_math(self, name: str, x: Any) -> TensorValue:
        v = self._float(x)
        return self.sem.op(f"math.{name}", [v], v.type)

    def tl_abs(self, x: Any) -> TensorValue:
        v = self.value(x)
        name = "math.absf" if isinstance(v.dtype, FloatType) else "math.absi"
        return self.sem.op(name, [v], v.type)

    def tl_sigmoid(self, x: Any) -> TensorValue:
        v = self._float(x)
        exp = self.sem.op("math.exp", [self.sem.negate(v)], v.type)
        return self.sem.binary("/", 1.0, self.sem.binary("+", 1.0, exp))

    def tl_fma(self, x: Any, y: Any, z: Any) -> TensorValue:
        a, b, c = self.sem.broadcast_all(self._float(x), self._float(y), self._float(z))
        return self.sem.op("math.fma", [a, b, c], a.type)

    def tl_cdiv(self, x: Any, y: Any) -> Any:
        if not isinstance(x, TensorValue) and not isinstance(y, TensorValue):
            return -(-_const(x, "x") // _const(y, "y"))
        return self.sem.binary("//", self.sem.binary("-", self.sem.binary("+", x, y), 1), y)

    def _reduce(self, x: Any, axis: Any, kind: str) -> TensorValue:
        v = self.value(x)
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
        if kind == "add" and isinstance(v.dtype, IntegerType) and v.dtype.width < 32:
            v = self.sem.cast(v, i32)
        element = v.dtype
        reduced = v.shape[:axis] + v.shape[axis + 1 :]
        result_type = TensorType(reduced, element) if reduced else element
        combiner = Block([element, element])
        if isinstance(element, FloatType):
            name = {"add": "arith.addf", "max": "arith.maxnumf", "min": "arith.minnumf"}[kind]
        else:
            sign = "u" if element.unsigned else "s"  # type: ignore[attr-defined]
            name = {"add": "arith.addi", "max": f"arith.max{sign}i", "min": f"arith.min{sign}i"}[
                kind
            ]
        builder = self.sem.builder
        op = builder.create(_op("tile.reduce"), [v.value], [result_type], {"axis": _i32(axis)})
        op.regions[0].add_block(combiner)
        with builder.at(combiner):
            args: list[Value] = list(combiner.args)
            combined = builder.create(_op(name), args, [element])
            builder.create(_op("tile.reduce.return"), [combined.result])
        return TensorValue(op.result)

    def tl_sum(self, x: Any, axis: Any = None, **_: Any) -> TensorValue:
        return self._reduce(x, axis, "add")

    def tl_max(self, x: Any, axis: Any = None, **_: Any) -> TensorValue:
        return self._reduce(x, axis, "max")

    def tl_min(self, x: Any, axis: Any = None, **_: Any) -> TensorValue:
        return self._reduce(x, axis, "min")

    def tl_dot(self, a: Any, b: Any, acc: Any = None, **_: Any) -> TensorValue:
        a, b = self.value(a), self.value(b)
        if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
            raise UserError(
                f"tl.dot needs [M, K] x [K, N] operands, got {list(a.shape)} x {list(b.shape)}",
                "check the block shapes; use tl.trans(b) if b is laid out [N, K]",
            )
        if a.dtype != b.dtype:
            raise UserError(f"tl.dot operands must have one dtype, got {a.dtype} and {b.dtype}")
        shape = (a.shape[0], b.shape[1])
        if acc is None:
            out = i32 if isinstance(a.dtype, IntegerType) else f32
            acc_value = self.sem.constant(0, TensorType(shape, out))
        else:
            acc_value = self.value(acc)
            if acc_value.shape != shape:
                raise UserError(f"tl.dot accumulator must be {list(shape)}, got {acc_value.shape}")
        return self.sem.op("tile.dot", [a, b, acc_value], acc_value.type)

    def tl_trans(self, x: Any, *dims: Any) -> TensorValue:
        order = tuple(_const(d, "dims") for d in dims)
        if len(order) == 1 and isinstance(order[0], (tuple, list)):
            order = tuple(order[0])
        return self.sem.trans(self.value(x), order or None)

    def tl_reshape(self, x: Any, shape: Any, *more: Any, **_: Any) -> TensorValue:
        dims = _shape((shape, *more) if more else shape)
        return self.sem.reshape(self.value(x), dims)

    def tl_broadcast_to(self, x: Any, shape: Any, *more: Any) -> TensorValue:
        return self.sem.broadcast_to(self.value(x), _shape((shape, *more) if more else shape))

    def tl_expand_dims(self, x: Any, axis: Any) -> TensorValue:
        return self.sem.expand_dims(self.value(x), _const(axis, "axis"))

    def tl_multiple_of(self, x: Any, values: Any) -> Any:
        return x

    def tl_max_contiguous(self, x: Any, values: Any) -> Any:
        return x

    def tl_static_assert(self, condition: Any, message: Any = "") -> None:
        if not _const(condition, "tl.static_assert's condition"):
            raise UserError(f"static assertion failed: {_const(message, 'message')}")

    def tl_device_print(self, prefix: Any, *values: Any, **_: Any) -> None:
        operands = [self.value(v) for v in values]
        self.sem.op("tile.print", operands, None, prefix=StringAttr(_const(prefix, "prefix")))

    def tl_debug_barrier(self) -> None:
        self.sem.op("tile.barrier", [], None)


def _op(name: str):
    from tilec.frontend.semantics import op_class

    return op_class(name)


def _i32(value: int) -> IntegerAttr:
    return IntegerAttr(value, i32)


def _gpu() -> StringAttr:
    return StringAttr("gpu")
