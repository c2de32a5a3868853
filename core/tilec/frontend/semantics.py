"""Triton's typing rules: literal types, promotion, broadcasting, casts and arithmetic ops."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tilec.dialects import arith, tile
from tilec.dialects.float8 import FpToFpOp
from tilec.frontend.context import TensorValue
from tilec.frontend.errors import UserError
from tilec.ir.attributes import Attribute, IntegerAttr, StringAttr, UnitAttr, int_array
from tilec.ir.builder import Builder
from tilec.ir.core import Operation
from tilec.ir.type_names import BY_IR_TYPE
from tilec.ir.types import (
    Float8Type,
    FloatType,
    IntegerType,
    PointerType,
    TensorType,
    Type,
    f16,
    f32,
    i1,
    i32,
    i64,
    like,
)

INT_BINARY: dict[str, type[Operation]] = {
    "+": arith.AddIOp, "-": arith.SubIOp, "*": arith.MulIOp, "//": arith.DivSIOp,
    "%": arith.RemSIOp, "&": arith.AndIOp, "|": arith.OrIOp, "^": arith.XOrIOp,
    "<<": arith.ShLIOp, ">>": arith.ShRSIOp,
}  # fmt: skip
UNSIGNED_BINARY: dict[str, type[Operation]] = {
    "//": arith.DivUIOp, "%": arith.RemUIOp, ">>": arith.ShRUIOp,
}  # fmt: skip
FLOAT_BINARY: dict[str, type[Operation]] = {
    "+": arith.AddFOp, "-": arith.SubFOp, "*": arith.MulFOp, "/": arith.DivFOp, "%": arith.RemFOp,
}  # fmt: skip
MAX_TENSOR_ELEMENTS = 1 << 20
"""The most elements a tensor (a block) may have, as in Triton: bigger blocks take minutes to
compile for a GPU and exhaust memory in the interpreter."""

COMPARE = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}


def literal_type(value: Any) -> Type:
    """The IR type of a Python constant used as a value: bool i1, int i32 (or i64), float f32."""
    if isinstance(value, bool):
        return i1
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return i32
        if -(2**63) <= value < 2**64:
            return i64
        raise UserError(f"integer literal {value} does not fit in 64 bits")
    if isinstance(value, float):
        return f32
    if value is None:
        raise UserError("None cannot be used as a kernel value", NONE_HINT)
    raise UserError(
        f"{value!r} of type {type(value).__name__} cannot be used as a kernel value",
        "use a number, a tl dtype or a tensor",
    )


NONE_HINT = (
    "an argument passed as None is a compile-time None (as in Triton): use it only under "
    "`if x is not None:`, or pass a tensor"
)


def _rank(t: Type) -> int:
    if isinstance(t, FloatType):
        return 100 + t.width + (1 if t.name == "bf16" else 0)
    assert isinstance(t, IntegerType)
    return t.width * 2 + (1 if t.unsigned else 0)


def computation_type(a: Type, b: Type, a_literal: bool, b_literal: bool, div: bool) -> Type:
    """Triton's promotion: float wins over int, wider wins, fp16 with bf16 is f32, literals adapt."""
    if a_literal and not b_literal:
        a = b if not (isinstance(a, FloatType) and isinstance(b, IntegerType)) else a
    elif b_literal and not a_literal:
        b = a if not (isinstance(b, FloatType) and isinstance(a, IntegerType)) else b
    if isinstance(a, FloatType) or isinstance(b, FloatType):
        if isinstance(a, FloatType) and isinstance(b, FloatType):
            if {a.name, b.name} == {"f16", "bf16"}:
                return f32
            return a if a.width >= b.width else b
        return a if isinstance(a, FloatType) else b
    if div:
        return f32
    if a == i1 and b == i1:
        return i1
    assert isinstance(a, IntegerType) and isinstance(b, IntegerType)
    if a.width == b.width:
        return a if a.unsigned else b
    return a if _rank(a) > _rank(b) else b


def check_tensor_size(result_type: Type) -> None:
    """A tensor of more than MAX_TENSOR_ELEMENTS elements is the user's error."""
    if isinstance(result_type, TensorType) and result_type.numel > MAX_TENSOR_ELEMENTS:
        raise UserError(
            f"a tensor of shape {list(result_type.shape)} has {result_type.numel} "
            f"elements, more than the limit of {MAX_TENSOR_ELEMENTS} (2**20, as in Triton)",
            "use a smaller block size and loop over the data in blocks",
        )


