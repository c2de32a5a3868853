"""On the GPU: the sweep's attention forward (benchmarks/sweep_attention.py, Triton 3.6 tutorial
06's algorithm) at the sweep's candidate configurations, against the interpreter
(`check.run_checked`) and a float64 reference (issue 23). On sm_90a its loops carry m_i and l_i
in the slice of the accumulator's layout and the kernel declares its block size as `.reqntid`
(tests/lowering/test_attention_fwd_sm90.py checks the first on the CPU)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tilec.runtime import check

sys.path.insert(0, str(Path(__file__).parent.parent / "lowering"))
from test_attention_fwd_sm90 import compile_fwd, fwd_args

pytestmark = pytest.mark.gpu

CONFIGS = [  # head dim, (BLOCK_M, BLOCK_N, warps, stages): benchmarks/sweep_cases.py's candidates
    (64, (128, 64, 8, 3)),
    (64, (128, 32, 8, 2)),
    (64, (64, 64, 4, 3)),
    (128, (128, 64, 8, 3)),
    (128, (128, 32, 8, 3)),
    (128, (64, 64, 4, 3)),
]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("head_dim", "config"), CONFIGS)
def test_attention_forward_matches_the_interpreter(rng, head_dim, config, causal):
    heads, n = 2, 256
    kernel = compile_fwd(head_dim, causal, config, target=None)
    args, expected = fwd_args(rng, heads, n, head_dim, causal)
    grid = (n // config[0], heads)
    check.run_checked(
        kernel, grid, args, lambda: compile_fwd(head_dim, causal, config, "interp", None)
    )
    got = args[3].astype(np.float64).reshape(heads, n, head_dim)
    np.testing.assert_allclose(got, expected["o"], rtol=1e-2, atol=1e-2, err_msg="o")
    np.testing.assert_allclose(args[4].reshape(heads, n), expected["m"], rtol=1e-4, atol=1e-3)
