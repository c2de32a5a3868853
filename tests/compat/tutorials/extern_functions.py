# ruff: noqa: E731  (the grid lambdas, as Triton's tutorials write them)
"""Tutorial 07: a libdevice function (`asin`) applied to a tensor, found through
`tl.extra.libdevice`, and the same launch with `extern_libs=` naming a library file."""

import torch

import tilec as triton
import tilec.language as tl
from tilec.language.extra import libdevice

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def asin_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    x = libdevice.asin(x)
    tl.store(y_ptr + offsets, x, mask=mask)


def asin(x, **launch_options):
    output = torch.zeros_like(x)
    n_elements = output.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    asin_kernel[grid](x, output, n_elements, BLOCK_SIZE=1024, **launch_options)
    return output
