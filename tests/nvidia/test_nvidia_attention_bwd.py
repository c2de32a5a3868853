"""On the GPU: the sweep's attention backward (benchmarks/sweep_attention.py, Triton 3.6 tutorial
06's algorithm) at its four quick configurations, against the interpreter (`check.run_checked`)
and a float64 reference (issue 23). On sm_90a its dots run on wgmma with the dV, dK and dQ
accumulators in flight across iterations, m, Delta and the causal masks computed in the
accumulator's layout (tests/lowering/test_attention_bwd_sm90.py checks that on the CPU)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tilec.runtime import check

sys.path.insert(0, str(Path(__file__).parent.parent / "lowering"))
from attention_bwd_kernels import CONFIGS, bwd_args, compile_bwd

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize(("head_dim", "causal", "config"), CONFIGS)
def test_attention_backward_matches_the_interpreter(rng, head_dim, causal, config):
    heads, n = 2, 256
    kernel = compile_bwd(head_dim, causal, config, target=None)
    args, expected = bwd_args(rng, heads, n, head_dim, causal)
    grid = (n // config[1], heads)
    check.run_checked(
        kernel, grid, args, lambda: compile_bwd(head_dim, causal, config, "interp", None)
    )
    for name, index in (("dq", 5), ("dk", 6), ("dv", 7)):
        got = args[index].astype(np.float64).reshape(heads, n, head_dim)
        np.testing.assert_allclose(got, expected[name], rtol=3e-2, atol=3e-2, err_msg=name)
