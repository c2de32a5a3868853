"""Triton's launch behaviours of issue 20 on an NVIDIA GPU with CUDA tensors: `None` arguments
(compile-time constants, each with its own native fast launch beside the tensor's), a kernel of
no parameter, a kernel rewritten by `_unsafe_update_src` and one made by `exec()` of a string."""

from __future__ import annotations

import pytest

import tilec
import tilec.language as tl
from tilec.runtime import JITFunction

torch = pytest.importorskip("torch", reason="needs PyTorch")
pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def cuda_torch():
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")


@tilec.jit
def scale_bias(x_ptr, w_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    if w_ptr is not None:
        x = x * tl.load(w_ptr + offsets, mask=mask)
    if b_ptr is not None:
        x = x + tl.load(b_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x, mask=mask)


def test_none_and_tensors_alternate_on_the_fast_launches():
    n = 5000
    x, w, b = (torch.randn(n, device="cuda") for _ in range(3))
    expected = {(False, False): x, (True, False): x * w, (False, True): x + b}
    expected[(True, True)] = x * w + b
    for _ in range(3):
        for (has_w, has_b), reference in expected.items():
            out = torch.empty_like(x)
            scale_bias[(tilec.cdiv(n, 1024),)](
                x, w if has_w else None, b if has_b else None, out, n, BLOCK=1024,
                backend="nvidia",
            )  # fmt: skip
            torch.testing.assert_close(out, reference)
    out = torch.empty_like(x)
    scale_bias[(tilec.cdiv(n, 1024),)](
        x, None, b_ptr=b, out_ptr=out, n=n, BLOCK=1024, backend="nvidia"
    )
    torch.testing.assert_close(out, x + b)


def test_a_kernel_of_no_parameter_launches_again():
    @tilec.jit
    def no_parameters():
        tl.static_assert(tl.arange(0, 32).shape[0] == 32)

    for _ in range(3):
        no_parameters[(1,)](backend="nvidia")
    torch.cuda.synchronize()


@tilec.jit
def template(x_ptr, out_ptr, N: tl.constexpr):
    offsets = tl.arange(0, N)
    x = tl.load(x_ptr + offsets)  # noqa: F841 (read by the replacement)
    z = GENERATE_TEST_HERE  # noqa: F821 (replaced before a launch)
    tl.store(out_ptr + offsets, z)


def test_updated_and_exec_kernels_run():
    x = torch.randn(128, device="cuda")
    patched = JITFunction(template.fn)
    patched._unsafe_update_src(patched.src.replace("GENERATE_TEST_HERE", "x * 3"))
    out = torch.empty_like(x)
    patched[(1,)](x, out, 128, backend="nvidia")
    torch.testing.assert_close(out, x * 3)
    namespace = {"tilec": tilec, "tl": tl}
    source = "@tilec.jit\n" + template.src.replace("GENERATE_TEST_HERE", "x - 1")
    exec(source, namespace)
    namespace["template"][(1,)](x, out, 128, backend="nvidia")
    torch.testing.assert_close(out, x - 1)
