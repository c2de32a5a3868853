"""`tilec.autotune`, `tilec.Config`, `tilec.heuristics` on the interpreter: selection by key,
pruning, heuristics, reset/restore, failing configs, unknown keywords."""

from __future__ import annotations

import numpy as np
import pytest
from kernels import accumulate, divided, grid, limited

import tilec
import tilec.testing
from tilec.runtime.autotune import AutotuneKeyWarning
from tilec.runtime.autotune.tuner import AllConfigsFailed

CONFIGS = [tilec.Config({"BLOCK": b}) for b in (16, 32, 64)]


@pytest.fixture
def timed(monkeypatch):
    """do_bench replaced: a config's time is `cost(BLOCK, n)`; records each timed config."""
    calls: list[tuple[int, int]] = []
    state = {"cost": lambda block, n: block}

    def fake(kernel_call, **_):
        kernel_call()
        launch = fake.current
        calls.append(launch)
        time = float(state["cost"](*launch))
        return [time, time, time]

    fake.current = None
    monkeypatch.setattr(tilec.testing, "do_bench", fake)
    return calls, state, fake


def _arrays(n=100, out=1.0):
    return np.arange(n, dtype=np.float32), np.full(n, out, np.float32)


def _recording(fake):
    """A pre_hook telling the fake do_bench which config is being timed."""

    def hook(named):
        fake.current = (named["BLOCK"], named["n"])

    return hook


def test_config_kwargs_and_str():
    config = tilec.Config({"BLOCK": 32}, num_warps=8, num_stages=2)
    assert config.all_kwargs() == {"BLOCK": 32, "num_warps": 8, "num_stages": 2}
    assert str(config) == "BLOCK: 32, num_warps: 8, num_stages: 2"
    assert config == tilec.Config({"BLOCK": 32}, num_warps=8, num_stages=2)


def test_selection_by_key(timed):
    calls, state, fake = timed
    state["cost"] = lambda block, n: abs(block - (16 if n < 200 else 64))
    kernel = tilec.autotune(
        CONFIGS, key=["n"], restore_value=["out_ptr"], pre_hook=_recording(fake)
    )(accumulate)
    for n, best in ((100, 16), (300, 64), (100, 16)):
        x, out = _arrays(n, 0.0)
        kernel[grid(n)](x, out, n)
        assert kernel.best_config.kwargs["BLOCK"] == best
        np.testing.assert_array_equal(out, x)
    assert len(calls) == 6, "each key tuned once; the third launch reuses the first key's choice"


def test_prune_early_and_perf_model(timed):
    calls, _, fake = timed
    configs = [tilec.Config({"BLOCK": b}) for b in (8, 16, 32, 64)]

    def early(configs, named, **kwargs):
        assert named["n"] == 100
        return [c for c in configs if c.kwargs["BLOCK"] >= 16]

    def model(**kw):
        return -kw["BLOCK"]  # the model thinks bigger is faster

    kernel = tilec.autotune(
        configs, key=["n"], pre_hook=_recording(fake),
        prune_configs_by={"early_config_prune": early, "perf_model": model, "top_k": 2},
    )(accumulate)  # fmt: skip
    x, out = _arrays()
    kernel[grid(100)](x, out, 100)
    assert sorted(block for block, _ in calls) == [32, 64]
    assert kernel.best_config.kwargs["BLOCK"] == 32


def test_top_k_fraction(timed):
    calls, _, fake = timed
    kernel = tilec.autotune(
        [*CONFIGS, tilec.Config({"BLOCK": 128})], key=["n"], pre_hook=_recording(fake),
        prune_configs_by={"perf_model": lambda **kw: kw["BLOCK"], "top_k": 0.5},
    )(accumulate)  # fmt: skip
    kernel[grid(100)](*_arrays(), 100)
    assert sorted(block for block, _ in calls) == [16, 32]


def test_heuristics_alone_and_stacked_either_order():
    plain = tilec.heuristics({"BLOCK": lambda args: 32 if args["n"] < 200 else 64})(accumulate)
    x, out = _arrays(100, 0.0)
    plain[grid(100)](x, out, 100)
    np.testing.assert_array_equal(out, x)
    with pytest.raises(TypeError, match=r"computed by @tilec\.heuristics"):
        plain[grid(100)](x, out, 100, 16)  # by position: Triton's "multiple values" too

    by_warps = tilec.heuristics({"BLOCK": lambda args: 16 * args["num_warps"]})
    by_n = tilec.heuristics({"BLOCK": lambda args: 32 if args["n"] < 200 else 64})
    configs = [tilec.Config({}, num_warps=w) for w in (1, 2, 4)]
    tune = tilec.autotune(configs, key=["n"], restore_value=["out_ptr"], warmup=1, rep=2)
    # Below the autotuner a heuristic sees each config's values; above it, the launch's.
    for kernel, blocks in (
        (tune(by_warps(accumulate)), {16, 32, 64}),
        (by_n(tune(accumulate)), {32}),
    ):
        seen = []
        x, out = _arrays(100, 0.0)
        kernel[
            lambda meta, seen=seen: (seen.append(meta["BLOCK"]) or tilec.cdiv(100, meta["BLOCK"]),)
        ](x, out, 100)
        np.testing.assert_array_equal(out, x)
        assert kernel.best_config in configs
        assert set(seen) == blocks


