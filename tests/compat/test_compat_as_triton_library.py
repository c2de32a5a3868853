"""What Triton libraries take from Triton's modules beyond `triton.language` (issue 20, the
flash-linear-attention run): `triton.runtime.autotuner.Autotuner` built with Triton's
constructor and subclassed with its hooks replaced, and the helpers of `triton.language.core` /
`standard` that kernels call (`CONSTEXPR_0`, `get_int_dtype`, `_log2`). The kernels and the
subclass are written here; they run on interp without activating the alias."""

from __future__ import annotations

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.as_triton import language_core as core
from tilec.as_triton.autotuner import Autotuner


@tilec.jit
def accumulate(x_ptr, out_ptr, aux_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    total = tl.load(out_ptr + offsets, mask=mask) + tl.load(x_ptr + offsets, mask=mask)
    if aux_ptr is not None:
        tl.store(aux_ptr + offsets, total, mask=mask)
    tl.store(out_ptr + offsets, total, mask=mask)


CONFIGS = [tilec.Config({"BLOCK": 16}), tilec.Config({"BLOCK": 32})]


def grid(meta):
    return (tilec.cdiv(meta["n"], meta["BLOCK"]),)


def _launch(tuner, n):
    """Each test its own `n` (the tuning key): no timing stored by another test is reused."""
    x = np.arange(n, dtype=np.float32)
    out = np.ones(n, np.float32)
    tuner[grid](x, out, None, n, backend="interp")
    return x, out


def test_triton_constructor_restores_values_between_timing_runs():
    tuner = Autotuner(accumulate, accumulate.arg_names, CONFIGS, ["n"], None, ["out_ptr"])
    assert not tuner.user_defined_pre_hook and not tuner.user_defined_post_hook
    assert tuner.arg_names == accumulate.arg_names and tuner.reset_to_zero == []
    x, out = _launch(tuner, 64)
    assert tuner.best_config in CONFIGS
    np.testing.assert_array_equal(out, x + 1)  # once, not once per timing run


def test_a_subclass_replacing_the_hooks_is_honoured():
    """A library's subclass (as flash-linear-attention's) sets `pre_hook`/`post_hook` after
    Triton's constructor, here to skip `None` arguments; the timing runs call them."""
    calls = []

    class LibraryTuner(Autotuner):
        def __init__(self, fn, arg_names, configs, key, reset_to_zero, restore_value, **kwargs):
            super().__init__(fn, arg_names, configs, key, reset_to_zero, restore_value, **kwargs)

            def pre_hook(named, reset_only=False):
                calls.append(("pre", reset_only))
                for name in self.reset_to_zero:
                    if named[name] is not None:
                        named[name][:] = 0
                if not reset_only:
                    self.restore_copies = {
                        n: named[n].copy() for n in self.restore_value if named[n] is not None
                    }

            def post_hook(named, exception):
                calls.append(("post", exception))
                for name, copy in self.restore_copies.items():
                    named[name][:] = copy

            self.pre_hook, self.post_hook = pre_hook, post_hook

    tuner = LibraryTuner(accumulate, accumulate.arg_names, CONFIGS, ["n"], ["aux_ptr"],
                         ["out_ptr", "aux_ptr"], prune_configs_by=None, warmup=1, rep=1)  # fmt: skip
    x, out = _launch(tuner, 48)  # aux_ptr is None: Triton's own hooks would fail on it
    np.testing.assert_array_equal(out, x + 1)
    assert ("pre", False) in calls and ("post", None) in calls
    assert calls[-1] == ("pre", True)  # after tuning, before the launch: reset only


def test_a_given_pre_hook_replaces_the_zeroing_and_do_bench_times_the_configs():
    seen = []

    def pre_hook(named, reset_only=False):
        seen.append(reset_only)

    def do_bench(kernel_call, quantiles):
        kernel_call()
        block = tuner.configs[len(timed)].kwargs["BLOCK"]
        timed.append(block)
        return [1.0 / block, 1.0 / block, 1.0 / block]  # the larger block is faster

    timed: list[int] = []
    tuner = Autotuner(accumulate, accumulate.arg_names, CONFIGS, ["n"], ["out_ptr"], None,
                      pre_hook=pre_hook, do_bench=do_bench)  # fmt: skip
    assert tuner.user_defined_pre_hook
    x, out = _launch(tuner, 40)
    assert timed == [16, 32] and tuner.best_config.kwargs == {"BLOCK": 32}
    assert seen == [False, False, True]
    # Triton zeroes reset_to_zero only in its own pre_hook: each timing run and the launch
    # added x to the output, never zeroed
    np.testing.assert_array_equal(out, 1 + 3 * x)


def test_no_configs_is_tritons_default_config_and_arg_names_are_checked():
    tuner = Autotuner(accumulate, accumulate.arg_names, [], [], None, None)
    assert [(c.kwargs, c.num_warps, c.num_stages) for c in tuner.configs] == [({}, 4, 3)]
    with pytest.raises(tilec.DecoratorValueError, match=r"arg_names are the kernel's parameters"):
        Autotuner(accumulate, ["x_ptr"], CONFIGS, ["n"], None, None)


@tilec.jit
def bits_and_log(x_ptr, bits_ptr, y_ptr, BLOCK: tl.constexpr,
                 descending: tl.constexpr = core.CONSTEXPR_0):  # fmt: skip
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    itype = core.get_int_dtype(bitwidth=x.dtype.primitive_bitwidth, signed=True)
    tl.store(bits_ptr + offsets, x.to(itype, bitcast=True))
    log: tl.constexpr = core._log2(BLOCK)
    y = x + log
    if descending:  # tl.constexpr(0) as a default is 0, as in Triton
        y = -y
    tl.store(y_ptr + offsets, y)


def test_core_helpers_in_kernels():
    x = np.linspace(-3, 3, 16).astype(np.float16)
    bits, y = np.zeros(16, np.int16), np.zeros_like(x)
    bits_and_log[(1,)](x, bits, y, 16, backend="interp")
    np.testing.assert_array_equal(bits, x.view(np.int16))
    np.testing.assert_array_equal(y, x + np.float16(4))  # log2(16) = 4
    bits_and_log[(1,)](x, bits, y, 16, descending=tl.constexpr(1), backend="interp")
    np.testing.assert_array_equal(y, -(x + np.float16(4)))
    assert core.get_int_dtype(1, False) is tl.int1 and core.get_int_dtype(16, False) is tl.uint16
    assert [core._log2(i) for i in (1, 2, 3, 64, 100)] == [0, 1, 1, 6, 6]
    with pytest.raises(ValueError, match="no integer type of 24 bits"):
        core.get_int_dtype(24, True)


def test_a_key_naming_a_tuned_meta_parameter_is_left_out_of_the_tuning_key():
    """flash-linear-attention's kernels list config parameters (`BV`) in `key`: Triton's key
    holds only the values of the launch's arguments, so that name adds nothing."""
    tuner = Autotuner(accumulate, accumulate.arg_names, CONFIGS, ["n", "BLOCK"], None,
                      ["out_ptr"])  # fmt: skip
    x, out = _launch(tuner, 24)
    np.testing.assert_array_equal(out, x + 1)
    assert len(tuner.cache) == 1 and tuner.best_config in CONFIGS
    with pytest.raises(tilec.LaunchArgumentError, match="missing argument 'n'"):
        tuner[grid](x, out, None, backend="interp")


@tilec.jit
def round_to_store_type(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    tl.store(y_ptr + offsets, x.to(y_ptr.dtype.element_ty, fp_downcast_rounding="rtne"))


def test_downcast_rounding_on_a_cast_to_the_same_type_is_the_value():
    """Triton returns `x` from `x.to(x.dtype, fp_downcast_rounding=...)` before it looks at the
    rounding (flash-linear-attention casts to the output's element type, f32 or narrower)."""
    x = np.linspace(-1, 1, 16).astype(np.float32)
    for dtype in (np.float32, np.float16):
        y = np.zeros(16, dtype)
        round_to_store_type[(1,)](x, y, 16, backend="interp")
        np.testing.assert_array_equal(y, x.astype(dtype))


@tilec.jit
def padded_copy(x_ptr, y_ptr, K: tl.constexpr):
    BK: tl.constexpr = tilec.next_power_of_2(K)  # as `triton.next_power_of_2(K)` in fla's kernels
    offsets = tl.arange(0, BK)
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < K, other=-1.0))


