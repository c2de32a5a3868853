"""`@autotune(key=[...])` naming no parameter of the kernel (issue 20: Triton's older
grouped-GEMM tutorial has such a typo): Triton ignores the name; tilec ignores it too, with an
`AutotuneKeyWarning` naming the kernel and the key at the decorator's line, and tunes on the
names that are parameters."""

import sys
import warnings

import numpy as np
import pytest

import tilec
import tilec.language as tl
import tilec.testing
from tilec.runtime.autotune import AutotuneKeyWarning


@tilec.jit
def scaled_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 3, mask=mask)


CONFIGS = [tilec.Config({"BLOCK": 16}), tilec.Config({"BLOCK": 32})]


@pytest.fixture
def timed(monkeypatch):
    """do_bench replaced: counts the timing runs (one per config tuned)."""
    runs = []

    def fake(kernel_call, **_):
        kernel_call()
        runs.append(1)
        return [1.0, 1.0, 1.0]

    monkeypatch.setattr(tilec.testing, "do_bench", fake)
    return runs


def test_an_unknown_key_is_ignored_with_a_warning_at_the_decorator(timed):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        tuned = tilec.autotune(CONFIGS, key=["n", "NUM_SM"], cache_results=False)(scaled_copy)
    [warning] = [w for w in caught if issubclass(w.category, AutotuneKeyWarning)]
    assert issubclass(warning.category, UserWarning)
    assert str(warning.message) == (
        "@tilec.autotune of scaled_copy: key 'NUM_SM' is no parameter of scaled_copy "
        "(parameters: x_ptr, out_ptr, n, BLOCK); ignored, as Triton does"
    )
    assert (warning.filename, warning.lineno) == (__file__, line)
    assert tuned.keys == ["n"]
    for n in (100, 100, 200):
        x = np.arange(n, dtype=np.float32)
        out = np.zeros(n, np.float32)
        tuned[lambda meta, n=n: (tilec.cdiv(n, meta["BLOCK"]),)](x, out, n, backend="interp")
        np.testing.assert_array_equal(out, 3 * x)
    assert len(timed) == 4  # both configs timed for n=100 and again for n=200


def test_only_unknown_keys_leave_a_tuning_by_dtypes(timed):
    with pytest.warns(AutotuneKeyWarning, match="keys 'M', 'K' are no parameters of scaled_copy"):
        tuned = tilec.autotune(CONFIGS, key=["M", "K"], cache_results=False)(scaled_copy)
    for n in (64, 128):
        x = np.arange(n, dtype=np.float32)
        out = np.zeros(n, np.float32)
        tuned[lambda meta, n=n: (tilec.cdiv(n, meta["BLOCK"]),)](x, out, n, backend="interp")
        np.testing.assert_array_equal(out, 3 * x)
    assert len(timed) == 2  # tuned once: n is no key
