"""Triton's `tl` functions that compose from the ops `Builtins` already emits: casts (also of
pointers), `tl.math`'s extra functions, `softmax`, `swizzle2d`, `reduce_or`, and the compile-time
and debugging helpers (`static_print`, `device_assert`, `assume`, `max_constancy`).

Every argument is honoured or rejected with a located error (docs/triton-names.md says how each
function maps to tilec).
"""

from __future__ import annotations

from typing import Any

from tilec.dialects import arith, math, tile
from tilec.frontend import block_pointers, descriptors
from tilec.frontend.context import TensorValue
from tilec.frontend.errors import UserError
from tilec.frontend.semantics import computation_type, literal_type
from tilec.ir.attributes import StringAttr, UnitAttr
from tilec.ir.types import Float8Type, FloatType, IntegerType, PointerType, Type, i1, i64, like
from tilec.language import constexpr, dtype, pointer_type
from tilec.language import tensor as tl_tensor

tl_tensor.register(TensorValue)  # `isinstance(x, tl.tensor)` in a kernel holds for its values

u32, u64 = IntegerType(32, unsigned=True), IntegerType(64, unsigned=True)


def constant_arg(value: Any, what: str) -> Any:
    """The Python value of a compile-time argument; a runtime value is the user's error."""
    if isinstance(value, constexpr):
        value = value.value
    if isinstance(value, TensorValue):
        raise UserError(f"{what} must be a compile-time constant", "pass it as a tl.constexpr")
    return value


def dtype_arg(value: Any, what: str = "dtype") -> Type:
    value = constant_arg(value, what)
    if not isinstance(value, dtype):
        raise UserError(f"{what}: expected a tl dtype such as tl.float32, got {value!r}")
    return value.ir_type


