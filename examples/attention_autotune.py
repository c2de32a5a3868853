"""The flash attention of `attention.py`, autotuned: BLOCK_M, BLOCK_N, warps and stages chosen per
(sequence length, head dim, causal) by timing, with configs for H100-class GPUs, for AMD CDNA
(64-lane wavefronts) and small ones for the interpreter; each backend tunes only its own, and a
causal launch only configs whose BLOCK_M is a multiple of BLOCK_N (an `early_config_prune`).

    tilec run examples/attention_autotune.py --backend nvidia -- 4 32 4096 64

`TILEC_PRINT_AUTOTUNING=1` prints every config's time and the choice.
"""

import sys

import numpy as np
from attention import attn_fwd, reference

import tilec
from tilec.runtime.compiler import get_backend


def _configs(target, blocks, head_dims=(1, 256)):
    """(target, (lowest, highest) HEAD_DIM the configs are for, config) rows."""
    return [
        (target, head_dims, tilec.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w, num_stages=s))
        for m, n, w, s in blocks
    ]


TARGETS = [
    # H100-class (sm_90a): wgmma over 128-row blocks, 8 warps (two warpgroups).
    *_configs("nvidia", [
        (128, 64, 8, 3), (128, 32, 8, 2), (128, 32, 8, 3), (128, 128, 8, 2), (64, 64, 4, 3),
        (64, 32, 4, 2),
    ]),
    # AMD CDNA (gfx90a/gfx942): 64-lane wavefronts. Within the 64 KB LDS and without spilling
    # registers (tests/autotune/test_example_configs.py compiles each for gfx942), a head dim
    # of 128 takes smaller blocks or a single stage.
    *_configs("amd", [(128, 64, 8, 1), (128, 32, 8, 1), (128, 32, 4, 2), (64, 64, 4, 2),
                      (64, 32, 4, 2)], head_dims=(1, 64)),
    *_configs("amd", [(64, 32, 4, 1), (64, 32, 8, 1), (128, 16, 8, 1), (64, 16, 4, 2)],
              head_dims=(65, 256)),
    # The interpreter: small blocks keep the example quick.
    *_configs("interp", [(32, 32, 4, 1), (64, 32, 4, 1)]),
]  # fmt: skip
CONFIGS = [config for _, _, config in TARGETS]


def for_this_launch(configs, named_args, **kwargs):
    """The configs written for the backend this launch runs on and its head dim (and, when
    causal, those whose BLOCK_M is a multiple of BLOCK_N, which the causal split of the key
    range needs)."""
    name = get_backend(kwargs.get("backend")).name
    head_dim = kwargs.get("HEAD_DIM", named_args.get("HEAD_DIM"))
    mine = {
        id(config)
        for target, (lowest, highest), config in TARGETS
        if target == name and lowest <= head_dim <= highest
    }
    causal = kwargs.get("CAUSAL", named_args.get("CAUSAL"))
    return [
        config
        for config in configs
        if id(config) in mine
        and not (causal and config.kwargs["BLOCK_M"] % config.kwargs["BLOCK_N"])
    ]


attn_fwd_autotuned = tilec.autotune(
    CONFIGS,
    key=["N_CTX", "HEAD_DIM", "CAUSAL"],
    prune_configs_by={"early_config_prune": for_this_launch},
)(attn_fwd)


def attention(q, k, v, causal, sm_scale):
    """softmax(q @ k^T * sm_scale) @ v over arrays shaped (batch, heads, seq, head_dim)."""
    batch, heads, n_ctx, head_dim = q.shape
    out = np.empty_like(q)
    strides = [int(s) for t in (q, k, v, out) for s in np.array(t.strides) // t.itemsize]

    def grid(meta):
        return (tilec.cdiv(n_ctx, meta["BLOCK_M"]), batch * heads)

    attn_fwd_autotuned[grid](
        q, k, v, out, sm_scale, *strides, heads, n_ctx, HEAD_DIM=head_dim, CAUSAL=causal
    )
    return out


def main(argv):
    batch, heads, n_ctx, head_dim = (int(v) for v in argv) if argv else (1, 2, 96, 64)
    rng = np.random.default_rng(0)
    for causal in (False, True):
        q, k, v = (
            rng.standard_normal((batch, heads, n_ctx, head_dim)).astype(np.float16)
            for _ in range(3)
        )
        sm_scale = 1.0 / np.sqrt(head_dim)
        out = attention(q, k, v, causal, sm_scale)
        one = slice(0, 1)  # checked on the first (batch, head): the float64 reference is big
        expected = reference(q[one, one], k[one, one], v[one, one], causal, sm_scale)
        np.testing.assert_allclose(out[one, one], expected, rtol=1e-2, atol=1e-2)
        print(f"attention_autotune causal={causal}: best {attn_fwd_autotuned.best_config} (OK)")


if __name__ == "__main__":
    main(sys.argv[1:])