class Semantics:
    """Emits the ops for typed operations at the builder's insertion point and location."""

    def __init__(self, builder: Builder):
        self.builder = builder

    def create_op(
        self,
        cls: type[Operation],
        operands: Sequence[TensorValue],
        result_types: Sequence[Type] = (),
        **attributes: Attribute,
    ) -> Operation:
        """Emit an op of class `cls` at the builder's insertion point and location. Every tensor
        the frontend makes passes here: one that is too big is the user's error, located."""
        if _computes(cls) and any(isinstance(v.dtype, Float8Type) for v in operands):
            dtype = next(v.dtype for v in operands if isinstance(v.dtype, Float8Type))
            raise float8_arithmetic_error(f"'{cls.name}'", dtype)
        for result_type in result_types:
            check_tensor_size(result_type)
        return self.builder.create(cls, [v.value for v in operands], result_types, attributes)

    def create(
        self,
        cls: type[Operation],
        operands: Sequence[TensorValue],
        result_type: Type,
        **attributes: Attribute,
    ) -> TensorValue:
        """Emit an op of class `cls` with one result of `result_type`, and return that result."""
        return TensorValue(self.create_op(cls, operands, [result_type], **attributes).result)

    def constant(self, value: Any, type_: Type) -> TensorValue:
        element = type_.element_type if isinstance(type_, TensorType) else type_
        if isinstance(element, Float8Type):  # no 8-bit constants: an f32 one, converted
            return self.cast(self.constant(float(value), like(type_, f32)), element)
        integer = isinstance(element, IntegerType) and isinstance(value, int)
        if integer and not _fits(value, element):
            raise UserError(
                f"the constant {value} does not fit in {element}: it is out of range for the type",
                "cast the other operand to a wider type first, e.g. x.to(tl.int64)",
            )
        return self.create(arith.ConstantOp, [], type_, value=arith.constant_attr(value, type_))

    def to_value(self, x: Any, type_: Type | None = None) -> TensorValue:
        """Materialize a Python constant (of `type_`, else its literal type) as a value."""
        if isinstance(x, TensorValue):
            return x
        if x is None:
            raise UserError("None cannot be used as a kernel value", NONE_HINT)
        return self.constant(x, type_ or literal_type(x))

    # Shapes --------------------------------------------------------------------------------

    def splat(self, x: TensorValue, shape: tuple[int, ...]) -> TensorValue:
        return self.create(tile.SplatOp, [x], TensorType(shape, x.type))

    def expand_dims(self, x: TensorValue, axis: int) -> TensorValue:
        if not x.is_tensor:
            return self.splat(x, (1,))
        if axis < 0:
            axis += len(x.shape) + 1
        shape = (*x.shape[:axis], 1, *x.shape[axis:])
        return self.create(
            tile.ExpandDimsOp, [x], TensorType(shape, x.dtype), axis=IntegerAttr(axis, i32)
        )

    def broadcast_to(self, x: TensorValue, shape: tuple[int, ...]) -> TensorValue:
        shape = tuple(shape)
        if not x.is_tensor:
            return self.splat(x, shape) if shape else x
        if x.shape == shape:
            return x
        while len(x.shape) < len(shape):
            x = self.expand_dims(x, 0)
        if len(x.shape) != len(shape) or any(
            s not in (1, t) for s, t in zip(x.shape, shape, strict=True)
        ):
            raise UserError(
                f"cannot broadcast shape {list(x.shape)} to {list(shape)}",
                "dimensions must match or be 1; use x[:, None] or tl.reshape to line them up",
            )
        return self.create(tile.BroadcastOp, [x], TensorType(shape, x.dtype))

    def broadcast_shape(self, *shapes: tuple[int, ...]) -> tuple[int, ...]:
        rank = max(len(s) for s in shapes)
        padded = [(1,) * (rank - len(s)) + tuple(s) for s in shapes]
        result = []
        for dims in zip(*padded, strict=True):
            sizes = {d for d in dims if d != 1}
            if len(sizes) > 1:
                shown = " and ".join(str(list(s)) for s in shapes)
                raise UserError(
                    f"shape mismatch: {shown} cannot be broadcast together",
                    "dimensions must match or be 1; use x[:, None] or tl.reshape to line them up",
                )
            result.append(sizes.pop() if sizes else 1)
        return tuple(result)

    def broadcast_all(self, *values: TensorValue) -> list[TensorValue]:
        shape = self.broadcast_shape(*(v.shape for v in values))
        return [self.broadcast_to(v, shape) for v in values]

    def trans(self, x: TensorValue, order: tuple[int, ...] | None = None) -> TensorValue:
        if not x.is_tensor:
            raise UserError(
                f"tl.trans needs a tensor, got a scalar of type {x.type}",
                "a scalar has no dimensions to permute: use it as it is",
            )
        rank = len(x.shape)
        if not order and rank < 2:
            raise UserError(
                "tl.trans invoked with a 0- or 1-dimensional tensor",
                "a 1-D block is its own transpose: use it as it is",
            )
        # Triton's default: the last two axes swapped (a 2-D transpose, batched)
        order = tuple(order) if order else (*range(rank - 2), rank - 1, rank - 2)
        if sorted(order) != list(range(len(x.shape))):
            raise UserError(
                f"tl.trans's dims {list(order)} are not a permutation of the {len(x.shape)} "
                f"dimensions of shape {list(x.shape)}"
            )
        shape = tuple(x.shape[i] for i in order)
        return self.create(tile.TransOp, [x], TensorType(shape, x.dtype), order=int_array(order))

    def reshape(self, x: TensorValue, shape: tuple[int, ...]) -> TensorValue:
        numel = 1
        for d in shape:
            numel *= d
        if not x.is_tensor:  # a scalar is one element: it fills a shape of one element
            if numel != 1:
                raise UserError(
                    f"cannot reshape a scalar to {list(shape)}: sizes differ",
                    "to fill a tensor with it, use tl.full(shape, x, dtype) or "
                    "tl.broadcast_to(x, shape)",
                )
            return self.splat(x, tuple(shape))
        if x.type.numel != numel:  # type: ignore[attr-defined]
            raise UserError(f"cannot reshape {list(x.shape)} to {list(shape)}: sizes differ")
        return self.create(tile.ReshapeOp, [x], TensorType(tuple(shape), x.dtype))

    # Casts ---------------------------------------------------------------------------------

    def cast(self, x: TensorValue, target: Type) -> TensorValue:
        source = x.dtype
        if source == target:
            return x
        result = like(x.type, target)
        if isinstance(source, Float8Type) or isinstance(target, Float8Type):
            return self.cast_float8(x, target)
        if isinstance(target, IntegerType) and target.width == 1:
            zero = self.broadcast_to(self.constant(0, source), x.shape)
            if isinstance(source, FloatType):
                return self.create(arith.CmpFOp, [x, zero], result, predicate=StringAttr("une"))
            return self.create(arith.CmpIOp, [x, zero], result, predicate=StringAttr("ne"))
        if isinstance(source, FloatType) and isinstance(target, FloatType):
            if source.width == target.width:
                return self.cast(self.cast(x, f32), target)
            resize = arith.ExtFOp if target.width > source.width else arith.TruncFOp
            return self.create(resize, [x], result)
        if isinstance(source, IntegerType) and isinstance(target, IntegerType):
            if source.width == target.width:
                return self.create(arith.BitcastOp, [x], result)
            if target.width < source.width:
                return self.create(arith.TruncIOp, [x], result)
            extend = arith.ExtUIOp if source.unsigned or source.width == 1 else arith.ExtSIOp
            return self.create(extend, [x], result)
        if isinstance(source, IntegerType) and isinstance(target, FloatType):
            convert = arith.UIToFPOp if source.unsigned or source.width == 1 else arith.SIToFPOp
            return self.create(convert, [x], result)
        if isinstance(source, FloatType) and isinstance(target, IntegerType):
            convert = arith.FPToUIOp if target.unsigned else arith.FPToSIOp
            return self.create(convert, [x], result)
        raise UserError(f"cannot cast {source} to {target}")

    def cast_float8(self, x: TensorValue, target: Type) -> TensorValue:
        """Conversions with an 8-bit float side: `tile.fp_to_fp` between floats (rounding to
        nearest even where the result is 8-bit, as Triton's default), through f32 with integers
        (exact: every integer that f32 rounds saturates every 8-bit format)."""
        source = x.dtype
        floats = (FloatType, Float8Type)
        if isinstance(source, floats) and isinstance(target, floats):
            rounding = {"rounding": StringAttr("rtne")} if isinstance(target, Float8Type) else {}
            return self.create(FpToFpOp, [x], like(x.type, target), **rounding)
        if isinstance(source, IntegerType) or isinstance(target, IntegerType):
            return self.cast(self.cast(x, f32), target)
        raise UserError(f"cannot cast {source} to {target}")

    def reject_float8(self, what: str, x: TensorValue) -> None:
        """Triton computes nothing in 8-bit floats: `what` (`tl.exp`) of one is the user's error."""
        if isinstance(x.dtype, Float8Type):
            raise float8_arithmetic_error(what, x.dtype)

    def upcast_float8(self, x: TensorValue) -> TensorValue:
        """`x` converted to f16 (exactly) if it holds 8-bit floats: what `tl.dot` computes with."""
        return self.cast(x, f16) if isinstance(x.dtype, Float8Type) else x

    def bitcast(self, x: TensorValue, target: Type) -> TensorValue:
        """Reinterpret the bits of `x` as `target` (`x.to(target, bitcast=True)`)."""
        source = x.dtype
        if source == target:
            return x
        numeric = (IntegerType, FloatType, Float8Type)
        if not isinstance(source, numeric) or not isinstance(target, numeric):
            raise UserError(f"cannot bitcast {source} to {target}", "bitcast numbers only")
        if source.width != target.width:
            raise UserError(
                f"cannot bitcast {source} to {target}: they have different sizes",
                "bitcast between types of one width, e.g. tl.float32 and tl.int32",
            )
        return self.create(arith.BitcastOp, [x], like(x.type, target))

    # Arithmetic ----------------------------------------------------------------------------

    def binary(
        self, symbol: str, lhs: Any, rhs: Any, contract: bool = True, ieee: bool = False
    ) -> TensorValue:
        """`lhs symbol rhs` with Triton's promotions; `contract=False` marks a float op
        `nocontract` (kept out of FMAs under `enable_fp_fusion`), `ieee=True` a float `/`
        `ieee` (correctly rounded; Triton's `/` may be faster, within 2 ulp)."""
        lhs_literal, rhs_literal = (
            not isinstance(lhs, TensorValue),
            not isinstance(rhs, TensorValue),
        )
        if any(isinstance(v, TensorValue) and v.is_pointer for v in (lhs, rhs)):
            return self.pointer_arith(symbol, self.to_value(lhs), self.to_value(rhs))
        lt = literal_type(lhs) if lhs_literal else lhs.dtype
        rt = literal_type(rhs) if rhs_literal else rhs.dtype
        if symbol in ("/", "//", "%") and not lhs_literal and not rhs_literal:
            _check_same_signedness(symbol, lt, rt)
        if isinstance(lt, Float8Type) or isinstance(rt, Float8Type):
            target = float8_computation_type(symbol, lt, rt, lhs_literal, rhs_literal)
        else:
            target = computation_type(lt, rt, lhs_literal, rhs_literal, symbol == "/")
        if isinstance(target, IntegerType) and target.unsigned:
            _check_no_negative_literal(symbol, (lhs, rhs) if lhs_literal else (rhs, lhs), target)
        a, b = lhs, rhs
        if lhs_literal:
            a = self.constant(lhs, target)
        if rhs_literal:
            b = self.constant(rhs, target)
        a, b = self.broadcast_all(self.cast(a, target), self.cast(b, target))
        if symbol in COMPARE:
            return self.compare(symbol, a, b)
        if isinstance(target, FloatType):
            if symbol not in FLOAT_BINARY:
                raise UserError(
                    f"operator {symbol} is not defined for {target}: invalid operands of type "
                    f"{tl_name(lt)} and {tl_name(rt)}",
                    _INT_ONLY_HINT,
                )
            flags = {} if contract else {"nocontract": UnitAttr()}
            if ieee and symbol == "/":
                flags["ieee"] = UnitAttr()
            return self.create(FLOAT_BINARY[symbol], [a, b], a.type, **flags)
        if symbol == "/":
            raise UserError("internal: integer true division")
        unsigned = isinstance(target, IntegerType) and target.unsigned
        if symbol == ">>":  # Triton: the shifted operand's own signedness picks the shift
            shifted = rhs if lhs_literal else lhs
            unsigned = shifted.dtype.unsigned  # type: ignore[union-attr]
        cls = UNSIGNED_BINARY.get(symbol) if unsigned else None
        return self.create(cls or INT_BINARY[symbol], [a, b], a.type)

    def compare(self, symbol: str, a: TensorValue, b: TensorValue) -> TensorValue:
        kind = COMPARE[symbol]
        result = like(a.type, i1)
        if isinstance(a.dtype, FloatType):
            predicate = "une" if kind == "ne" else f"o{kind}"
            return self.create(arith.CmpFOp, [a, b], result, predicate=StringAttr(predicate))
        unsigned = a.dtype.unsigned or a.dtype == i1  # type: ignore[attr-defined]
        predicate = kind if kind in ("eq", "ne") else ("u" if unsigned else "s") + kind
        return self.create(arith.CmpIOp, [a, b], result, predicate=StringAttr(predicate))

    def pointer_arith(self, symbol: str, a: TensorValue, b: TensorValue) -> TensorValue:
        if b.is_pointer and symbol == "+":
            a, b = b, a
        if symbol not in ("+", "-") or b.is_pointer or not isinstance(b.dtype, IntegerType):
            raise UserError(
                f"operator {symbol} is not defined between {a.type} and {b.type}",
                "add integer offsets to a pointer: ptr + offsets",
            )
        if symbol == "-":
            b = self.negate(b)
        shape = self.broadcast_shape(a.shape, b.shape)
        a, b = self.broadcast_to(a, shape), self.broadcast_to(b, shape)
        return self.create(tile.AddPtrOp, [a, b], a.type)

    def negate(self, x: TensorValue) -> TensorValue:
        if isinstance(x.dtype, Float8Type):
            raise float8_arithmetic_error("unary -", x.dtype)
        if isinstance(x.dtype, FloatType):
            return self.create(arith.NegFOp, [x], x.type)
        zero = self.broadcast_to(self.constant(0, x.dtype), x.shape)
        return self.create(arith.SubIOp, [zero, x], x.type)

    def invert(self, x: TensorValue) -> TensorValue:
        if not isinstance(x.dtype, IntegerType):
            raise UserError(
                f"operator ~ is not defined for {x.dtype}: wrong type argument to unary invert "
                f"({tl_name(x.dtype)})",
                _INT_ONLY_HINT,
            )
        ones = self.broadcast_to(self.constant(-1, x.dtype), x.shape)
        return self.create(arith.XOrIOp, [x, ones], x.type)

    def logical_not(self, x: TensorValue) -> TensorValue:
        x = self.cast(x, i1)
        ones = self.broadcast_to(self.constant(1, i1), x.shape)
        return self.create(arith.XOrIOp, [x, ones], x.type)

    def pointee(self, ptr: TensorValue) -> Type:
        if not ptr.is_pointer:
            raise UserError(
                f"expected a pointer, got a value of type {ptr.type}",
                "pass a pointer argument (a '*fp32'-like signature) plus offsets",
            )
        assert isinstance(ptr.dtype, PointerType)
        return ptr.dtype.pointee