def test_next_power_of_2_of_constexprs_in_a_kernel():
    x = np.arange(5, dtype=np.float32)
    y = np.zeros(8, np.float32)
    padded_copy[(1,)](x, y, 5, backend="interp")
    np.testing.assert_array_equal(y, [0, 1, 2, 3, 4, -1, -1, -1])


@tilec.jit
def sum_rows(x_ptr, y_ptr, n, USE_G: tl.constexpr, WHILE: tl.constexpr):
    offsets = tl.arange(0, 16)
    acc = tl.zeros([16], dtype=tl.float32)
    if USE_G:
        g = tl.zeros([16], dtype=tl.float32)
    else:
        g = None  # flash-linear-attention's kernels: a value only where a constexpr flag is on
    if WHILE:
        i = 0
        while i < n:
            acc += tl.load(x_ptr + i * 16 + offsets)
            if USE_G:
                g += 1.0
            i += 1
    else:
        for i in range(0, n):
            acc += tl.load(x_ptr + i * 16 + offsets)
            if USE_G:
                g += 1.0
    if USE_G:
        acc += g
    tl.store(y_ptr + offsets, acc)


@tilec.jit
def none_set_in_loop(x_ptr, y_ptr, n):
    offsets = tl.arange(0, 16)
    g = None
    for i in range(0, n):
        g = tl.load(x_ptr + i + offsets)
    tl.store(y_ptr + offsets, g)


@pytest.mark.parametrize("use_while", [False, True])
def test_a_name_none_before_a_loop_is_not_carried(use_while):
    """As Triton's loops carry only kernel values, a name that is None before the loop and that
    the body leaves alone (its assignment under a false constexpr branch) stays None."""
    x = np.arange(48, dtype=np.float32)
    expected = x.reshape(3, 16).sum(0)
    for use_g in (False, True):
        y = np.zeros(16, np.float32)
        sum_rows[(1,)](x, y, 3, USE_G=use_g, WHILE=use_while, backend="interp")
        np.testing.assert_array_equal(y, expected + (3 if use_g else 0))


def test_a_name_none_before_a_loop_that_the_body_sets_is_an_error():
    x, y = np.ones(16, np.float32), np.zeros(16, np.float32)
    with pytest.raises(tilec.CompilationError, match="'g' is None before the loop and gets a"):
        none_set_in_loop[(1,)](x, y, 3, backend="interp")