class CompatBuiltinsMixin:
    """Mixed into `Builtins` (which provides `sem`, `value`, `unary_math`, `tl_max`, `tl_sum`,
    `tl_minimum`, `keep_dims`, `_axis` and `_combiner_op`)."""

    sem: Any

    # Tensor descriptors (`tilec.frontend.descriptors`) ----------------------------------------

    def tl_make_tensor_descriptor(
        self, base: Any, shape: Any, strides: Any, block_shape: Any, padding_option: Any = "zero"
    ) -> Any:
        return descriptors.make(self, base, shape, strides, block_shape, padding_option)

    def tl_load_tensor_descriptor(self, desc: Any, offsets: Any) -> TensorValue:
        pointers, mask = descriptors.block_access(self, desc, offsets)
        pointee = pointers.dtype.pointee  # type: ignore[attr-defined]
        if desc.padding == "nan" and not isinstance(pointee, FloatType):
            raise UserError(
                f"padding_option 'nan' needs a float tensor, the descriptor's is {pointee}"
            )
        other = float("nan") if desc.padding == "nan" else 0
        loaded = self.tl_load(pointers, mask, other)  # type: ignore[attr-defined]
        claimed = descriptors.claimed_load(self, desc, offsets, list(loaded.value.op.operands))
        if claimed is None:
            return loaded
        loaded.value.op.erase()  # the masked load it stands for: its operands, laid out as one
        return claimed

    def tl_store_tensor_descriptor(self, desc: Any, offsets: Any, value: Any) -> None:
        pointers, mask = descriptors.block_access(self, desc, offsets)
        block = self.value(value)  # type: ignore[attr-defined]
        if tuple(block.shape) != tuple(desc.block_shape):
            raise UserError(
                f"the descriptor's block is {list(desc.block_shape)}, the value stored is "
                f"{list(block.shape)}"
            )
        if not descriptors.claimed_store(self, desc, offsets, pointers, block, mask):
            self.tl_store(pointers, block, mask)  # type: ignore[attr-defined]

    # Block pointers (`tilec.frontend.block_pointers`) ----------------------------------------

    def tl_make_block_ptr(
        self, base: Any, shape: Any, strides: Any, offsets: Any, block_shape: Any, order: Any
    ) -> Any:
        return block_pointers.make(self, base, shape, strides, offsets, block_shape, order)

    def tl_advance(self, base: Any, offsets: Any) -> Any:
        return block_pointers.advance(self, base, offsets)

    # Casts ----------------------------------------------------------------------------------

    def tl_cast(
        self, input: Any, dtype: Any, fp_downcast_rounding: Any = None, bitcast: Any = False
    ) -> TensorValue:
        """`tl.cast(x, dtype, fp_downcast_rounding=None, bitcast=False)`, also `x.to(...)` and
        `x.cast(...)`; `dtype` may be a `tl.pointer_type` (pointer <-> pointer and int64)."""
        tensor = self.value(input)  # type: ignore[attr-defined]
        target = dtype_arg(dtype)
        rounding = constant_arg(fp_downcast_rounding, "fp_downcast_rounding")
        if isinstance(target, PointerType) or tensor.is_pointer:
            if rounding is not None:
                raise UserError("fp_downcast_rounding applies to float conversions, not pointers")
            return self.pointer_cast(tensor, target)
        if constant_arg(bitcast, "bitcast"):
            if rounding is not None:
                raise UserError("x.to() takes fp_downcast_rounding or bitcast=True, not both")
            return self.sem.bitcast(tensor, target)
        if rounding is not None:
            source = tensor.dtype
            floats = (FloatType, Float8Type)
            narrowing = (
                isinstance(source, floats)
                and isinstance(target, floats)
                and target.width < source.width
            )
            if not narrowing and source != target:  # to its own type: x itself, as Triton
                raise UserError(
                    "fp_downcast_rounding applies only to float conversions to a narrower type, "
                    f"not {source} to {target}"
                )
            if rounding != "rtne":
                raise UserError(
                    f"fp_downcast_rounding={rounding!r} is not supported by tilec yet",
                    'leave it out or use "rtne" (round to nearest even, the default)',
                )
        return self.sem.cast(tensor, target)

    def pointer_cast(self, x: TensorValue, target: Type) -> TensorValue:
        """Triton's pointer casts: pointer -> pointer (the same address), int64 -> pointer,
        pointer -> int64, pointer -> int1 (`!= 0`)."""
        source = x.dtype
        if isinstance(source, PointerType) and isinstance(target, PointerType):
            if source == target:
                return x
            address = self.sem.create(tile.PtrToIntOp, [x], like(x.type, i64))
            return self.sem.create(tile.IntToPtrOp, [address], like(x.type, target))
        if isinstance(target, PointerType):
            if source != i64:
                raise UserError(
                    f"cannot cast {source} to {target}: only int64 values become pointers",
                    "cast the address to tl.int64 first",
                )
            return self.sem.create(tile.IntToPtrOp, [x], like(x.type, target))
        if target == i64:
            return self.sem.create(tile.PtrToIntOp, [x], like(x.type, i64))
        if target == i1:
            address = self.sem.create(tile.PtrToIntOp, [x], like(x.type, i64))
            return self.sem.cast(address, i1)
        raise UserError(
            f"cannot cast a pointer ({source}) to {target}",
            "cast pointers to tl.int64, tl.int1 or another tl.pointer_type",
        )

    def tl_pointer_type(self, element_ty: Any, address_space: Any = 1, const: Any = False) -> Any:
        element = constant_arg(element_ty, "element_ty")
        try:
            return pointer_type(
                element, constant_arg(address_space, "address_space"), constant_arg(const, "const")
            )
        except (TypeError, ValueError) as err:
            raise UserError(str(err)) from None

    def tl_zeros_like(self, input: Any) -> TensorValue:
        x = self.value(input)  # type: ignore[attr-defined]
        zero = self.sem.constant(0, x.dtype)
        return self.sem.broadcast_to(zero, x.shape)

    # tl.math --------------------------------------------------------------------------------

    def tl_umulhi(self, x: Any, y: Any) -> TensorValue:
        """The high half of the unsigned 2N-bit product of two N-bit integers (N = 32 or 64),
        in the operands' common type, as Triton's `umulhi` (which treats both as unsigned)."""
        a, b = self._common_integers(x, y, "tl.umulhi")
        kind = a.dtype
        assert isinstance(kind, IntegerType)
        if kind.width not in (32, 64):
            raise UserError(f"tl.umulhi takes 32- or 64-bit integers, got {kind}")
        unsigned = IntegerType(kind.width, unsigned=True)
        a, b = self.sem.bitcast(a, unsigned), self.sem.bitcast(b, unsigned)
        if kind.width == 32:
            product = self.sem.binary("*", self.sem.cast(a, u64), self.sem.cast(b, u64))
            high = self.sem.cast(self.sem.binary(">>", product, 32), u32)
        else:
            high = self._umulhi64(a, b)
        return self.sem.bitcast(high, kind)

    def _umulhi64(self, a: TensorValue, b: TensorValue) -> TensorValue:
        """The high 64 bits of a u64 x u64 product, from four 32 x 32 -> 64-bit products."""
        binary = self.sem.binary
        low = 0xFFFFFFFF
        a_lo, a_hi = binary("&", a, low), binary(">>", a, 32)
        b_lo, b_hi = binary("&", b, low), binary(">>", b, 32)
        lo_lo, hi_lo = binary("*", a_lo, b_lo), binary("*", a_hi, b_lo)
        lo_hi, hi_hi = binary("*", a_lo, b_hi), binary("*", a_hi, b_hi)
        cross = binary("+", binary("+", binary(">>", lo_lo, 32), binary("&", hi_lo, low)), lo_hi)
        high = binary("+", hi_hi, binary(">>", hi_lo, 32))
        return binary("+", high, binary(">>", cross, 32))

    def _common_integers(self, x: Any, y: Any, what: str) -> list[TensorValue]:
        types = [
            v.dtype if isinstance(v, TensorValue) else literal_type(_unwrap(v)) for v in (x, y)
        ]
        literal = [not isinstance(v, TensorValue) for v in (x, y)]
        common = computation_type(types[0], types[1], literal[0], literal[1], False)
        if not isinstance(common, IntegerType):
            raise UserError(f"{what} takes integers, got {types[0]} and {types[1]}")
        values = [self.sem.cast(self.sem.to_value(_unwrap(v), common), common) for v in (x, y)]
        return self.sem.broadcast_all(*values)

    def _floats(self, x: Any, y: Any, what: str) -> tuple[TensorValue, TensorValue]:
        a, b = self.sem.to_value(_unwrap(x)), self.sem.to_value(_unwrap(y))
        if not isinstance(a.dtype, FloatType) or not isinstance(b.dtype, FloatType):
            raise UserError(
                f"{what} takes float operands, got {a.dtype} and {b.dtype}",
                "convert integers first, e.g. x.to(tl.float32)",
            )
        return a, b

    def tl_fdiv(self, x: Any, y: Any, ieee_rounding: Any = False) -> TensorValue:
        """Division of floats: Triton's fast `/` (float32 within 2 ulp on NVIDIA), or correctly
        rounded with `ieee_rounding=True` (Triton ignores it and divides fast; rounding
        correctly honours it and is a valid result of the fast division)."""
        ieee = constant_arg(ieee_rounding, "ieee_rounding")
        if not isinstance(ieee, bool):
            raise UserError("tl.fdiv's ieee_rounding must be True or False")
        return self.sem.binary("/", *self._floats(x, y, "tl.fdiv"), ieee=ieee)

    def tl_div_rn(self, x: Any, y: Any) -> TensorValue:
        """Float division rounded to nearest even (`arith.divf {ieee}`)."""
        return self.sem.binary("/", *self._floats(x, y, "tl.div_rn"), ieee=True)

    def tl_add_rn(self, x: Any, y: Any) -> TensorValue:
        """libdevice's `add_rn`: `x + y` rounded to nearest even, never fused into an FMA."""
        return self.sem.binary("+", *self._floats(x, y, "libdevice.add_rn"), contract=False)

    def tl_sub_rn(self, x: Any, y: Any) -> TensorValue:
        """libdevice's `sub_rn`: `x - y` rounded to nearest even, never fused into an FMA."""
        return self.sem.binary("-", *self._floats(x, y, "libdevice.sub_rn"), contract=False)

    def tl_mul_rn(self, x: Any, y: Any) -> TensorValue:
        """libdevice's `mul_rn`: `x * y` rounded to nearest even, never fused into an FMA."""
        return self.sem.binary("*", *self._floats(x, y, "libdevice.mul_rn"), contract=False)

    def tl_sqrt_rn(self, x: Any) -> TensorValue:
        """Square root rounded to nearest even (`math.sqrt {ieee}`; `tl.sqrt` may be faster)."""
        self.sem.reject_float8("tl.sqrt_rn", self.value(x))  # type: ignore[attr-defined]
        v = self._float(x)  # type: ignore[attr-defined]
        return self.sem.create(math.SqrtOp, [v], v.type, ieee=UnitAttr())

    def _arith(self, symbol: str, x: Any, y: Any, sanitize_overflow: Any) -> TensorValue:
        if not isinstance(constant_arg(sanitize_overflow, "sanitize_overflow"), bool):
            raise UserError("sanitize_overflow must be True or False")
        return self.sem.binary(symbol, self.value(x), y)  # type: ignore[attr-defined]

    def tl_add(self, x: Any, y: Any, sanitize_overflow: Any = True) -> TensorValue:
        """`x + y`. `sanitize_overflow` asks for overflow checks in Triton's debug mode; tilec
        has no such mode and wraps, as Triton does outside it, for either value."""
        return self._arith("+", x, y, sanitize_overflow)

    def tl_sub(self, x: Any, y: Any, sanitize_overflow: Any = True) -> TensorValue:
        """`x - y` (see `tl_add` on `sanitize_overflow`)."""
        return self._arith("-", x, y, sanitize_overflow)

    def tl_mul(self, x: Any, y: Any, sanitize_overflow: Any = True) -> TensorValue:
        """`x * y` (see `tl_add` on `sanitize_overflow`)."""
        return self._arith("*", x, y, sanitize_overflow)

    def tl_softmax(
        self, x: Any, dim: Any = None, keep_dims: Any = False, ieee_rounding: Any = False
    ) -> TensorValue:
        """Triton's `softmax`: `exp(x - max(x, dim)) / sum(...)`, `dim` None meaning 0."""
        axis = constant_arg(dim, "dim")
        axis = 0 if axis is None else axis
        v = self.value(x)  # type: ignore[attr-defined]
        shifted = self.sem.binary("-", v, self.tl_max(v, axis, keep_dims=keep_dims))  # type: ignore[attr-defined]
        numerator = self.unary_math(math.ExpOp, shifted)  # type: ignore[attr-defined]
        denominator = self.tl_sum(numerator, axis, keep_dims=keep_dims)  # type: ignore[attr-defined]
        return self.tl_fdiv(numerator, denominator, ieee_rounding)

    def tl_swizzle2d(self, i: Any, j: Any, size_i: Any, size_j: Any, size_g: Any) -> tuple:
        """Triton's `swizzle2d`: row-major (i, j) of a `size_i x size_j` matrix to the column-
        major order within groups of `size_g` rows."""

        def op(symbol: str, a: Any, b: Any) -> Any:
            a, b = _unwrap(a), _unwrap(b)
            if isinstance(a, TensorValue) or isinstance(b, TensorValue):
                return self.sem.binary(symbol, a, b)
            return {"+": a + b, "*": a * b, "-": a - b, "//": a // b, "%": a % b}[symbol]

        ij = op("+", op("*", i, size_j), j)
        size_gj = op("*", size_g, size_j)
        off_i = op("*", op("//", ij, size_gj), size_g)
        rows = op("-", size_i, off_i)
        if isinstance(rows, TensorValue) or isinstance(_unwrap(size_g), TensorValue):
            group = self.tl_minimum(rows, size_g)  # type: ignore[attr-defined]
        else:
            group = min(rows, _unwrap(size_g))
        ij = op("%", ij, size_gj)
        return op("+", off_i, op("%", ij, group)), op("//", ij, group)

    def tl_reduce_or(self, input: Any, axis: Any, keep_dims: Any = False) -> TensorValue:
        """The bitwise or of the elements along `axis` (integers only)."""
        source = self.value(input)  # type: ignore[attr-defined]
        if not isinstance(source.dtype, IntegerType) or not source.is_tensor:
            raise UserError(f"tl.reduce_or needs an integer tensor, got {source.type}")
        (v,), axis_index = self._axis([source], axis, "tl.reduce_or")  # type: ignore[attr-defined]

        def combine(lhs: list[TensorValue], rhs: list[TensorValue]) -> list[Any]:
            return [self.sem.create(arith.OrIOp, [lhs[0], rhs[0]], lhs[0].type)]

        (result,) = self._combiner_op(tile.ReduceOp, [v], axis_index, combine)  # type: ignore[attr-defined]
        return self.keep_dims(result, source, axis, keep_dims)  # type: ignore[attr-defined]

    # Compile-time and debugging helpers -----------------------------------------------------

    def tl_static_print(
        self, *values: Any, sep: Any = " ", end: Any = "\n", flush: Any = False
    ) -> None:
        """Print at compile time (once per compilation, as Triton): constants as their values,
        runtime values as their types."""
        shown = [_static_text(v) for v in values]
        print(
            *shown,
            sep=constant_arg(sep, "sep"),
            end=constant_arg(end, "end"),
            flush=bool(constant_arg(flush, "flush")),
        )

    def tl_device_assert(self, cond: Any, msg: Any = "", mask: Any = None) -> None:
        """Fail the launch where `cond` is false (and `mask`, if given, true). Triton checks only
        when compiled with debug=True; tilec checks always."""
        message = constant_arg(msg, "msg")
        if not isinstance(message, str):
            raise UserError(f"tl.device_assert's msg must be a string, got {message!r}")
        condition = self.value(cond)  # type: ignore[attr-defined]
        if isinstance(condition.dtype, PointerType):
            raise UserError("tl.device_assert's condition must be a number or a boolean")
        condition = self.sem.cast(condition, i1)
        if mask is not None:
            masked_off = self.sem.logical_not(self.value(mask))  # type: ignore[attr-defined]
            condition = self.sem.binary("|", condition, masked_off)
        self.sem.create_op(tile.AssertOp, [condition], message=StringAttr(message))

    def tl_assume(self, cond: Any) -> None:
        """A promise that `cond` holds, which lets Triton optimize; tilec keeps no such facts,
        so nothing is emitted (and nothing checked, as in Triton)."""
        condition = _unwrap(cond)
        if not isinstance(condition, (TensorValue, bool, int)):
            raise UserError(f"tl.assume takes a condition, got {condition!r}")
        if condition is False:
            raise UserError("tl.assume(False): the condition is false at compile time")

    def tl_max_constancy(self, input: Any, values: Any) -> Any:
        """A promise that runs of `values` elements are equal; tilec's analysis derives
        constancy itself, so the promise is checked for form and the value returned."""
        tensor = self.value(input)  # type: ignore[attr-defined]
        hint = constant_arg(values, "tl.max_constancy's values")
        hint = [hint] if isinstance(hint, int) else list(hint)
        if len(hint) != max(len(tensor.shape), 1) or not all(
            isinstance(v, int) and v > 0 for v in hint
        ):
            raise UserError(
                f"tl.max_constancy takes one positive int per dimension, got {values!r}"
            )
        return tensor


def _unwrap(value: Any) -> Any:
    return value.value if isinstance(value, constexpr) else value


def _static_text(value: Any) -> str:
    value = _unwrap(value)
    if isinstance(value, TensorValue):
        return str(value.type)
    return str(value)
