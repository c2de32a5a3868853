"""Small kernels the autotuning tests tune (a module of its own, so that a second process can
import them)."""

import tilec
import tilec.language as tl


@tilec.jit
def accumulate(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out += x: a kernel whose timing runs would change its output without restore_value."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    out = tl.load(out_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, out + x, mask=mask)


@tilec.jit
def limited(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = 2x; fails to compile for BLOCK > 64 (a stand-in for a config over resources)."""
    tl.static_assert(BLOCK <= 64, "BLOCK too large")
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)


def grid(n):
    return lambda meta: (tilec.cdiv(n, meta["BLOCK"]),)


@tilec.jit
def divided(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = x; fails at run time (a device assertion) where BLOCK does not divide n."""
    tl.device_assert(n % BLOCK == 0, "BLOCK must divide n")
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets))