_INT_ONLY_HINT = "bitwise and shift operators need integer operands; cast with x.to(tl.int32)"


def float8_arithmetic_error(what: str, t: Type) -> UserError:
    return UserError(
        f"{what} is not defined for {tl_name(t)}: Triton computes nothing in 8-bit floats "
        "(only tl.dot takes them)",
        f"convert first, e.g. x.to(tl.float16) or x.to(tl.float32), and back with "
        f"y.to({tl_name(t)})",
    )


_MOVES_FLOAT8 = (arith.SelectOp, arith.BitcastOp, arith.ConstantOp, FpToFpOp)
_COMPUTES_FLOAT8 = (
    tile.ReduceOp, tile.ScanOp, tile.AtomicRMWOp, tile.AtomicCASOp, tile.DotOp, tile.PrintOp,
)  # fmt: skip


def _computes(cls: type[Operation]) -> bool:
    """Whether ops of `cls` compute with their operands' values (and so cannot take 8-bit
    floats), rather than move them."""
    if cls in _MOVES_FLOAT8:
        return False
    return cls.__module__ in (arith.__name__, "tilec.dialects.math") or cls in _COMPUTES_FLOAT8


def float8_computation_type(symbol: str, a: Type, b: Type, a_literal: bool, b_literal: bool):
    """Triton's promotion with an 8-bit float operand: a wider float tensor's type wins (f32
    with bf16), two different 8-bit types meet in f16; an 8-bit result (the same 8-bit types, or
    with a Python number) and integer tensors are rejected, as Triton's compiler does."""
    if a_literal or b_literal or (isinstance(a, Float8Type) and a == b):
        raise float8_arithmetic_error(f"operator {symbol}", a if isinstance(a, Float8Type) else b)
    if isinstance(a, Float8Type) and isinstance(b, Float8Type):
        return f16
    other = b if isinstance(a, Float8Type) else a
    if not isinstance(other, FloatType):
        raise UserError(
            f"operator {symbol} is not defined between {tl_name(a)} and {tl_name(b)} "
            "(Triton: unexpected type)",
            "convert the 8-bit float first, e.g. x.to(tl.float32)",
        )
    return f32 if other.name == "bf16" else other


