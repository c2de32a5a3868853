"""Triton's tutorials (vector add, fused softmax, matmul, dropout, layer norm forward and
backward, fused attention, extern functions, grouped GEMM), in the programs of
`tests/compat/tutorials/` that import tilec where Triton's import triton, run with torch tensors
and checked against torch: CPU tensors on interp in CI, CUDA tensors with
`TILEC_TEST_BACKEND=nvidia pytest tests/compat -k tutorials_torch` on a GPU.

torch is an optional dependency of tilec: without it this module is skipped, saying so."""

from __future__ import annotations

import importlib

import pytest

torch = pytest.importorskip(
    "torch", reason="torch is not installed: pip install torch (.ci/run installs it)"
)

import tilec  # noqa: E402
from tilec import settings  # noqa: E402

BACKEND = settings.TEST_BACKEND.get() or "interp"


@pytest.fixture(autouse=True)
def backend_under_test():
    """The tutorials ask `driver.active` for their device, as Triton's do: select the backend."""
    tilec.set_backend(BACKEND)
    yield
    tilec.set_backend(None)


def tutorial(name: str):
    return importlib.import_module(f"tutorials.{name}")


def test_vector_add():
    t = tutorial("vector_add")
    torch.manual_seed(0)
    size = 98432
    x = torch.rand(size, device=t.DEVICE)
    y = torch.rand(size, device=t.DEVICE)
    torch.testing.assert_close(t.add(x, y), x + y, rtol=0, atol=0)


@pytest.mark.parametrize("shape", [(1823, 781), (37, 64)])
def test_fused_softmax(shape):
    t = tutorial("fused_softmax")
    torch.manual_seed(0)
    x = torch.randn(*shape, device=t.DEVICE)
    torch.testing.assert_close(t.softmax(x), torch.softmax(x, axis=1))


@pytest.mark.parametrize("activation", ["", "leaky_relu"])
def test_matmul_autotuned(activation):
    t = tutorial("matmul")
    torch.manual_seed(0)
    a = torch.randn((100, 72), device=t.DEVICE, dtype=torch.float16)
    b = torch.randn((72, 90), device=t.DEVICE, dtype=torch.float16)
    expected = a.float() @ b.float()
    if activation:
        expected = torch.where(expected >= 0, expected, 0.01 * expected)
    torch.testing.assert_close(t.matmul(a, b, activation).float(), expected, rtol=1e-2, atol=1e-2)
    assert t.matmul_kernel.best_config in t.get_autotune_config()


def test_dropout_with_a_stored_mask():
    t = tutorial("dropout")
    torch.manual_seed(0)
    x = torch.randn(size=(10,), device=t.DEVICE)
    p = 0.5
    x_keep = (torch.rand(size=(10,), device=t.DEVICE) > p).to(torch.int32)
    expected = torch.where(x_keep.bool(), x / (1 - p), torch.zeros_like(x))
    torch.testing.assert_close(t.dropout(x, x_keep=x_keep, p=p), expected)


def test_seeded_dropout():
    t = tutorial("dropout")
    torch.manual_seed(0)
    x = torch.randn(size=(3000,), device=t.DEVICE)
    output = t.seeded_dropout(x, p=0.5, seed=123)
    output2 = t.seeded_dropout(x, p=0.5, seed=123)
    output3 = t.seeded_dropout(x, p=0.5, seed=512)
    assert torch.equal(output, output2)
    assert not torch.equal(output != 0, output3 != 0)
    kept = output != 0
    torch.testing.assert_close(output[kept], x[kept] * 2)
    assert 0.45 < kept.float().mean().item() < 0.55


