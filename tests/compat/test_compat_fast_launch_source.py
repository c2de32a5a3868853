"""The launch fast path's generated guard function (`tilec.runtime.hot_path`) for every call
shape (issue 20: a `SyntaxError` came from a kernel whose parameters were all constexprs with
defaults, shapes among them): no parameter name and no constexpr value (tuples, strings with
quotes, dtypes, None, names of builtins and of the function's own variables) ends up in its
source text, and a launch like an earlier one takes the fast launch."""

import numpy as np
import pytest

import tilec
import tilec.language as tl


@tilec.jit
def fill_shape(shape: tl.constexpr = (2, 4), value: tl.constexpr = 3.0):
    tl.static_assert(shape[0] * shape[1] == 8)
    tl.full(shape, value, tl.float32)


def test_a_kernel_of_constexpr_defaults_only_launches_again_fast(general):
    for _ in range(3):
        fill_shape[(1,)](backend="interp")
    assert len(general) == 1


def make_awkward():
    """A new kernel (with no fast launches yet)."""

    @tilec.jit
    def awkward(
        out_ptr,
        args,
        meta: tl.constexpr,
        grid: tl.constexpr,
        type: tl.constexpr,
        len: tl.constexpr,
        MISS: tl.constexpr,
        compiled: tl.constexpr,
    ):
        offsets = tl.arange(0, 4)
        value = tl.full((4,), args + meta[0] * meta[1], len).to(tl.float32)
        if MISS is None:
            value += compiled[0][1]
        if grid == 'it\'s "quoted"\n':
            value += 1000.0
        tl.store(out_ptr + offsets, value + type)

    return awkward


CONSTEXPRS = {
    "meta": (16, 32),
    "grid": 'it\'s "quoted"\n',
    "type": 0.5,
    "len": tl.float16,
    "MISS": None,
    "compiled": ((1, 2), (3,)),
}


@pytest.mark.parametrize("by_keyword", [False, True])
def test_awkward_names_and_values_take_the_fast_launch(general, by_keyword):
    awkward = make_awkward()
    out = np.zeros(4, np.float32)
    for _ in range(3):
        out[:] = 0
        if by_keyword:
            awkward[(1,)](out, args=7, backend="interp", **CONSTEXPRS)
        else:
            awkward[(1,)](out, 7, *CONSTEXPRS.values(), backend="interp")
        np.testing.assert_array_equal(out, np.full(4, 7 + 512 + 2 + 1000 + 0.5))
    assert len(general) == 1
    changed = {**CONSTEXPRS, "meta": (2, 2), "grid": "plain", "MISS": 0}
    for _ in range(2):
        awkward[(1,)](out, 7, *changed.values(), backend="interp")
        np.testing.assert_array_equal(out, np.full(4, 7 + 4 + 0.5))
    assert len(general) == 2