def tl_name(t: Type) -> str:
    """`t` as kernel authors spell it (`tl.float32`), as Triton's messages name types."""
    names = BY_IR_TYPE.get(t)
    return f"tl.{names.language}" if names is not None else str(t)


def _check_same_signedness(symbol: str, a: Type, b: Type) -> None:
    """Triton refuses `/`, `//` and `%` between integer tensors of different signedness."""
    if not (isinstance(a, IntegerType) and isinstance(b, IntegerType)):
        return
    if a.unsigned == b.unsigned:
        return
    raise UserError(
        f"cannot use {symbol} with {tl_name(a)} and {tl_name(b)} because they have different "
        "signedness; this is unlikely to result in a useful answer (Triton rejects it too)",
        "cast them to the same signedness, e.g. x.to(tl.int32) or y.to(tl.uint32)",
    )


def _check_no_negative_literal(symbol: str, operands: tuple, target: Type) -> None:
    """Triton refuses a negative Python number with an unsigned tensor (it would wrap)."""
    literal, other = operands
    if isinstance(literal, TensorValue) or not isinstance(literal, int) or literal >= 0:
        return
    if isinstance(other, TensorValue):
        raise UserError(
            f"cannot perform {symbol} between an unsigned tensor ({tl_name(target)}) and a "
            f"negative scalar ({literal}) (Triton rejects it too)",
            "perform an explicit cast on one of them, e.g. x.to(tl.int64)",
        )