@pytest.mark.parametrize(("M", "N"), [(151, 200), (64, 1024)])
def test_layer_norm_forward_and_backward(M, N):
    t = tutorial("layer_norm")
    torch.manual_seed(0)
    dtype = torch.float16
    x_shape = (M, N)
    w_shape = (x_shape[-1],)
    weight = torch.rand(w_shape, dtype=dtype, device=t.DEVICE, requires_grad=True)
    bias = torch.rand(w_shape, dtype=dtype, device=t.DEVICE, requires_grad=True)
    x = -2.3 + 0.5 * torch.randn(x_shape, dtype=dtype, device=t.DEVICE)
    dy = 0.1 * torch.randn_like(x)
    x.requires_grad_(True)
    y_tri = t.layer_norm(x, w_shape, weight, bias, 1e-5)
    y_tri.backward(dy, retain_graph=True)
    dx_tri, dw_tri, db_tri = [_.grad.clone() for _ in [x, weight, bias]]
    x.grad, weight.grad, bias.grad = None, None, None
    # the reference in float32 (torch's CPU float16 layer norm rounds differently)
    y_ref = torch.nn.functional.layer_norm(x.float(), w_shape, weight.float(), bias.float(), 1e-5)
    y_ref.backward(dy.float(), retain_graph=True)
    dx_ref, dw_ref, db_ref = [_.grad.clone() for _ in [x, weight, bias]]
    torch.testing.assert_close(y_tri, y_ref.to(dtype), atol=1e-2, rtol=0)
    torch.testing.assert_close(dx_tri, dx_ref, atol=1e-2, rtol=0)
    torch.testing.assert_close(db_tri, db_ref, atol=1e-2, rtol=0)
    torch.testing.assert_close(dw_tri, dw_ref, atol=1e-2, rtol=0)


def test_extern_function_asin(tmp_path):
    t = tutorial("extern_functions")
    torch.manual_seed(0)
    x = torch.rand(98432, device=t.DEVICE) * 2 - 1
    torch.testing.assert_close(t.asin(x), torch.asin(x), rtol=1e-6, atol=1e-7)
    # the tutorial's second launch names libdevice's bitcode (tilec computes asin itself)
    library = tmp_path / "libdevice.10.bc"
    library.write_bytes(bitcode_library())
    y = t.asin(x, extern_libs={"libdevice": str(library)})
    torch.testing.assert_close(y, torch.asin(x), rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match=r"library 'libdevice' at .* cannot be read"):
        t.asin(x, extern_libs={"libdevice": str(tmp_path / "missing.bc")})


def bitcode_library() -> bytes:
    """A small LLVM bitcode library (what `extern_libs` names), made with llvmlite."""
    import llvmlite.binding as llvm

    return llvm.parse_assembly(
        "define float @__nv_asinf(float %x) {\n  ret float %x\n}\n"
    ).as_bitcode()


def test_grouped_gemm_autotuned():
    t = tutorial("grouped_gemm")
    torch.manual_seed(0)
    sizes = [(128, 64, 96), (64, 128, 32), (64, 64, 64)]  # whole tiles, as the tutorial assumes
    group_A = [torch.rand((m, k), device=t.DEVICE, dtype=torch.float16) for m, n, k in sizes]
    group_B = [torch.rand((k, n), device=t.DEVICE, dtype=torch.float16) for m, n, k in sizes]
    tri_out = t.group_gemm_fn(group_A, group_B)
    for a, b, c in zip(group_A, group_B, tri_out, strict=True):
        torch.testing.assert_close(c, (a.float() @ b.float()).half(), atol=1e-2, rtol=1e-3)


@pytest.mark.parametrize(
    ("causal", "warp_specialize"), [(False, False), (True, False), (False, True), (True, True)]
)
def test_fused_attention_forward_and_backward(causal, warp_specialize):
    """warp_specialize=True (the tutorial asks for it on Blackwell) is tl.range's scheduling
    hint, which has no effect in tilec: the same results."""
    _check_fused_attention(tutorial("fused_attention"), causal, warp_specialize)


@pytest.mark.parametrize("causal", [False, True])
def test_fused_attention_with_host_descriptors(causal, monkeypatch):
    """The tutorial's path for CUDA GPUs of compute capability 9 and later (taken there on the
    GPU): host-side TensorDescriptors whose block shapes each config's pre_hook sets; here
    on any backend, as if the GPU had them."""
    t = tutorial("fused_attention")
    made = []

    class Recorded(t.TensorDescriptor):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(t, "supports_host_descriptor", lambda: True)
    monkeypatch.setattr(t, "is_hopper", lambda: False)
    monkeypatch.setattr(t, "TensorDescriptor", Recorded)
    _check_fused_attention(t, causal, False)
    assert len(made) == 4 and all(d.block_shape != [1, 1] for d in made)


