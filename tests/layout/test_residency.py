"""`tilec.layout.residency`: how many blocks of a kernel share an SM (the nvidia arch table's
`SmResources`), the kernel's shared memory as the lowering places it, and the rule
`pipeline-loops` follows for the rings of vector loads used in registers (one block an SM)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tilec.arch import SmResources
from tilec.ir.parser import parse_module
from tilec.layout.residency import shared_bytes, vector_rings_pay
from tilec_nvidia.arch import ARCHS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lowering"))

from attention_bwd_kernels import CONFIGS, compile_bwd

HOPPER = ARCHS.check("sm_90a").sm


def test_the_arch_table_gives_each_sm_its_shared_memory_warps_and_blocks():
    assert SmResources(228 * 1024, 1024, 64, 32) == HOPPER
    assert ARCHS.check("sm_80").sm == SmResources(164 * 1024, 1024, 64, 32)
    assert ARCHS.check("sm_86").sm.shared_memory_bytes == 100 * 1024
    assert ARCHS.check("sm_75").sm.reserved_shared_bytes == 0
    for arch in ARCHS:  # an SM holds at least one block of the most a block may use
        assert (
            arch.sm.shared_memory_bytes >= arch.shared_memory_bytes + arch.sm.reserved_shared_bytes
        )


@pytest.mark.parametrize(
    ("num_warps", "shared", "blocks"),
    [
        (4, 81920, 2),  # the attention backward, d64 64x64x64x64
        (4, 106496, 2),  # d64 32x128x128x32
        (4, 163840, 1),  # d128
        (4, 57344, 4),  # the attention forward, d64 64x64: 4 x (56 + 1) KiB = 228
        (4, 0, 16),  # warps: 64 / 4
        (1, 0, 32),  # blocks
        (4, 233472, 0),  # more than the SM: none
    ],
)
def test_blocks_an_sm(num_warps, shared, blocks):
    assert HOPPER.blocks(num_warps, shared) == blocks


def test_a_block_without_shared_memory_where_none_is_reserved():
    """sm_75 reserves none: a kernel without shared memory is bounded by warps alone."""
    turing = ARCHS.check("sm_75").sm
    assert turing.blocks(4, 0) == 8  # 32 warps
    assert turing.blocks(1, 0) == 16  # blocks


def test_vector_rings_where_one_block_has_the_sm():
    limit = ARCHS.check("sm_90a").shared_memory_bytes
    assert vector_rings_pay(HOPPER, 4, limit, 163840, 163840 + 1536)  # d128: one block
    assert not vector_rings_pay(HOPPER, 4, limit, 81920, 81920 + 1536)  # d64: two
    assert not vector_rings_pay(HOPPER, 4, limit, limit - 256, limit + 512)  # past the limit
    small = SmResources(100 * 1024, 1024)
    assert not vector_rings_pay(small, 4, 99 * 1024, 40 * 1024, 60 * 1024)  # two blocks
    assert vector_rings_pay(small, 4, 99 * 1024, 60 * 1024, 61 * 1024)  # one
    assert vector_rings_pay(None, 4, limit, 81920, 81920)  # unknown SM: rings as before


@pytest.mark.parametrize(("head_dim", "causal", "config"), [CONFIGS[0], CONFIGS[1], CONFIGS[2]])
def test_the_estimate_is_the_lowerings_shared_memory(head_dim, causal, config):
    """On the pipelined gir (rings allocated and freed around each loop, the loop-invariant
    wgmma operands held to the end) the stack model gives the lowering's byte count, which the
    decision before the rings exist estimates the same way."""
    compiled = compile_bwd(head_dim, causal, config)
    module = parse_module(compiled.asm["gir"], "attention_bwd.gir")
    assert shared_bytes(module, {}) == compiled.metadata["shared_bytes"]