def check_atomic_type(name: str, kind: str, pointee: Type) -> None:
    """Triton's limits on atomics: `tl.atomic_cas` needs 16-, 32- or 64-bit elements, the others
    32- or 64-bit ones (and fp16/bf16 for `tl.atomic_add`)."""
    if isinstance(pointee, Float8Type):
        raise float8_arithmetic_error(name, pointee)
    width = getattr(pointee, "width", 64)
    if kind == "cas":
        if width not in (16, 32, 64):
            raise UserError(
                f"{name} only supports elements with width {{16, 32, 64}}, got {tl_name(pointee)} "
                "(Triton rejects it too)",
                "use a wider buffer, e.g. tl.int32",
            )
        return
    if isinstance(pointee, FloatType) and width == 16 and kind != "add":
        raise UserError(
            f"{name} does not support {tl_name(pointee)} (Triton rejects it too; of the 16-bit "
            "floats only tl.atomic_add)",
            "use a tl.float32 buffer",
        )
    if isinstance(pointee, IntegerType) and width < 32:
        raise UserError(
            f"{name} does not support {tl_name(pointee)} (Triton rejects it too: atomics need "
            "32- or 64-bit integers)",
            "use a tl.int32 (or tl.int64) buffer",
        )


def _fits(value: int, element: Any) -> bool:
    """Whether `value` is a bit pattern of `element`: in its signed or its unsigned range."""
    if element.width == 1:
        return value in (0, 1, -1)
    return -(2 ** (element.width - 1)) <= value < 2**element.width