def test_heuristics_rejects_unknown_parameter():
    with pytest.raises(ValueError, match="no parameter 'BLOK'"):
        tilec.heuristics({"BLOK": lambda args: 1})(accumulate)


@pytest.mark.parametrize("timed_runs", [True, False])
def test_restore_value_gives_the_untuned_result(timed_runs):
    x, expected = _arrays(100, 1.0)
    accumulate[grid(100)](x, expected, 100, BLOCK=32)
    kernel = tilec.autotune(CONFIGS, key=["n"], restore_value=["out_ptr"], warmup=1, rep=2)(
        accumulate
    )
    x, out = _arrays(100, 1.0)
    kernel[grid(100)](x, out, 100)
    np.testing.assert_array_equal(out, expected)
    without = tilec.autotune(CONFIGS, key=["n"], warmup=1, rep=2, cache_results=False)(accumulate)
    x, spoiled = _arrays(100, 1.0)
    without[grid(100)](x, spoiled, 100)
    assert not np.array_equal(spoiled, expected), "the test's kernel must accumulate"


def test_reset_to_zero_before_each_run_and_the_final_launch():
    seen = []
    kernel = tilec.autotune(
        CONFIGS, key=["n"], reset_to_zero=["out_ptr"], warmup=1, rep=2,
        pre_hook=lambda named: seen.append(float(named["out_ptr"].max())),
    )(accumulate)  # fmt: skip
    x, out = _arrays(100, 5.0)
    kernel[grid(100)](x, out, 100)
    np.testing.assert_array_equal(out, x)
    assert seen and set(seen) == {0.0}


def test_failing_configs_skipped_with_reasons(monkeypatch, capsys):
    monkeypatch.setenv("TILEC_PRINT_AUTOTUNING", "1")
    configs = [tilec.Config({"BLOCK": b}) for b in (32, 128, 256)]
    kernel = tilec.autotune(configs, key=["n"], warmup=1, rep=2)(limited)
    x, out = _arrays()
    kernel[grid(100)](x, out, 100)
    np.testing.assert_array_equal(out, 2 * x)
    assert kernel.best_config.kwargs["BLOCK"] == 32
    assert set(kernel.failures) == set(configs[1:])
    assert all("BLOCK too large" in reason for reason in kernel.failures.values())
    err = capsys.readouterr().err
    assert "BLOCK: 128, num_warps: 4, num_stages: 3: skipped" in err
    assert "chose BLOCK: 32" in err


def test_config_failing_at_run_time_is_skipped():
    """A config that compiles but fails when run (here a device assertion) is skipped too."""
    configs = [tilec.Config({"BLOCK": b}) for b in (64, 32)]
    kernel = tilec.autotune(configs, key=["n"], warmup=1, rep=2)(divided)
    x, out = np.arange(96, dtype=np.float32), np.zeros(96, np.float32)
    kernel[grid(96)](x, out, 96)
    np.testing.assert_array_equal(out, x)
    assert kernel.best_config is configs[1]
    assert list(kernel.failures) == [configs[0]]
    assert "BLOCK must divide n" in kernel.failures[configs[0]]


def test_hooks_around_each_timing_run():
    """A Config's pre_hook runs before each of its timing runs and before the launch with it;
    the autotuner's pre_hook/post_hook(named, exception=None) around each timing run only."""
    log = []
    configs = [
        tilec.Config({"BLOCK": b}, pre_hook=lambda named, b=b: log.append(("config", b)))
        for b in (16, 32)
    ]
    kernel = tilec.autotune(
        configs, key=["n"], warmup=1, rep=2,
        pre_hook=lambda named: log.append(("pre", named["BLOCK"])),
        post_hook=lambda named, exception: log.append(("post", named["BLOCK"], exception)),
    )(accumulate)  # fmt: skip
    x, out = _arrays(100, 0.0)
    kernel[grid(100)](x, out, 100)
    best = kernel.best_config.kwargs["BLOCK"]
    assert log[-1] == ("config", best), "the launch runs the chosen config's pre_hook"
    timing = log[:-1]
    for block in (16, 32):
        runs = timing.count(("pre", block))
        assert runs > 1
        assert timing.count(("config", block)) == runs
        assert timing.count(("post", block, None)) == runs
    assert timing[:3] == [("config", 16), ("pre", 16), ("post", 16, None)]


