"""What a GPU backend tells the core about its hardware, for layout assignment and lowering."""

from __future__ import annotations

import attrs


@attrs.frozen
class MmaInstruction:
    """A tensor-core matrix instruction the target has, as layouts and passes see it.

    `version`: the `#gpu.mma` version whose layouts it computes in (2: NVIDIA's mma.sync).
    `shape`: (m, n, k) of one instruction. `operand` and `accumulator`: tile element type names
    of the A/B inputs and of C/D (`f16`, `bf16`, `f32`, ...).
    """

    version: int
    shape: tuple[int, int, int]
    operand: str
    accumulator: str


@attrs.frozen
class LayoutRules:
    """A backend's hardware facts that layouts depend on.

    `threads_per_warp`: lanes of a warp (32 on NVIDIA and AMD RDNA, 64 on AMD CDNA wavefronts).
    `max_vector_bytes`: the widest single memory access of a thread (16 bytes: 128-bit loads).
    `shared_memory_bytes`: the shared memory (LDS) one block may use on this architecture.
    `default_num_warps`: the warps of a block when the launch does not say.
    `mma_instructions`: the tensor-core instructions `accelerate-matmul` may use (none: every
    `tile.dot` stays on FMAs).
    """

    threads_per_warp: int = 32
    max_vector_bytes: int = 16
    shared_memory_bytes: int = 48 * 1024
    default_num_warps: int = 4
    mma_instructions: tuple[MmaInstruction, ...] = ()


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
