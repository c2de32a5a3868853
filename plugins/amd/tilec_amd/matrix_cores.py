"""AMD matrix cores: which MFMA / WMMA instruction each arch has, and their intrinsics.

LLVM aborts the whole process ("Cannot select: intrinsic ...") when an arch lacks an intrinsic
(MFMA on gfx11, the double-K `32x32x16` MFMA on gfx942, ...), so every intrinsic is looked up in
`MATRIX_CORES` before it is emitted, and layout assignment is offered only what an arch has
(`mma_instructions`). Every row was compiled with LLVM 22 for its arch and disassembled
(`tests/amd/test_amd_matrix_cores.py` does it again for each row).

Operand vectors: the lane's `kWidth` A (and B) elements as `<kWidth x half>`, as `<kWidth x
i16>` for bf16 (bit patterns) except gfx950's bf16 MFMA, which takes `<8 x bfloat>`; on gfx11
WMMA takes all 16 K elements of a row (lanes 16..31 repeat lanes 0..15), on gfx12 half of them.
The accumulator is `<n x float>` (n = 16 for 32x32 MFMA, 4 for 16x16, 8 for WMMA). MFMA takes
three more immediates (`cbsz`, `abid`, `blgp`: no broadcast, 0 here).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from llvmlite import ir

from tilec.lowering.context import BF16, F16, F32, I16, I32, LoweringError, call_intrinsic
from tilec_amd.arch import ARCHS
from tilec_amd.matrix_instructions import AmdMatrixInstruction


@attrs.frozen
class MatrixCore:
    """One instruction of one arch: what layouts see and the LLVM intrinsic that runs it."""

    instruction: AmdMatrixInstruction
    intrinsic: str
    operand_type: str
    """`half`, `i16` (bf16 bit patterns) or `bfloat`: the element type of the operand vectors."""
    mnemonic: str
    """The instruction in the disassembly."""


def _mfma(version: int, m: int, k: int, dtype: str, width: int, name: str, mnemonic: str):
    operand = {"f16": "half", "bf16": "i16" if version < 4 or width == 4 else "bfloat"}[dtype]
    instruction = AmdMatrixInstruction(
        version, (m, m, k), dtype, "f32", lanes=64, family="mfma", k_width=width
    )
    return MatrixCore(instruction, f"llvm.amdgcn.mfma.f32.{name}", operand, mnemonic)


def _cdna(version: int) -> tuple[MatrixCore, ...]:
    """gfx90a / gfx942 MFMA (gfx90a's mnemonics have no `_` before the type and keep `_1k`)."""
    s, bf16 = ("", "bf16_1k") if version == 2 else ("_", "bf16")
    return (
        _mfma(version, 32, 8, "f16", 4, "32x32x8f16", f"v_mfma_f32_32x32x8{s}f16"),
        _mfma(version, 32, 8, "bf16", 4, "32x32x8bf16.1k", f"v_mfma_f32_32x32x8{s}{bf16}"),
        _mfma(version, 16, 16, "f16", 4, "16x16x16f16", f"v_mfma_f32_16x16x16{s}f16"),
        _mfma(version, 16, 16, "bf16", 4, "16x16x16bf16.1k", f"v_mfma_f32_16x16x16{s}{bf16}"),
    )


def _wmma(version: int, dtype: str) -> MatrixCore:
    width = 16 if version == 1 else 8
    operand = "half" if dtype == "f16" else "i16"
    suffix = f"v8f32.v{width}{'f16' if dtype == 'f16' else 'i16'}"
    instruction = AmdMatrixInstruction(
        version, (16, 16, 16), dtype, "f32", lanes=32, family="wmma", k_width=width
    )
    name = f"llvm.amdgcn.wmma.f32.16x16x16.{dtype}.{suffix}"
    return MatrixCore(instruction, name, operand, f"v_wmma_f32_16x16x16_{dtype}")


_GFX950_DOUBLE_K = (
    _mfma(4, 32, 16, "f16", 8, "32x32x16.f16", "v_mfma_f32_32x32x16_f16"),
    _mfma(4, 32, 16, "bf16", 8, "32x32x16.bf16", "v_mfma_f32_32x32x16_bf16"),
    _mfma(4, 16, 32, "f16", 8, "16x16x32.f16", "v_mfma_f32_16x16x32_f16"),
    _mfma(4, 16, 32, "bf16", 8, "16x16x32.bf16", "v_mfma_f32_16x16x32_bf16"),
)

MATRIX_CORES: dict[str, tuple[MatrixCore, ...]] = {
    "gfx90a": _cdna(2),
    "gfx942": _cdna(3),
    "gfx950": _GFX950_DOUBLE_K + _cdna(4),
    "gfx1100": (_wmma(1, "f16"), _wmma(1, "bf16")),
    "gfx1201": (_wmma(2, "f16"), _wmma(2, "bf16")),
}
"""Per arch, its matrix instructions in the order `accelerate-matmul` prefers them (32x32
before 16x16; on gfx950 the double-K forms first)."""

_ELEMENT = {"half": F16, "i16": I16, "bfloat": BF16}


def mma_instructions(arch: str) -> tuple[AmdMatrixInstruction, ...]:
    """The matrix instructions `accelerate-matmul` may use on `arch`."""
    ARCHS.check(arch)
    return tuple(core.instruction for core in MATRIX_CORES.get(arch, ()))


def find(arch: str, instruction: AmdMatrixInstruction) -> MatrixCore:
    """The row of `arch` for `instruction`; a `LoweringError` where the arch has none."""
    for core in MATRIX_CORES.get(arch, ()):
        if core.instruction == instruction:
            return core
    have = ", ".join(_describe(c.instruction) for c in MATRIX_CORES.get(arch, ())) or "none"
    raise LoweringError(
        f"{arch} has no {_describe(instruction)} matrix instruction (it has: {have}); "
        "compile for an arch that has it, or let tl.dot use FMAs"
    )


def _describe(i: AmdMatrixInstruction) -> str:
    m, n, k = i.shape
    return f"{i.family} v{i.version} {m}x{n}x{k} {i.operand}->{i.accumulator}"


def emit(
    builder: ir.IRBuilder,
    arch: str,
    instruction: AmdMatrixInstruction,
    a: Sequence[ir.Value],
    b: Sequence[ir.Value],
    c: Sequence[ir.Value],
) -> list[ir.Value]:
    """One matrix instruction on this lane's `kWidth` A and B elements and accumulators `c`."""
    core = find(arch, instruction)
    element = _ELEMENT[core.operand_type]
    a_vec, b_vec = _vector(builder, a, element), _vector(builder, b, element)
    c_vec = _vector(builder, c, F32)
    extra = [I32(0)] * 3 if instruction.family == "mfma" else []
    d = call_intrinsic(builder, core.intrinsic, c_vec.type, [a_vec, b_vec, c_vec, *extra])
    return [builder.extract_element(d, I32(i)) for i in range(len(c))]


def _vector(builder: ir.IRBuilder, values: Sequence[ir.Value], element: ir.Type) -> ir.Value:
    vector: ir.Value = ir.Constant(ir.VectorType(values[0].type, len(values)), None)
    for i, value in enumerate(values):
        vector = builder.insert_element(vector, value, I32(i))
    if values[0].type == element:
        return vector
    return builder.bitcast(vector, ir.VectorType(element, len(values)))


__all__ = ["MATRIX_CORES", "MatrixCore", "emit", "find", "mma_instructions"]
