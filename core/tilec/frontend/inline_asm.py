"""`tl.inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack)` as Triton 3.6 takes
it: `args` broadcast to one shape (no type promotion; Python numbers become i32/f32 scalars),
one result per dtype (a tuple where `dtype` is a sequence), `pack` elements per asm call. It is
one `tile.elementwise_inline_asm` op (`tilec.dialects.inline_asm`), `..._effects` where
`is_pure` is False, which the GPU backends lower to LLVM inline asm (`tilec.lowering.inline_asm`).
"""

from __future__ import annotations

from typing import Any

from tilec.dialects.inline_asm import ElementwiseInlineAsmEffectsOp, ElementwiseInlineAsmOp
from tilec.frontend.compat_builtins import constant_arg
from tilec.frontend.context import TensorValue
from tilec.frontend.errors import UserError
from tilec.ir.attributes import IntegerAttr, StringAttr
from tilec.ir.types import PointerType, TensorType, Type, i32
from tilec.language import dtype as tl_dtype

WHAT = "tl.inline_asm_elementwise"


def inline_asm_elementwise(builtins: Any, asm: Any, constraints: Any, args: Any, dtype: Any,
                           is_pure: Any, pack: Any) -> Any:  # fmt: skip
    asm, constraints = _text(asm, "asm"), _text(constraints, "constraints")
    pure, count = constant_arg(is_pure, f"{WHAT}'s is_pure"), constant_arg(pack, f"{WHAT}'s pack")
    if not isinstance(pure, bool):
        raise UserError(f"{WHAT}'s is_pure must be True or False, got {pure!r}")
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise UserError(f"{WHAT}'s pack must be an int of 1 or more, got {count!r}")
    dtypes, several = _dtypes(dtype)
    if isinstance(args, TensorValue) or not isinstance(args, (list, tuple)):
        raise UserError(
            f"{WHAT}'s args must be a list or tuple of values, got {type(args).__name__}",
            "pass args=[x] for one argument",
        )
    values = [builtins.value(a) for a in args]
    sem = builtins.sem
    shape = sem.broadcast_shape(*(v.shape for v in values)) if values else ()
    tensor = any(v.is_tensor for v in values)
    if tensor:
        values = [sem.broadcast_to(v, shape) for v in values]
    for t in [v.dtype for v in values] + dtypes:
        _check_pack(t, count)
    result_types = [TensorType(shape, t) if tensor else t for t in dtypes]
    cls = ElementwiseInlineAsmOp if pure else ElementwiseInlineAsmEffectsOp
    op = sem.create_op(
        cls,
        values,
        result_types,
        asm_string=StringAttr(asm),
        constraints=StringAttr(constraints),
        pack=IntegerAttr(count, i32),
    )
    results = [TensorValue(r) for r in op.results]
    return tuple(results) if several else results[0]


def _text(value: Any, what: str) -> str:
    text = constant_arg(value, f"{WHAT}'s {what}")
    if not isinstance(text, str):
        raise UserError(f"{WHAT}'s {what} must be a string, got {text!r}")
    return text


def _dtypes(value: Any) -> tuple[list[Type], bool]:
    """The result element types, and whether `dtype` was a sequence (results as a tuple)."""
    value = constant_arg(value, f"{WHAT}'s dtype")
    several = isinstance(value, (list, tuple))
    items = [constant_arg(v, f"{WHAT}'s dtype") for v in value] if several else [value]
    if not items:
        raise UserError(
            f"{WHAT} needs at least one result dtype, got an empty sequence",
            "return a dummy result you do not use, as Triton's documentation suggests",
        )
    for item in items:
        if not isinstance(item, tl_dtype) or item.ir_type is None:
            raise UserError(f"{WHAT}'s dtype must be a tl dtype or a tuple of them, got {item!r}")
    return [item.ir_type for item in items], several


def _check_pack(t: Type, pack: int) -> None:
    """Elements narrower than 32 bits travel `min(32 // bits, pack)` to a register: `pack` must
    be a multiple of that (Triton asserts it)."""
    bits = 64 if isinstance(t, PointerType) else t.width  # type: ignore[attr-defined]
    per_register = min(32 // bits, pack) if bits < 32 else 1
    if pack % per_register:
        raise UserError(
            f"{WHAT}: pack={pack} does not split into registers of {per_register} {t} elements",
            f"use a pack that is a multiple of {per_register}",
        )
