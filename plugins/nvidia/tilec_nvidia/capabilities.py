"""Checks of the tensor-core and asynchronous-copy instructions against the arch table.

The features themselves are facts of the arch (`tilec_nvidia.arch.CudaArch.features`, with the
table of which arch has what): here every intrinsic is checked, in Python, before it is emitted
(`require`), and layout assignment is offered only the instructions a target has
(`mma_instructions`).
"""

from __future__ import annotations

from tilec.layout.rules import MmaInstruction
from tilec.lowering.context import LoweringError
from tilec_nvidia.arch import ARCH_SPECIFIC_FEATURES, ARCHS, FEATURE_SINCE
from tilec_nvidia.tensor_core_instructions import (
    Float8TensorCoreInstruction,
    Float8WarpGroupInstruction,
    TensorCoreInstruction,
    WarpGroupInstruction,
)

MMA_V2 = (
    TensorCoreInstruction(version=2, shape=(16, 8, 16), operand="f16", accumulator="f32"),
    TensorCoreInstruction(version=2, shape=(16, 8, 16), operand="bf16", accumulator="f32"),
    TensorCoreInstruction(version=2, shape=(16, 8, 8), operand="tf32", accumulator="f32"),
    TensorCoreInstruction(version=2, shape=(16, 8, 32), operand="i8", accumulator="i32"),
)
"""mma.sync on sm_80 and later: m16n8k16 f16/bf16 and m16n8k8 tf32 (the `tl.dot`s of f32
inputs with `input_precision` "tf32" or "tf32x3") into f32, m16n8k32 s8 into s32."""
MMA_FP8 = (
    Float8TensorCoreInstruction(version=2, shape=(16, 8, 32), operand="f16", accumulator="f32"),
)
"""mma.sync m16n8k32 of e4m3/e5m2 pairs into f32 on sm_89 and later (the f16 operands of a
`tl.dot` of float8 inputs, multiplied as the float8 values they convert), before MMA_V2."""
MMA_V3 = (
    Float8WarpGroupInstruction(version=3, shape=(64, 8, 32), operand="f16", accumulator="f32"),
    WarpGroupInstruction(version=3, shape=(64, 8, 16), operand="f16", accumulator="f32"),
    WarpGroupInstruction(version=3, shape=(64, 8, 16), operand="bf16", accumulator="f32"),
    WarpGroupInstruction(version=3, shape=(64, 8, 8), operand="tf32", accumulator="f32"),
)
"""wgmma m64nNk32 (e4m3/e5m2: the f16 operands of a `tl.dot` of float8 inputs, multiplied as
the float8 values they convert), m64nNk16 (f16, bf16) and m64nNk8 (tf32: f32 inputs with
`input_precision` "tf32"), N a multiple of 8 up to 256, with f32 accumulators (sm_90a). 3xTF32
stays on mma.sync."""


def features(arch: str) -> frozenset[str]:
    """The features `arch` has (a ValueError for an arch not in the table)."""
    return ARCHS.check(arch).features


def has(arch: str, feature: str) -> bool:
    if feature not in FEATURE_SINCE and feature not in ARCH_SPECIFIC_FEATURES:
        raise ValueError(f"unknown NVIDIA feature {feature!r}")
    return feature in features(arch)


def require(arch: str, feature: str, what: str) -> None:
    """Raise a `LoweringError` unless `arch` has `feature` (`what` names the instruction)."""
    if has(arch, feature):
        return
    where = ", ".join(ARCH_SPECIFIC_FEATURES.get(feature, ()))
    if not where:
        major, minor = FEATURE_SINCE[feature]
        where = f"sm_{major}{minor} and later"
    raise LoweringError(f"{what} needs {where}; the target is {arch}")


def mma_instructions(arch: str) -> tuple[MmaInstruction, ...]:
    """The tensor-core instructions `accelerate-matmul` may use on `arch`."""
    if not has(arch, "mma_v2") or not has(arch, "ldmatrix"):
        return ()
    mma_sync = (MMA_FP8 if has(arch, "mma_fp8") else ()) + MMA_V2
    if has(arch, "wgmma"):
        return MMA_V3 + mma_sync  # wgmma first; mma.sync where its layouts do not fit
    return mma_sync


__all__ = ["MMA_FP8", "MMA_V2", "MMA_V3", "features", "has", "mma_instructions", "require"]
