"""Layer normalization, forward: y = (x - mean) * rstd * w + b, also saving mean and rstd."""

import numpy as np

import tilec
import tilec.language as tl


@tilec.jit
def layer_norm_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / N
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    w = tl.load(W + cols, mask=mask)
    b = tl.load(B + cols, mask=mask)
    y = diff * rstd * w + b
    tl.store(Y + row * stride + cols, y, mask=mask)


def layer_norm(x, weight, bias, eps=1e-5):
    m, n = x.shape
    y = np.empty_like(x)
    mean = np.empty(m, dtype=np.float32)
    rstd = np.empty(m, dtype=np.float32)
    block = 1 << (n - 1).bit_length()
    layer_norm_fwd[(m,)](x, y, weight, bias, mean, rstd, n, n, eps, BLOCK_SIZE=block)
    return y, mean, rstd


def main():
    rng = np.random.default_rng(0)
    m, n, eps = 1151, 819, 1e-5
    x = rng.standard_normal((m, n), dtype=np.float32) * 2 + 0.5
    weight = rng.random(n, dtype=np.float32)
    bias = rng.random(n, dtype=np.float32)
    y, mean, rstd = layer_norm(x, weight, bias, eps)
    x64 = x.astype(np.float64)
    ref_mean = x64.mean(axis=1)
    ref_rstd = 1 / np.sqrt(x64.var(axis=1) + eps)
    ref_y = (x64 - ref_mean[:, None]) * ref_rstd[:, None] * weight + bias
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rstd, ref_rstd, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y, ref_y, rtol=1e-4, atol=1e-4)
    print(f"layernorm: max abs error {np.max(np.abs(y - ref_y)):.3g} (OK)")


if __name__ == "__main__":
    main()
