"""Mistakes in `@tilec.autotune`, `@tilec.heuristics` and `tilec.Config` are tilec errors (issue
14): raised where the decorator is applied (its line is the error's `call_site`, tilec's frames
trimmed), naming the kernel and the fix, and still the builtin they were; an autotuner over an
autotuned kernel is refused there too. A tuning whose every config failed with one launch error
raises that error, otherwise `AllConfigsFailed` (a `TilecError` and a `RuntimeError`)."""

from __future__ import annotations

import os
import sys
import traceback

import numpy as np
import pytest
from kernels import accumulate, grid, limited

import tilec
import tilec.language as tl
from tilec.runtime.autotune.tuner import AllConfigsFailed

CONFIGS = [tilec.Config({"BLOCK": b}) for b in (16, 32)]


def tilec_frames(error: BaseException) -> list[str]:
    """The files of tilec's own frames left in `error`'s traceback."""
    files = [frame.filename for frame in traceback.extract_tb(error.__traceback__)]
    return [os.path.basename(f) for f in files if os.sep + "tilec" + os.sep in f]


def test_an_autotuner_over_an_autotuned_kernel_is_refused_at_the_decorator():
    line = sys._getframe().f_lineno + 3  # the outer decorator
    with pytest.raises(tilec.DecoratorTypeError) as info:

        @tilec.autotune([tilec.Config({}, num_warps=w) for w in (1, 2)], key=["n"])
        @tilec.autotune(CONFIGS, key=["n"])
        @tilec.jit
        def twice_tuned(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.arange(0, BLOCK)
            tl.store(out_ptr + offsets, tl.load(x_ptr + offsets))

    error = info.value
    assert isinstance(error, TypeError) and isinstance(error, tilec.DecoratorError)
    assert str(error).startswith(
        "@tilec.autotune over twice_tuned, which is autotuned already: an autotuner cannot time "
        "the configs of another. Merge the two into one @tilec.autotune"
    )
    assert error.call_site == f"{__file__}:{line}"
    assert tilec_frames(error) == ["entry.py"]


def test_an_autotuner_over_heuristics_over_an_autotuner_is_refused_too():
    by_n = tilec.heuristics({"BLOCK": lambda args: 16 if args["n"] < 1000 else 32})
    tuned = by_n(tilec.autotune(CONFIGS, key=["n"])(accumulate))  # heuristics above: fine
    assert tuned.arg_names == accumulate.arg_names
    with pytest.raises(tilec.DecoratorTypeError, match="accumulate, which is autotuned already"):
        tilec.autotune(CONFIGS, key=["n"])(tuned)


def not_a_kernel(x):
    return x


@pytest.mark.parametrize(
    ("decorate", "kind", "builtin", "text"),
    [
        (tilec.autotune(CONFIGS[0], key=["n"]), tilec.DecoratorTypeError, TypeError,
         "@tilec.autotune of accumulate: configs is a list of tilec.Config; got one Config, "
         "pass [Config(BLOCK: 16, num_warps: 4, num_stages: 3)]"),
        (tilec.autotune([], key=["n"]), tilec.DecoratorValueError, ValueError,
         "@tilec.autotune of accumulate needs at least one tilec.Config"),
        (tilec.autotune([{"BLOCK": 16}], key=["n"]), tilec.DecoratorTypeError, TypeError,
         "@tilec.autotune of accumulate: configs must be tilec.Config; got {'BLOCK': 16}"),
        (tilec.autotune(CONFIGS, key="n"), tilec.DecoratorTypeError, TypeError,
         "@tilec.autotune of accumulate: key is a list of parameter names, as in key=['n']; "
         "got 'n'"),
        (tilec.autotune(CONFIGS, key=None), tilec.DecoratorTypeError, TypeError,
         "key is a list of parameter names, as in key=['n']; got None"),
        (tilec.autotune(CONFIGS, key=["n"], reset_to_zero=["out"]), tilec.DecoratorValueError,
         ValueError, "@tilec.autotune reset_to_zero: accumulate has no parameter 'out'"),
        (tilec.autotune(CONFIGS, key=["n"], prune_configs_by={"topk": 1}),
         tilec.DecoratorTypeError, TypeError,
         "@tilec.autotune of accumulate: prune_configs_by has no key 'topk'"),
        (tilec.autotune(CONFIGS, key=["n"], prune_configs_by=len), tilec.DecoratorTypeError,
         TypeError, "@tilec.autotune of accumulate: prune_configs_by is a dict with the keys"),
        (tilec.autotune(CONFIGS, key=["n"], prune_configs_by={"top_k": 1}),
         tilec.DecoratorValueError, ValueError,
         "@tilec.autotune of accumulate: prune_configs_by's top_k needs a perf_model"),
        (tilec.autotune(CONFIGS, key=["n"], prune_configs_by={"perf_model": len, "top_k": 0}),
         tilec.DecoratorTypeError, TypeError,
         "prune_configs_by's top_k is an int >= 1 or a fraction of the configs <= 1.0; got 0"),
        (tilec.autotune(CONFIGS, key=["n"], prune_configs_by={"perf_model": 3}),
         tilec.DecoratorTypeError, TypeError, "prune_configs_by's perf_model is a function"),
        (tilec.autotune(CONFIGS, key=["n"], post_hook="log"), tilec.DecoratorTypeError,
         TypeError, "@tilec.autotune of accumulate: post_hook is a function"),
        (tilec.heuristics({"BLOCK": 32}), tilec.DecoratorTypeError, TypeError,
         "@tilec.heuristics over accumulate: the heuristic of 'BLOCK' is 32, no function; give "
         "a function of the arguments ('BLOCK': lambda args: ...)"),
        (tilec.heuristics([("BLOCK", len)]), tilec.DecoratorTypeError, TypeError,
         "@tilec.heuristics over accumulate takes a dict {parameter name: function of the "
         "arguments}"),
        (tilec.heuristics({"BLOK": len}), tilec.DecoratorValueError, ValueError,
         "@tilec.heuristics: accumulate has no parameter 'BLOK' (parameters: x_ptr, out_ptr, n, "
         "BLOCK)"),
    ],
)  # fmt: skip
def test_decorator_mistakes_are_decorator_errors_at_the_decorator(decorate, kind, builtin, text):
    line = sys._getframe().f_lineno + 2
    with pytest.raises(kind) as info:
        decorate(accumulate)
    error = info.value
    assert isinstance(error, builtin) and isinstance(error, tilec.DecoratorError)
    assert text in str(error)
    assert error.call_site == f"{__file__}:{line}"
    assert tilec_frames(error) == ["entry.py"]


@pytest.mark.parametrize("decorate", [tilec.autotune(CONFIGS, key=["n"]), tilec.heuristics({})])
def test_a_decorator_over_no_kernel_says_to_put_jit_below_it(decorate):
    with pytest.raises(tilec.DecoratorTypeError) as info:
        decorate(not_a_kernel)
    assert isinstance(info.value, TypeError)
    assert "over not_a_kernel: it wraps a @tilec.jit kernel, put @tilec.jit below it" in str(
        info.value
    )


def test_a_config_that_is_no_dict_or_whose_pre_hook_is_no_function_is_a_decorator_error():
    line = sys._getframe().f_lineno + 2
    with pytest.raises(tilec.DecoratorTypeError) as info:
        tilec.Config([("BLOCK", 16)])
    assert isinstance(info.value, TypeError) and error_line(info.value) == line
    assert "tilec.Config takes the meta-parameters as a dict" in str(info.value)
    with pytest.raises(tilec.DecoratorTypeError, match="pre_hook is a function"):
        tilec.Config({"BLOCK": 16}, pre_hook=16)


def error_line(error: tilec.TilecError) -> int:
    return int(error.call_site.rpartition(":")[2])


def test_an_early_prune_that_keeps_no_config_is_a_decorator_error():
    kernel = tilec.autotune(
        CONFIGS, key=["n"], prune_configs_by={"early_config_prune": lambda configs, named: []}
    )(accumulate)
    x, out = np.arange(100, dtype=np.float32), np.zeros(100, np.float32)
    with pytest.raises(tilec.DecoratorValueError) as info:
        kernel[grid(100)](x, out, 100)
    assert isinstance(info.value, ValueError)
    assert "accumulate: early_config_prune left no config for this launch" in str(info.value)


def test_every_config_failing_with_one_launch_error_raises_that_error():
    """The launch's own option fails every config alike: that error, located and trimmed, is
    what the user sees, not AllConfigsFailed."""
    kernel = tilec.autotune(CONFIGS, key=["n"], warmup=1, rep=2)(accumulate)
    x, out = np.arange(100, dtype=np.float32), np.zeros(100, np.float32)
    line = sys._getframe().f_lineno + 2
    with pytest.raises(tilec.OptionValueError) as info:
        kernel[grid(100)](x, out, 100, debug=3)
    error = info.value
    assert isinstance(error, ValueError) and not isinstance(error, AllConfigsFailed)
    assert "accumulate: backend 'interp': option 'debug' must be True or False; got 3" in str(error)
    assert error.call_site == f"{__file__}:{line}"
    assert tilec_frames(error) == ["entry.py"]
    assert set(kernel.failures) == set(CONFIGS)  # each config's reason is still kept


def test_configs_failing_for_their_own_reasons_are_all_configs_failed():
    configs = [tilec.Config({"BLOCK": b}) for b in (128, 256)]
    kernel = tilec.autotune(configs, key=["n"], warmup=1, rep=2)(limited)
    x, out = np.arange(100, dtype=np.float32), np.zeros(100, np.float32)
    line = sys._getframe().f_lineno + 2
    with pytest.raises(tilec.AllConfigsFailed) as info:
        kernel[grid(100)](x, out, 100)
    error = info.value
    assert isinstance(error, AllConfigsFailed) and isinstance(error, RuntimeError)
    assert isinstance(error, tilec.TilecError) and not isinstance(error, tilec.LaunchError)
    assert "limited: every autotuning config failed" in str(error)
    assert error.call_site == f"{__file__}:{line}"
    assert tilec_frames(error) == ["entry.py"]
