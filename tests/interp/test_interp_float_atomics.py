"""Float `tl.atomic_max`/`tl.atomic_min` in the interpreter are Triton 3.6's (its
`semantic.atomic_max`/`atomic_min`: integer atomics on the bits, a signed max (min) where the
value's sign bit is clear, an unsigned min (max) where it is set), both where atomics collide
on one address (one ufunc accumulate in that order) and where they do not; NaNs are ordered by
their bits, -0.0 below +0.0."""

from __future__ import annotations

import numpy as np
import pytest

import tilec
import tilec.language as tl


@tilec.jit
def float_atomics_kernel(z_ptr, x_ptr, old_ptr, SLOTS: tl.constexpr, OP: tl.constexpr):
    offsets = tl.arange(0, 256)
    x = tl.load(x_ptr + offsets)
    if OP == "max":
        old = tl.atomic_max(z_ptr + offsets % SLOTS, x)
    else:
        old = tl.atomic_min(z_ptr + offsets % SLOTS, x)
    tl.store(old_ptr + offsets, old)


def _triton(op: str, old: float, value: float, dtype) -> float:
    """One of Triton's float atomics on the bits."""
    signed, unsigned = np.dtype(f"i{dtype().itemsize}"), np.dtype(f"u{dtype().itemsize}")
    o, v = np.array([old, value], dtype)
    s_o, s_v = o.view(signed), v.view(signed)
    u_o, u_v = o.view(unsigned), v.view(unsigned)
    if s_v < 0:
        bits = min(u_o, u_v) if op == "max" else max(u_o, u_v)
        return np.array([bits], unsigned).view(dtype)[0]
    bits = max(s_o, s_v) if op == "max" else min(s_o, s_v)
    return np.array([bits], signed).view(dtype)[0]


@pytest.mark.parametrize("slots", [1, 256])  # colliding (the accumulate path) and not
@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_atomics_are_tritons(slots, op, dtype):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(256).astype(dtype)
    nan = np.array([np.nan], dtype)
    x[[5, 9, 17, 40, 41]] = [nan[0], (-nan)[0], -0.0, 0.0, np.inf]
    z = rng.standard_normal(slots).astype(dtype)
    z[0] = -0.0
    expected_z, expected_old = z.copy(), np.zeros(256, dtype)
    for i in range(256):  # program-major, element order: the interpreter's
        expected_old[i] = expected_z[i % slots]
        expected_z[i % slots] = _triton(op, expected_z[i % slots], x[i], dtype)
    old = np.zeros(256, dtype)
    signature = {"z_ptr": f"*fp{8 * dtype().itemsize}", "x_ptr": "", "old_ptr": ""}
    signature["x_ptr"] = signature["old_ptr"] = signature["z_ptr"]
    kernel = tilec.compile(float_atomics_kernel, signature, {"SLOTS": slots, "OP": op},
                           backend="interp")  # fmt: skip
    kernel.run((1,), [z, x, old])
    bits = np.dtype(f"u{dtype().itemsize}")
    np.testing.assert_array_equal(z.view(bits), expected_z.view(bits))
    np.testing.assert_array_equal(old.view(bits), expected_old.view(bits))
    if slots == 1 and op == "max":
        assert np.isnan(z[0]) and not np.signbit(z[0])  # the NaN with the sign bit clear wins
