"""What a GPU backend tells the core about its hardware, for layout assignment and lowering."""

from __future__ import annotations

from typing import Any

import attrs

from tilec.dialects.gpu_mma import MMA_LANES, DotOperandEncodingAttr, MmaEncodingAttr


@attrs.frozen
class MmaInstruction:
    """A tensor-core matrix instruction the target has, as layouts and passes see it.

    `version`: the version of the layouts it computes in (`#gpu.mma` 2: NVIDIA's mma.sync;
    other families, defined by their backends, number their own).
    `shape`: (m, n, k) of one instruction. `operand` and `accumulator`: tile element type names
    of the A/B inputs and of C/D (`f16`, `bf16`, `f32`, ...).
    """

    version: int
    shape: tuple[int, int, int]
    operand: str
    accumulator: str
    lanes: int = attrs.field(default=MMA_LANES, kw_only=True)
    """The lanes of the warp (wavefront) the instruction runs on."""

    def layouts(
        self, shape: tuple[int, int], num_warps: int, operand_bytes: int
    ) -> tuple[Any, Any, Any]:
        """The (accumulator, A, B) layouts of an (M, N) = `shape` dot computed with this
        instruction on `num_warps` warps: `#gpu.mma` and its `#gpu.dot_op`s (`kWidth` = the
        `operand_bytes`-byte elements of a 32-bit register). Other families override it."""
        mma = MmaEncodingAttr(self.version, warps_per_tile(shape, num_warps))
        k_width = max(1, 4 // operand_bytes)
        return mma, DotOperandEncodingAttr(0, mma, k_width), DotOperandEncodingAttr(1, mma, k_width)


@attrs.frozen
class LayoutRules:
    """A backend's hardware facts that layouts depend on.

    `threads_per_warp`: lanes of a warp (32 on NVIDIA and AMD RDNA, 64 on AMD CDNA wavefronts).
    `max_vector_bytes`: the widest single memory access of a thread (16 bytes: 128-bit loads).
    `shared_memory_bytes`: the shared memory (LDS) one block may use on this architecture.
    `default_num_warps`: the warps of a block when the launch does not say.
    `mma_instructions`: the tensor-core instructions `accelerate-matmul` may use (none: every
    `tile.dot` stays on FMAs).
    `async_copies`: whether global -> shared copies run asynchronously (NVIDIA's cp.async);
    without (AMD), `pipeline-loops` stages a ring's tiles through registers.
    """

    threads_per_warp: int = 32
    max_vector_bytes: int = 16
    shared_memory_bytes: int = 48 * 1024
    default_num_warps: int = 4
    mma_instructions: tuple[MmaInstruction, ...] = ()
    async_copies: bool = True


@attrs.frozen
class GpuTarget:
    """What the gir passes and the lowering know of the compile: the rules, the arch, the warps.

    Passed as `PassContext.target` to the `gir` stage's passes.
    """

    rules: LayoutRules
    arch: str
    num_warps: int = 4
    num_stages: int = 1
    """The software-pipeline depth `pipeline-loops` gives loops (1: none)."""


def warps_per_tile(
    shape: tuple[int, int], num_warps: int, block: tuple[int, int] = (16, 16)
) -> tuple[int, int]:
    """Triton's `warpsPerTileV2` (and its MFMA/WMMA form, with the instruction's `block`):
    double the warps along M while M has more blocks per warp than N (and M has blocks left
    for them), else along N."""
    bm, bn = block
    warps = [1, 1]
    while warps[0] * warps[1] < num_warps:
        if shape[0] // bm // warps[0] >= shape[1] // bn // warps[1]:
            if warps[0] < shape[0] // bm:
                warps[0] *= 2
            else:
                warps[1] *= 2
        else:
            warps[1] *= 2
    return warps[0], warps[1]
