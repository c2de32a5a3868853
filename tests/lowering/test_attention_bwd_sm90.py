"""The attention backward on sm_90a, compiled on the CPU (issue 23): `dv += tl.dot(p, do)` is one
dot accumulating into dv (combine-dot-add), the dV and dK (and dQ) wgmmas stay in flight across
the loop's iterations as Triton's (pendings 1), and nothing in the loops converts layouts
through shared memory (the m and Delta loads and the causal masks compute in the slice of the
accumulator's layout, `remove-layout-conversions`; at d128, one block an SM, the dK/dV loops read
m and Delta from the pipeline's rings, `pipeline-loops`, as Triton does; at d64, two blocks an SM,
they stay loads): two `bar.sync` an iteration, the pipeline's; and the lowered kernels compute it
on the CPU wgmma emulator (d64 with the loads, d128 with the rings).
tests/nvidia/test_nvidia_attention_bwd.py runs the same kernels on the GPU."""

from __future__ import annotations

import re

import numpy as np
import pytest
from attention_bwd_kernels import CONFIGS, bwd_args, compile_bwd

from tilec_nvidia.arch import ARCHS
from tilec_nvidia.codegen import find_ptxas


def _loop_bodies(text: str, opener: str) -> list[str]:
    """The text of each innermost loop body: lines from `opener` to the matching close."""
    lines, bodies = text.splitlines(), []
    for i, line in enumerate(lines):
        if opener not in line:
            continue
        indent = len(line) - len(line.lstrip())
        j = i + 1
        while not (lines[j].strip() == "}" and len(lines[j]) - len(lines[j].lstrip()) == indent):
            j += 1
        body = lines[i + 1 : j]
        if not any(opener in b for b in body):
            bodies.append("\n".join(body))
    return bodies


@pytest.mark.parametrize(("head_dim", "causal", "config"), [CONFIGS[0], CONFIGS[2], CONFIGS[1]])
def test_backward_loops_accumulate_in_flight_without_conversions(head_dim, causal, config):
    """At d128 (163840 bytes of shared memory a block: one block an sm_90a SM) and at d64
    (81920 and 106496 bytes: two blocks an SM) the dK/dV loops load m and Delta one iteration
    ahead in registers (`pipeline_loops.prefetch_vectors`, issue 23): no ring for them, and a
    masked `ld.global` each in the loop for the next iteration."""
    compiled = compile_bwd(head_dim, causal, config)
    blocks = ARCHS.check("sm_90a").sm.blocks(config[5], compiled.metadata["shared_bytes"])
    assert blocks == (1 if head_dim == 128 else 2)
    tir = compiled.asm["tir"]
    dots = re.findall(r"(%\S+) = tile\.dot ", tir)
    assert len(dots) == (14 if causal else 7) and not any(  # dv, dk, dq accumulate in dots
        re.search(rf"arith\.addf .*{re.escape(dot)}\b", tir) for dot in dots
    )
    loops = _loop_bodies(compiled.asm["gir"], "scf.for")
    assert len(loops) == (4 if causal else 2)
    vector_rings = re.findall(r"gpu\.local_alloc : !gpu\.memdesc<\d+x\d+xf32>", compiled.asm["gir"])
    assert not vector_rings, vector_rings
    for body in loops:
        dots = re.findall(r"gpu\.warp_group_dot %.*?\{pendings = (\d+)", body)
        # QK^T (and dP) are waited for at once; the accumulating dots stay in flight
        assert dots.count("1") == (2 if len(dots) == 4 else 1), body
        converts = re.findall(r"gpu\.convert_layout %\S+ : tensor<[^,]+, #(\w+)>", body)
        assert all(c.startswith("dot_op") for c in converts), converts
    ptx = compiled.asm["ptx"]
    assert "wgmma.mma_async" in ptx
    if find_ptxas() is not None:
        assert compiled.asm.get("cubin")
    loops = _ptx_loops(ptx)
    assert len(loops) == (4 if causal else 2)
    for i, body in enumerate(loops):
        assert "wgmma.mma_async" in body and body.count("bar.sync") == 2, body.count("bar.sync")
        # the dK/dV loops (the first half) load m and Delta of the next iteration, predicated
        # on it being in range
        loads = [ln for ln in body.splitlines() if "ld.global" in ln]
        assert bool(loads) == (i < len(loops) // 2), loads
        assert all(re.search(r"@!?%p\d+ ld\.global", ln) for ln in loads), loads


def _ptx_loops(ptx: str) -> list[str]:
    """Each PTX loop: from a label to the branch back to it."""
    lines = [line.strip() for line in ptx.splitlines()]
    labels = {
        m[1]: i for i, line in enumerate(lines) if (m := re.match(r"(\$L__BB\d+_\d+):", line))
    }
    loops = []
    for i, line in enumerate(lines):
        m = re.search(r"\bbra(?:\.uni)?\s+(\$L__BB\d+_\d+);", line)
        if m and labels.get(m[1], i) < i:
            loops.append("\n".join(lines[labels[m[1]] + 1 : i + 1]))
    return loops


@pytest.mark.parametrize(
    ("head_dim", "causal", "config", "n"), [(*CONFIGS[0], 128), (*CONFIGS[3], 128)]
)
def test_backward_on_the_wgmma_emulator_matches_float64(head_dim, causal, config, n):
    """The sm_90a gir lowered with the emulated wgmma and cp.async (tests/lowering/
    wgmma_emulator.py), run on the CPU: the in-flight accumulators and the loads and masks in
    the accumulator's layout compute dQ, dK, dV."""
    from test_lower_wgmma_emulated import run_emulated

    rng = np.random.default_rng(23)
    args, expected = bwd_args(rng, 1, n, head_dim, causal)
    run_emulated(compile_bwd(head_dim, causal, config), args, (n // config[1], 1))
    for name, index in (("dq", 5), ("dk", 6), ("dv", 7)):
        got = args[index].astype(np.float64).reshape(1, n, head_dim)
        np.testing.assert_allclose(got, expected[name], rtol=1e-2, atol=1e-2, err_msg=name)
