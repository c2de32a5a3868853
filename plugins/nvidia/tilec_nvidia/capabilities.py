"""Which tensor-core and asynchronous-copy instructions each NVIDIA target has.

LLVM aborts the whole process ("LLVM ERROR: Cannot select: intrinsic ...") when an intrinsic is
not available for the CPU/PTX pair it compiles for, so every such intrinsic is checked here, in
Python, before it is emitted (`require`), and layout assignment only offers the instructions a
target has (`mma_instructions`).

| feature     | instruction                                              | targets            |
|-------------|----------------------------------------------------------|--------------------|
| `ldmatrix`  | `ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].b16`         | sm_75 and later    |
| `mma_v2`    | `mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}...f32` | sm_80 and later    |
| `cp_async`  | `cp.async.{ca,cg}.shared.global`                         | sm_80 and later    |
| `stmatrix`  | `stmatrix.sync.aligned.m8n8`                             | sm_90 and later    |
| `wgmma`     | `wgmma.mma_async`                                        | sm_90a only        |
"""

from __future__ import annotations

from tilec.layout.rules import MmaInstruction
from tilec.lowering.context import LoweringError

FEATURE_SINCE = {"ldmatrix": 75, "mma_v2": 80, "cp_async": 80, "stmatrix": 90}
"""The first compute capability with each portable feature."""

ARCH_SPECIFIC = {"wgmma": ("sm_90a",)}
"""Features only the architecture-specific (`a`) targets have."""

MMA_V2 = tuple(
    MmaInstruction(version=2, shape=(16, 8, 16), operand=dtype, accumulator="f32")
    for dtype in ("f16", "bf16")
)
"""mma.sync m16n8k16 with f32 accumulators, in the order `accelerate-matmul` prefers them."""


def capability(arch: str) -> int:
    """The compute capability as a number: 90 for `sm_90` and `sm_90a`."""
    return int("".join(c for c in arch.removeprefix("sm_") if c.isdigit()))


def features(arch: str) -> frozenset[str]:
    """The features (table above) `arch` has."""
    number = capability(arch)
    portable = {name for name, since in FEATURE_SINCE.items() if number >= since}
    specific = {name for name, archs in ARCH_SPECIFIC.items() if arch in archs}
    return frozenset(portable | specific)


def has(arch: str, feature: str) -> bool:
    if feature not in FEATURE_SINCE and feature not in ARCH_SPECIFIC:
        raise ValueError(f"unknown NVIDIA feature {feature!r}")
    return feature in features(arch)


def require(arch: str, feature: str, what: str) -> None:
    """Raise a `LoweringError` unless `arch` has `feature` (`what` names the instruction)."""
    if has(arch, feature):
        return
    where = ", ".join(ARCH_SPECIFIC.get(feature, ())) or f"sm_{FEATURE_SINCE[feature]} and later"
    raise LoweringError(f"{what} needs {where}; the target is {arch}")


def mma_instructions(arch: str) -> tuple[MmaInstruction, ...]:
    """The tensor-core instructions `accelerate-matmul` may use on `arch`."""
    if not has(arch, "mma_v2") or not has(arch, "ldmatrix"):
        return ()
    return MMA_V2


__all__ = ["capability", "features", "has", "mma_instructions", "require"]