def test_fused_attention_tunes_causal_launches_apart(monkeypatch):
    """A causal launch is tuned apart from a non-causal one of the same shapes (STAGE is an
    autotuning key): the non-causal launch's fastest config here, BLOCK_M 32 and BLOCK_N 64,
    is one the pruning leaves out for causal launches, which it computes wrongly."""
    t = tutorial("fused_attention")
    small = [
        c
        for c in t.tuned_configs
        if (c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"]) in ((32, 64), (64, 64))
    ]
    small = [c for c in small if c.num_stages == 2]
    monkeypatch.setattr(t._attn_fwd, "configs", small)
    monkeypatch.setattr(t._attn_fwd, "cache", {})
    monkeypatch.setattr(
        t._attn_fwd, "_bench", lambda config, *_: [float(config.kwargs["BLOCK_M"])] * 3
    )
    torch.manual_seed(0)
    q, k, v = (torch.randn((1, 1, 128, 64), device=t.DEVICE, dtype=torch.float16) for _ in "qkv")
    for causal in (False, True):
        p = torch.matmul(q.float(), k.float().transpose(2, 3)) * 0.5
        if causal:
            p[:, :, torch.ones((128, 128), device=t.DEVICE).tril() == 0] = float("-inf")
        expected = torch.matmul(torch.softmax(p, dim=-1), v.float())
        out = t.attention(q, k, v, causal, 0.5, False)
        torch.testing.assert_close(out.float(), expected, atol=1e-2, rtol=0)
    assert len(t._attn_fwd.cache) == 2


def _check_fused_attention(t, causal, warp_specialize):
    Z, H, N_CTX, HEAD_DIM = 1, 2, 128, 64
    dtype = torch.float16
    torch.manual_seed(20)
    q = (
        torch.empty((Z, H, N_CTX, HEAD_DIM), dtype=dtype, device=t.DEVICE)
        .normal_(mean=0.0, std=0.5)
        .requires_grad_()
    )
    k = (
        torch.empty((Z, H, N_CTX, HEAD_DIM), dtype=dtype, device=t.DEVICE)
        .normal_(mean=0.0, std=0.5)
        .requires_grad_()
    )
    v = (
        torch.empty((Z, H, N_CTX, HEAD_DIM), dtype=dtype, device=t.DEVICE)
        .normal_(mean=0.0, std=0.5)
        .requires_grad_()
    )
    sm_scale = 0.5
    dout = torch.randn_like(q)
    # the reference, in float32
    M = torch.tril(torch.ones((N_CTX, N_CTX), device=t.DEVICE))
    p = torch.matmul(q.float(), k.float().transpose(2, 3)) * sm_scale
    if causal:
        p[:, :, M == 0] = float("-inf")
    p = torch.softmax(p, dim=-1)
    ref_out = torch.matmul(p, v.float())
    ref_out.backward(dout.float())
    ref_dv, v.grad = v.grad.clone(), None
    ref_dk, k.grad = k.grad.clone(), None
    ref_dq, q.grad = q.grad.clone(), None
    tri_out = t.attention(q, k, v, causal, sm_scale, warp_specialize).half()
    tri_out.backward(dout)
    tri_dv, v.grad = v.grad.clone(), None
    tri_dk, k.grad = k.grad.clone(), None
    tri_dq, q.grad = q.grad.clone(), None
    torch.testing.assert_close(tri_out.float(), ref_out, atol=1e-2, rtol=0)
    torch.testing.assert_close(tri_dv.float(), ref_dv.float(), atol=1e-2, rtol=0)
    torch.testing.assert_close(tri_dk.float(), ref_dk.float(), atol=1e-2, rtol=0)
    torch.testing.assert_close(tri_dq.float(), ref_dq.float(), atol=1e-2, rtol=0)
