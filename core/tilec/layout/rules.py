"""What a GPU backend tells the core about its hardware, for layout assignment and lowering."""

from __future__ import annotations

from typing import Any

import attrs


@attrs.frozen
class MmaInstruction:
    """A matrix instruction the target has (tensor cores, matrix cores), as layouts and passes
    see it. A backend subclasses it with its own data and layouts and lists its instructions in
    `LayoutRules.mma_instructions`; `accelerate-matmul` picks, for each `tile.dot`, the first
    whose types match, whose `shape` divides the dot's and that `computes` it.

    `version`: the version of the layouts it computes in (each family numbers its own).
    `shape`: (m, n, k) of one instruction. `operand` and `accumulator`: tile element type names
    of the A/B inputs and of C/D (`f16`, `bf16`, `f32`, `tf32` for f32 inputs read as tf32, ...).
    `lanes`: the lanes of the warp (wavefront) the instruction runs on; only the instructions
    of the target's warp size are used.
    """

    version: int
    shape: tuple[int, int, int]
    operand: str
    accumulator: str
    lanes: int = attrs.field(kw_only=True)

    def layouts(
        self, shape: tuple[int, int], num_warps: int, operand_bytes: int
    ) -> tuple[Any, Any, Any]:
        """The (accumulator, A, B) layouts of an (M, N) = `shape` dot computed with this
        instruction on `num_warps` warps, `operand_bytes`-byte operand elements: the backend's
        accumulator layout and its `OperandEncodingAttr`s (`tilec.dialects.gpu_matrix`)."""
        raise NotImplementedError(
            f"{type(self).__name__} must define layouts(shape, num_warps, operand_bytes): the "
            "(accumulator, A, B) layouts of a dot it computes (tilec.layout.rules.MmaInstruction)"
        )

    def chained_layouts(
        self, layouts: tuple[Any, Any, Any], shape: tuple[int, int], num_warps: int
    ) -> tuple[Any, Any, Any]:
        """The layouts of a dot chained to another in its block (one's result feeds the other:
        attention's two dots), given its `layouts()`; the same by default. A backend may
        arrange the warps so that the result stays in each warp's registers."""
        return layouts

    def computes(self, op: Any, num_warps: int) -> bool:
        """Whether this instruction computes the `tile.dot` `op` on `num_warps` warps, beyond
        the types and shapes `accelerate-matmul` checks itself (True by default)."""
        return True

    def rewrites_dot(self, op: Any, num_warps: int) -> Any:
        """Rewrite `op` itself (into an op of the backend's, such as an asynchronous dot,
        `tilec.dialects.gpu_shared.AsyncDotOp`) and return its accumulator layout, or return
        None (the default) to let `accelerate-matmul` convert the operands and the accumulator
        to `layouts()` and keep the `tile.dot`."""
        return None


@attrs.frozen
class LayoutRules:
    """A backend's hardware facts that layouts depend on.

    `threads_per_warp`: lanes of a warp (32 on NVIDIA and AMD RDNA, 64 on AMD CDNA wavefronts).
    `max_vector_bytes`: the widest single memory access of a thread (16 bytes: 128-bit loads).
    `shared_memory_bytes`: the shared memory (LDS) one block may use on this architecture.
    `default_num_warps`: the warps of a block when the launch does not say.
    `mma_instructions`: the matrix instructions `accelerate-matmul` may use (none: every
    `tile.dot` stays on FMAs).
    `async_copies`: whether global -> shared copies run asynchronously (NVIDIA's cp.async);
    without (AMD), `pipeline-loops` stages a ring's tiles through registers.
    `bulk_copies`: where the target fills a loop's ring with bulk copies completed on barriers
    (`tilec.dialects.gpu_bulk`; NVIDIA's TMA), a callable taking a `tile.descriptor_load` that
    `pipeline-loops` pipelines and returning the shared-memory encoding its copies write (the
    ring's, which must equal the encoding its readers expect where they read it in place), or
    None where that load keeps the asynchronous copies; None (the default): no bulk copies.
    `sm`: what one SM (compute unit) holds at once (`tilec.arch.SmResources`: shared memory,
    warps, blocks), where the backend's arch table says; None: unknown. `pipeline-loops` asks it
    how many blocks of the kernel share an SM (`tilec.layout.residency`).
    """

    threads_per_warp: int = 32
    max_vector_bytes: int = 16
    shared_memory_bytes: int = 48 * 1024
    default_num_warps: int = 4
    mma_instructions: tuple[MmaInstruction, ...] = ()
    async_copies: bool = True
    bulk_copies: Any = None
    sm: Any = None


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
