"""`tilec.autotune`: Triton's autotuner. At the first launch with new key values, every config
(after pruning) is compiled (in parallel, see `parallel`) and timed with `tilec.testing.do_bench`;
the fastest is used for that launch and later ones with the same key values, and shows in
`kernel.best_config`. Timings persist on disk (`store`). A config that fails to compile, to load
or to run is skipped with its reason; if every config fails, the error lists each reason.

Arguments named in `reset_to_zero` are zeroed before each timing run and once more before the
real launch; those in `restore_value` are saved before and restored after each timing run, so
that a kernel that accumulates into its output gives the result of an untuned launch.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from tilec import settings
from tilec.errors import (
    AllConfigsFailed,
    DecoratorTypeError,
    DecoratorValueError,
    LaunchArgumentError,
    LaunchError,
    TilecError,
)
from tilec.runtime.autotune import parallel, store
from tilec.runtime.autotune.checks import (
    checked_configs,
    checked_names,
    checked_pruning,
    known_keys,
)
from tilec.runtime.autotune.config import Config, KernelWrapper, resolve
from tilec.runtime.autotune.spec import compile_job
from tilec.runtime.compiler import get_backend
from tilec.runtime.entry import user_entry
from tilec.tools.tensor_descriptor import TensorDescriptor

QUANTILES = (0.5, 0.2, 0.8)


def _zero(value: Any) -> None:
    if hasattr(value, "zero_"):
        value.zero_()
    elif isinstance(value, np.ndarray):
        value[...] = 0
    elif hasattr(value, "copy_from"):  # a tilec device array
        value.copy_from(np.zeros(value.shape, value.dtype))
    else:
        raise LaunchArgumentError(f"cannot zero an argument of type {type(value).__name__}")


def _snapshot(value: Any) -> Any:
    if hasattr(value, "clone"):
        return value.clone()
    if isinstance(value, np.ndarray):
        return value.copy()
    if hasattr(value, "numpy"):  # a tilec device array: keep a host copy
        return value.numpy()
    raise LaunchArgumentError(f"cannot save an argument of type {type(value).__name__}")


def _restore(value: Any, saved: Any) -> None:
    if hasattr(value, "copy_"):
        value.copy_(saved)
    elif isinstance(value, np.ndarray):
        value[...] = saved
    elif hasattr(value, "copy_from"):
        value.copy_from(saved)
    else:
        raise LaunchArgumentError(f"cannot restore an argument of type {type(value).__name__}")


def _key_part(value: Any) -> Any:
    dtype = getattr(value, "dtype", None)
    if dtype is not None and hasattr(value, "shape"):
        return ("array", str(dtype))
    return value if isinstance(value, (int, float, str, bool, type(None))) else repr(value)


class Autotuner(KernelWrapper):
    """A kernel under `@tilec.autotune`: see the module's description."""

    def __init__(
        self, fn: Any, configs: Sequence[Config], key: Sequence[str], prune_configs_by: Any,
        reset_to_zero: Sequence[str], restore_value: Sequence[str], pre_hook: Any, post_hook: Any,
        warmup: float, rep: float, cache_results: bool,
    ):  # fmt: skip
        super().__init__(fn, "@tilec.autotune")
        name = fn.__name__
        _refuse_stacking(fn)
        configs = checked_configs(name, configs)
        key = known_keys(fn, key)
        reset_to_zero = checked_names(fn, "reset_to_zero", reset_to_zero)
        restore_value = checked_names(fn, "restore_value", restore_value)
        prune = checked_pruning(name, prune_configs_by)
        for what, hook in (("pre_hook", pre_hook), ("post_hook", post_hook)):
            if hook is not None and not callable(hook):
                raise DecoratorTypeError(
                    f"@tilec.autotune of {name}: {what} is a function of the named arguments; "
                    f"got {hook!r}"
                )
        self.configs = list(configs)
        self.keys = list(key)
        self.perf_model = prune.get("perf_model")
        self.top_k = prune.get("top_k", 1.0)
        self.early_config_prune = prune.get("early_config_prune")
        self.reset_to_zero, self.restore_value = list(reset_to_zero), list(restore_value)
        self.user_pre_hook, self.user_post_hook = pre_hook, post_hook
        self.warmup, self.rep, self.cache_results = warmup, rep, cache_results
        self.cache: dict[Any, Config] = {}
        self.configs_timings: dict[Config, list[float]] | None = None
        self.failures: dict[Config, str] = {}
        self._errors: dict[Config, Exception] = {}
        """The error of each config in `failures`, last tuning."""
        self.compiled_in_parallel: list[tuple[str, str]] | None = None
        """The worker processes' ("ok", digest) or ("error", reason) per config, last tuning."""
        self.best_config: Config | None = None
        self._saved: dict[str, Any] = {}
        self.use_cuda_graph = False
        """Triton's names of what torch's Dynamo checks before it puts an autotuned kernel in a
        graph (it refuses CUDA-graph timing and hooks, which its launches would not run)."""
        self.user_defined_pre_hook = pre_hook is not None
        self.user_defined_post_hook = post_hook is not None

    @property
    def configs_top_k(self) -> float:
        """Triton's name of `top_k`."""
        return self.top_k

    @property
    def base_fn(self) -> Any:
        """Triton's `base_fn`: the `@jit` kernel under the heuristics and autotuners."""
        fn = self.fn
        while hasattr(fn, "fn") and not hasattr(fn, "params"):
            fn = fn.fn
        return fn

    # Pruning and hooks -------------------------------------------------------------------

    def prune_configs(self, kwargs: dict[str, Any], nargs: dict[str, Any]) -> list[Config]:
        """Triton's pruning: `early_config_prune(configs, named_args, **kwargs)`, then the
        `top_k` configs (an int, or a fraction of them) by `perf_model`'s estimate."""
        pruned = self.configs
        if self.early_config_prune is not None:
            pruned = list(self.early_config_prune(self.configs, nargs, **kwargs))
            if not pruned:
                raise DecoratorValueError(
                    f"{self.fn.__name__}: early_config_prune left no config for this launch; "
                    "have it keep at least one"
                )
        if self.perf_model is None:
            return pruned
        top_k = self.top_k  # an int >= 1 or a fraction <= 1.0 (`checks.checked_pruning`)
        if isinstance(top_k, float):
            top_k = max(1, int(len(self.configs) * top_k))
        if len(pruned) <= top_k:
            return pruned
        estimates = {c: self.perf_model(**nargs, **kwargs, **c.all_kwargs()) for c in pruned}
        return sorted(pruned, key=lambda c: estimates[c])[:top_k]

    def _pre(self, named: dict[str, Any], config: Config) -> None:
        for name in self.reset_to_zero:
            _zero(named[name])
        self._saved = {name: _snapshot(named[name]) for name in self.restore_value}
        if config.pre_hook is not None:
            config.pre_hook(named)
        if self.user_pre_hook is not None:
            self.user_pre_hook(named)

    def _reset(self, full: dict[str, Any]) -> None:
        """Zero the `reset_to_zero` arguments once more before the launch that follows a tuning."""
        for name in self.reset_to_zero:
            _zero(full[name])

    def _post(self, named: dict[str, Any], exception: BaseException | None) -> None:
        for name, saved in self._saved.items():
            _restore(named[name], saved)
        self._saved = {}
        if self.user_post_hook is not None:
            self.user_post_hook(named, exception=exception)

    # Tuning ------------------------------------------------------------------------------

    def _compile_jobs(self, configs, args, kwargs) -> dict[Config, Callable[[], Any]]:
        jobs = {}
        descriptors = any(isinstance(a, TensorDescriptor) for a in (*args, *kwargs.values()))
        for config in configs:
            kernel, meta = resolve(self.fn, args, {**kwargs, **config.all_kwargs()})
            try:
                if descriptors and config.pre_hook is not None:
                    # it sets the descriptors' block shapes (Triton's tutorial 06): compile
                    # what the launch after it will run
                    named = {**self.fn.defaults, **dict(zip(self.fn.arg_names, args, strict=False))}
                    config.pre_hook({**named, **kwargs, **config.all_kwargs()})
                jobs[config] = compile_job(kernel, args, meta)
            except ValueError as error:  # an invalid option value of this config
                self._fail(config, error)
        return jobs

    def _fail(self, config: Config, error: Exception) -> None:
        self.failures[config] = f"{type(error).__name__}: {error}"
        self._errors[config] = error

    def _all_failed(self) -> TilecError:
        """The error of a tuning in which every config failed: where each failed with one and
        the same launch error (the launch's own argument or option, not a config), that error;
        else `AllConfigsFailed`, listing each config's reason."""
        errors = list(self._errors.values())
        first = errors[0] if errors else None
        if isinstance(first, LaunchError) and all(
            type(e) is type(first) and str(e) == str(first) for e in errors
        ):
            return first
        reasons = "\n".join(f"  {c}: {r}" for c, r in self.failures.items())
        return AllConfigsFailed(f"{self.fn.__name__}: every autotuning config failed:\n{reasons}")

    def _compile(self, configs, args, kwargs, backend) -> list[Config]:
        jobs = self._compile_jobs(configs, args, kwargs)
        setup = parallel.device_facts(backend) if len(jobs) > 1 else None
        with parallel.progress(len(jobs), "tilec autotune: compiling") as bar:
            results = parallel.compile_parallel(list(jobs.values()), progress=bar, setup=setup)
            self.compiled_in_parallel = results
            for config, job in jobs.items():
                try:
                    job()  # a disk-cache hit where a worker compiled it
                except TypeError:
                    raise
                except Exception as error:
                    self._fail(config, error)
                if bar is not None and results is None:
                    bar.update(1)
        return [c for c in configs if c in jobs and c not in self.failures]

    def _bench(self, config: Config, grid, args, kwargs, named: dict[str, Any]) -> list[float]:
        current = {**kwargs, **config.all_kwargs()}
        full = {**named, **current}

        def kernel_call() -> None:
            self._pre(full, config)
            try:
                self.fn[grid](*args, **current)
            except Exception as error:
                self._post(full, error)
                raise
            self._post(full, None)

        return self._time(kernel_call, kwargs.get("backend"))

    def _time(self, kernel_call: Callable[[], None], backend: Any) -> list[float]:
        """The QUANTILES of `kernel_call`'s time in milliseconds, on `backend`'s device."""
        # deferred: tilec.testing imports the report helpers, needed only when tuning
        from tilec.testing import do_bench

        return do_bench(
            kernel_call, warmup=self.warmup, rep=self.rep, quantiles=QUANTILES, backend=backend
        )

    def _tune(self, configs, grid, args, kwargs, named, key) -> Config:
        backend = get_backend(kwargs.get("backend"))
        path = None
        if self.cache_results:
            kernel, _ = resolve(self.fn, args, {**kwargs, **configs[0].all_kwargs()})
            path = store.path_for(kernel.cache_key, key, store.device_name(backend))
        # with a remote tier, one process of a cluster tunes and the others read its timings
        with store.shared(path, [c.key() for c in configs]) as (stored, claim):
            return self._tune_stored(configs, (grid, args, kwargs, named, key), path, stored, claim)

    def _tune_stored(self, configs, launch, path, stored, claim) -> Config:
        """Time the `configs` that `stored` (config key -> timings) lacks, store the timings at
        `path` (and publish them where `claim` is not None), and return the fastest config."""
        grid, args, kwargs, named, key = launch
        backend = get_backend(kwargs.get("backend"))
        self.failures, self._errors = {}, {}
        timings: dict[Config, list[float]] = {
            c: stored[c.key()] for c in configs if c.key() in stored
        }
        todo = [c for c in configs if c not in timings]
        if todo:
            todo = self._compile(todo, args, kwargs, backend)
        with parallel.progress(len(todo), "tilec autotune: timing") as bar:
            for config in todo:
                try:
                    timings[config] = self._bench(config, grid, args, kwargs, named)
                except TypeError:
                    raise
                except Exception as error:
                    self._fail(config, error)
                if bar is not None:
                    bar.update(1)
        self.configs_timings = timings
        if not timings:
            raise self._all_failed()
        if path is not None and any(c in todo for c in timings):
            stored.update({c.key(): t for c, t in timings.items()})
            about = {
                "kernel": self.fn.__name__,
                "key": repr(key),
                "device": store.device_name(backend),
            }
            body = store.save(path, stored, about)
            if claim is not None:
                claim.publish(body)
        best = min(timings, key=lambda c: timings[c][0])
        self._report(timings, best, key, stored_only=not todo)
        return best

    def _report(self, timings, best, key, stored_only: bool) -> None:
        if not settings.PRINT_AUTOTUNING.enabled():
            return
        origin = " (stored)" if stored_only else ""
        for config, (median, low, high) in timings.items():
            print(f"tilec autotune {self.fn.__name__} {key}: {config}: "
                  f"{median:.4f} ms (p20 {low:.4f}, p80 {high:.4f}){origin}", file=sys.stderr)  # fmt: skip
        for config, reason in self.failures.items():
            print(f"tilec autotune {self.fn.__name__} {key}: {config}: skipped: {reason}",
                  file=sys.stderr)  # fmt: skip
        print(f"tilec autotune {self.fn.__name__} {key}: chose {best}", file=sys.stderr)

    def _key(self, named: dict[str, Any], kwargs: dict[str, Any]) -> tuple:
        values = tuple(_key_part(named[k]) for k in self.keys if k in named)
        dtypes = tuple(str(v.dtype) for v in named.values() if hasattr(v, "dtype"))
        return (get_backend(kwargs.get("backend")).name, values, dtypes)

    def run(self, grid: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
        tuned = {name for config in self.configs for name in config.all_kwargs()}
        conflicts = sorted(tuned & set(kwargs))
        if conflicts:
            raise LaunchArgumentError(
                f"{self.fn.__name__}: conflicting meta-parameters {', '.join(conflicts)}: they are "
                f"set by the autotuning configs; do not pass them at launch"
            )
        named = {**self.fn.defaults, **dict(zip(self.fn.arg_names, args, strict=False)), **kwargs}
        # a key the configs set (a tuned meta-parameter) is no launch argument: Triton leaves it
        # out of the tuning key (its value follows from the config), as `_key` does
        missing = [k for k in self.keys if k not in named and k not in tuned]
        if missing:
            raise LaunchArgumentError(
                f"{self.fn.__name__} is missing argument {missing[0]!r} (an autotuning key)"
            )
        tuned_now = False
        if len(self.configs) == 1:
            config = self.configs[0]
        else:
            key = self._key(named, kwargs)
            if key not in self.cache:
                pruned = self.prune_configs(kwargs, named)
                self.cache[key] = self._tune(pruned, grid, args, kwargs, named, key)
                tuned_now = True
            config = self.cache[key]
        self.best_config = config
        full = {**named, **kwargs, **config.all_kwargs()}
        if tuned_now:
            self._reset(full)
        if config.pre_hook is not None:
            config.pre_hook(full)
        return self.fn[grid](*args, **kwargs, **config.all_kwargs())

    def resolve(self, args: tuple, kwargs: dict[str, Any]) -> Any:
        raise _stacked_error(self.fn.__name__)  # refused at decoration (`_refuse_stacking`)


def _stacked_error(name: str) -> DecoratorTypeError:
    return DecoratorTypeError(
        f"@tilec.autotune over {name}, which is autotuned already: an autotuner cannot time the "
        "configs of another. Merge the two into one @tilec.autotune whose configs are every "
        "pair of theirs, e.g. configs=[tilec.Config({**a.kwargs, **b.kwargs}, "
        "num_warps=b.num_warps, num_stages=b.num_stages) for a in outer for b in inner]"
    )


def _refuse_stacking(fn: Any) -> None:
    """Refuse an autotuner over a kernel that has one already (under heuristics too)."""
    inner = fn
    while isinstance(inner, KernelWrapper):
        if isinstance(inner, Autotuner):
            raise _stacked_error(fn.__name__)
        inner = inner.fn


def autotune(
    configs: Sequence[Config],
    key: Sequence[str],
    prune_configs_by: Mapping[str, Any] | None = None,
    reset_to_zero: Sequence[str] | None = None,
    restore_value: Sequence[str] | None = None,
    pre_hook: Callable[[dict[str, Any]], Any] | None = None,
    post_hook: Callable[..., Any] | None = None,
    warmup: float = 25,
    rep: float = 100,
    cache_results: bool = True,
) -> Callable[[Any], Autotuner]:
    """`@tilec.autotune(configs=[tilec.Config(...)], key=[...])` above `@tilec.jit` (or
    `@tilec.heuristics`), as Triton's. `warmup`/`rep` are do_bench's milliseconds;
    `cache_results` keeps timings on disk under `<cache dir>/autotune/`. `pre_hook` and
    `post_hook(named_args, exception=...)` run around each timing run, after (and besides) the
    `reset_to_zero`/`restore_value` handling. Its mistakes (`DecoratorError`) are raised where it
    is applied, naming the kernel, with the decorator's line as their `call_site`
    (`tilec.runtime.entry.user_entry`); an autotuner over an autotuned kernel is one of them."""

    @user_entry
    def decorate(fn: Any) -> Autotuner:
        return Autotuner(
            fn, configs, key, prune_configs_by, reset_to_zero or (), restore_value or (),
            pre_hook, post_hook, warmup, rep, cache_results,
        )  # fmt: skip

    return decorate
