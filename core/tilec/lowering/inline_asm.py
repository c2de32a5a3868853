"""`tile.elementwise_inline_asm` -> one LLVM inline-asm call per `pack` registers, as Triton's
`ElementwiseInlineAsmOpConversion` emits it, so the same assembly text and constraints mean the
same on tilec:

- the thread's registers are taken `pack` at a time, in register order (the last group padded
  with `undef`); each call gets, per operand in order, the group's elements, those narrower than
  32 bits packed `min(32 / bits, pack)` to a vector register (the first in the low bits);
- it returns, per result in order, the group's elements, packed the same way, as one value or
  a struct of them;
- a pure asm is plain (`asm "..."`), one with effects `asm sideeffect "..."`.

The assembly and constraints are target text (PTX, AMDGCN), passed through unchanged; LLVM
reads `$N` as the N-th output-then-input operand.
"""

from __future__ import annotations

from llvmlite import ir

from tilec.dialects.inline_asm import ElementwiseInlineAsmEffectsOp, ElementwiseInlineAsmOp
from tilec.ir.types import TensorType, element_type
from tilec.lowering.context import (
    BF16,
    I32,
    LoweringContext,
    LoweringError,
    LTensor,
    _where,
    llvm_type,
    lowers,
)


@lowers(ElementwiseInlineAsmOp, ElementwiseInlineAsmEffectsOp)
def _inline_asm(ctx: LoweringContext, op: ElementwiseInlineAsmOp) -> None:
    pack = op.pack_int
    result_types = [r.type for r in op.results]
    tensor = isinstance(result_types[0], TensorType)
    count = LTensor(result_types[0], []).mapping.num_registers if tensor else 1
    operands = []
    for value in op.operands:
        lowered = ctx.get(value)
        operands.append(list(lowered.values) if tensor else [lowered])
    padded = -(-count // pack) * pack
    for registers in operands:
        registers += [ir.Constant(registers[0].type, ir.Undefined)] * (padded - count)
    element_types = [llvm_type(element_type(t), ctx.target) for t in result_types]
    results: list[list[ir.Value]] = [[] for _ in result_types]
    for start in range(0, padded, pack):
        group = [registers[start : start + pack] for registers in operands]
        for i, values in enumerate(_call(ctx, op, group, element_types, pack)):
            results[i] += values
    for result, values in zip(op.results, results, strict=True):
        ctx.set(result, LTensor(result.type, values[:count]) if tensor else values[0])


def _call(
    ctx: LoweringContext,
    op: ElementwiseInlineAsmOp,
    group: list[list[ir.Value]],
    element_types: list[ir.Type],
    pack: int,
) -> list[list[ir.Value]]:
    """One asm call on a group: per operand its `pack` elements; per result its `pack`."""
    b = ctx.builder
    arguments = [word for values in group for word in _words(b, values, pack)]
    returned = []  # (type of one returned value, elements it holds), per result in order
    for ty in element_types:
        per_word = _per_word(ty, pack)
        word = ir.VectorType(ty, per_word) if per_word > 1 else ty
        returned += [(word, per_word)] * (pack // per_word)
    check_constraints(ctx, op, len(returned), len(arguments))
    ret = returned[0][0] if len(returned) == 1 else ir.LiteralStructType([t for t, _ in returned])
    asm = ir.InlineAsm(
        ir.FunctionType(ret, [a.type for a in arguments]),
        escape(op.asm_text),
        escape(op.constraints_text),
        side_effect=not op.is_pure,
    )
    call = b.call(asm, arguments)
    values = (
        [call] if len(returned) == 1 else [b.extract_value(call, i) for i in range(len(returned))]
    )
    elements: list[ir.Value] = []
    for value, (_, per_word) in zip(values, returned, strict=True):
        if per_word == 1:
            elements.append(value)
        else:
            elements += [b.extract_element(value, I32(k)) for k in range(per_word)]
    return [elements[i : i + pack] for i in range(0, len(elements), pack)]


def check_constraints(ctx: LoweringContext, op: ElementwiseInlineAsmOp, outputs: int,
                      inputs: int) -> None:  # fmt: skip
    """The constraints name `outputs` outputs (`=...`) and `inputs` inputs (clobbers `~{...}`
    aside), each of the target's register classes, a tied operand number or a `{register}`:
    LLVM rejects other counts, and aborts the process on a class the target lacks."""
    codes = [c.strip() for c in op.constraints_text.split(",")] if op.constraints_text else []
    codes = [c for c in codes if not c.startswith("~")]
    written = sum(c.startswith("=") for c in codes)
    if (written, len(codes) - written) != (outputs, inputs):
        raise LoweringError(
            f"{_where(op)}tl.inline_asm_elementwise's constraints {op.constraints_text!r} name "
            f"{written} outputs and {len(codes) - written} inputs; with pack={op.pack_int} this "
            f"call has {outputs} outputs and {inputs} inputs (elements narrower than 32 bits "
            "travel several to a register)"
        )
    letters = ctx.target.inline_asm_constraints
    for code in codes:
        bare = code.lstrip("=&*+")
        if letters is None or bare.isdigit() or bare.startswith("{"):
            continue
        if not bare or any(ch not in letters for ch in bare):
            raise LoweringError(
                f"{_where(op)}tl.inline_asm_elementwise's constraint {code!r} is not one of "
                f"this target's ({ctx.target.arch}: {', '.join(letters)}, a tied operand "
                "number or a {register})"
            )


def _words(b: ir.IRBuilder, values: list[ir.Value], pack: int) -> list[ir.Value]:
    """The asm arguments of one operand's `pack` elements: narrow elements packed in vectors."""
    per_word = _per_word(values[0].type, pack)
    if per_word == 1:
        return list(values)
    words = []
    for start in range(0, len(values), per_word):
        word: ir.Value = ir.Constant(ir.VectorType(values[0].type, per_word), ir.Undefined)
        for k in range(per_word):
            word = b.insert_element(word, values[start + k], I32(k))
        words.append(word)
    return words


def _per_word(ty: ir.Type, pack: int) -> int:
    """How many elements of `ty` one asm operand holds: `min(32 // bits, pack)` below 32 bits."""
    bits = _bits(ty)
    return min(32 // bits, pack) if bits < 32 else 1


def _bits(ty: ir.Type) -> int:
    if isinstance(ty, ir.IntType):
        return ty.width
    if isinstance(ty, ir.HalfType) or ty == BF16:
        return 16
    if isinstance(ty, ir.FloatType):
        return 32
    return 64  # double, pointers


def escape(text: str) -> str:
    """`text` as the inside of an LLVM IR string: quotes, backslashes and control characters
    as `\\XX` (llvmlite writes the asm text as it is given)."""
    out = []
    for byte in text.encode():
        char = chr(byte)
        printable = 32 <= byte < 127 and char not in '"\\'
        out.append(char if printable else f"\\{byte:02X}")
    return "".join(out)


__all__ = ["escape"]
