"""A Triton program as users write it (plain `import triton`), run by the tests with
`python -m tilec.as_triton` and TRITON_INTERPRET=1: CPU torch tensors on the interp backend.
It prints one line per check and exits non-zero at the first failure."""

import sys

import torch
import triton
import triton.language as tl
from triton import knobs
from triton.language.extra import libdevice
from triton.runtime import driver


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, libdevice.fma(x, y, x), mask=mask)


@triton.jit(do_not_specialize=["n"], debug=True)
def scale_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * scale, mask=mask)


@triton.jit
def bits_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) >> 31)


def main() -> None:
    device = driver.active.get_active_torch_device()
    print("interpret", knobs.runtime.interpret, "device", device)
    n = 1000
    x = torch.randn(n, device=device)
    y = torch.randn(n, device=device)
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    triton.testing.assert_close(out, x * y + x, atol=1e-6, rtol=1e-6)
    print("add ok")
    scale_kernel[(triton.cdiv(n, 128),)](x, out, n, 2.0, BLOCK=128)
    triton.testing.assert_close(out, 2 * x)
    print("scale ok")
    signs = torch.empty(64, dtype=torch.int32, device=device)
    source = torch.linspace(-1, 1, 64, device=device)
    bits_kernel[(1,)](triton.reinterpret(source, tl.uint32), signs, BLOCK=64)
    assert torch.equal(signs, (source.view(torch.int32) < 0).to(torch.int32)), signs
    print("reinterpret ok")


if __name__ == "__main__":
    main()
    sys.exit(0)