def test_cache_results_false_writes_no_file(tmp_path):
    cache = tmp_path / "cache" / "autotune"
    kernel = tilec.autotune(CONFIGS, key=["n"], warmup=1, rep=2, cache_results=False)
    kernel(accumulate)[grid(100)](*_arrays(), 100)
    assert not cache.exists() or not list(cache.iterdir())
    tilec.autotune(CONFIGS, key=["n"], warmup=1, rep=2)(accumulate)[grid(100)](*_arrays(), 100)
    assert len(list(cache.glob("*.json"))) == 1


def test_invalid_option_value_is_a_failing_config():
    configs = [tilec.Config({"BLOCK": 32}, num_warps=3), tilec.Config({"BLOCK": 32})]
    kernel = tilec.autotune(configs, key=["n"], warmup=1, rep=2)(limited)
    kernel[grid(100)](*_arrays(), 100)
    assert kernel.best_config is configs[1]
    assert "num_warps" in kernel.failures[configs[0]]


def test_every_config_failing_lists_each_reason():
    configs = [tilec.Config({"BLOCK": b}) for b in (128, 256)]
    kernel = tilec.autotune(configs, key=["n"], warmup=1, rep=2)(limited)
    with pytest.raises(AllConfigsFailed) as info:
        kernel[grid(100)](*_arrays(), 100)
    message = str(info.value)
    assert "BLOCK: 128" in message and "BLOCK: 256" in message
    assert message.count("static assertion failed: BLOCK too large") == 2


def test_unknown_keywords_are_errors():
    with pytest.raises(TypeError):
        tilec.autotune(CONFIGS, key=["n"], use_cuda_graph=True)
    with pytest.raises(TypeError):
        tilec.Config({"BLOCK": 16}, num_ctas=2)
    with pytest.raises(TypeError, match="prune_configs_by has no key 'topk'"):
        tilec.autotune(CONFIGS, key=["n"], prune_configs_by={"topk": 1})(accumulate)
    with pytest.warns(AutotuneKeyWarning, match="key 'm' is no parameter"):
        tilec.autotune(CONFIGS, key=["m"])(accumulate)  # ignored, as Triton does
    with pytest.raises(ValueError, match="restore_value: accumulate has no parameter"):
        tilec.autotune(CONFIGS, key=["n"], restore_value=["o"])(accumulate)
    kernel = tilec.autotune(CONFIGS, key=["n"], warmup=1, rep=2)(accumulate)
    with pytest.raises(TypeError, match="unknown keyword 'bogus'"):
        kernel[grid(100)](*_arrays(), 100, bogus=1)
    with pytest.raises(TypeError, match="conflicting meta-parameters BLOCK"):
        kernel[grid(100)](*_arrays(), 100, BLOCK=16)
    bad = tilec.autotune([tilec.Config({"BLOCKS": 16}), tilec.Config({"B": 1})], key=["n"])
    with pytest.raises(TypeError, match="unknown keyword"):
        bad(accumulate)[grid(100)](*_arrays(), 100)


def test_autotune_needs_jit_below():
    with pytest.raises(TypeError, match=r"put @tilec\.jit below it"):
        tilec.autotune(CONFIGS, key=["n"])(lambda x: x)


def test_one_config_is_not_timed(timed):
    calls, _, _ = timed
    kernel = tilec.autotune(CONFIGS[:1], key=["n"])(accumulate)
    x, out = _arrays(100, 0.0)
    kernel[grid(100)](x, out, 100)
    assert calls == [] and kernel.best_config is CONFIGS[0]
    np.testing.assert_array_equal(out, x)


class _DeviceLike:
    """What reset/restore need of a tilec device array: shape, dtype, numpy(), copy_from()."""

    def __init__(self, values):
        self.memory = np.array(values, np.float32)
        self.shape, self.dtype = self.memory.shape, self.memory.dtype

    def numpy(self):
        return self.memory.copy()

    def copy_from(self, array):
        self.memory[...] = array
        return self


def test_reset_and_restore_device_arrays():
    from tilec.runtime.autotune import tuner

    array = _DeviceLike([1.0, 2.0])
    saved = tuner._snapshot(array)
    tuner._zero(array)
    np.testing.assert_array_equal(array.memory, [0.0, 0.0])
    tuner._restore(array, saved)
    np.testing.assert_array_equal(array.memory, [1.0, 2.0])
    with pytest.raises(TypeError, match="cannot zero an argument of type int"):
        tuner._zero(3)
