"""`triton.runtime.autotuner.Autotuner` under the alias: tilec's autotuner with Triton's
constructor, which libraries call or subclass directly (flash-linear-attention's
`CachedAutotuner` extends it and replaces its `pre_hook`/`post_hook`):

    Autotuner(fn, arg_names, configs, key, reset_to_zero, restore_value, pre_hook=None,
              post_hook=None, prune_configs_by=None, warmup=None, rep=None,
              use_cuda_graph=False, do_bench=None, cache_results=False)

As in Triton, `self.pre_hook(named, reset_only=False)` and `self.post_hook(named, exception)`
are the hooks that run around each timing run (a `pre_hook` given replaces the zeroing of
`reset_to_zero` and the saving of `restore_value`; a `post_hook` given replaces the restoring),
`user_defined_pre_hook`/`user_defined_post_hook` say whether they were given, no configs is
Triton's one default config, and `do_bench(kernel_call, quantiles=...)` (or `use_cuda_graph`,
`warmup`, `rep`) times the configs. Tuning, pruning and keys are tilec's (`tilec.autotune`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tilec.errors import DecoratorValueError
from tilec.runtime.autotune import tuner
from tilec.runtime.autotune.config import Config


class _TritonAutotunerType(type):
    """Every tilec autotuner (what `@triton.autotune` makes, `tuner.Autotuner`) is an instance
    of Triton's `Autotuner` class, as every Triton autotuner is: torch's Dynamo finds
    autotuned kernels so."""

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, tuner.Autotuner)


class Autotuner(tuner.Autotuner, metaclass=_TritonAutotunerType):
    """Triton's `Autotuner` class: see the module's description."""

    def __init__(
        self, fn: Any, arg_names: Sequence[str], configs: Sequence[Config] | None,
        key: Sequence[str], reset_to_zero: Sequence[str] | None,
        restore_value: Sequence[str] | None, pre_hook: Callable[..., Any] | None = None,
        post_hook: Callable[..., Any] | None = None, prune_configs_by: Any = None,
        warmup: float | None = None, rep: float | None = None, use_cuda_graph: bool = False,
        do_bench: Callable[..., Any] | None = None, cache_results: bool = False,
    ):  # fmt: skip
        if list(arg_names) != list(fn.arg_names):
            raise DecoratorValueError(
                f"Autotuner of {fn.__name__}: arg_names are the kernel's parameters in order, "
                f"{list(fn.arg_names)}; got {list(arg_names)} (pass fn.arg_names)"
            )
        configs = list(configs or ()) or [Config({}, num_warps=4, num_stages=3)]
        super().__init__(
            fn, configs, key, prune_configs_by, reset_to_zero or (), restore_value or (),
            None, None, 25 if warmup is None else warmup, 100 if rep is None else rep,
            True,  # tilec keeps every tuning result (triton.knobs.autotuning.cache is fixed on)
        )  # fmt: skip
        self.arg_names = list(arg_names)
        self.restore_copies: dict[str, Any] = {}
        self.user_defined_pre_hook = pre_hook is not None
        self.user_defined_post_hook = post_hook is not None
        self.pre_hook = pre_hook or self._default_pre_hook
        self.post_hook = post_hook or self._default_post_hook
        self._do_bench = do_bench
        self.use_cuda_graph = bool(use_cuda_graph)

    def _default_pre_hook(self, named: dict[str, Any], reset_only: bool = False) -> None:
        for name in self.reset_to_zero:
            tuner._zero(named[name])
        if not reset_only:
            self.restore_copies = {n: tuner._snapshot(named[n]) for n in self.restore_value}

    def _default_post_hook(self, named: dict[str, Any], exception: Any) -> None:
        for name, saved in self.restore_copies.items():
            tuner._restore(named[name], saved)
        self.restore_copies = {}

    # tilec's tuner calls these around each timing run and after tuning
    def _pre(self, named: dict[str, Any], config: Config) -> None:
        if config.pre_hook is not None:
            config.pre_hook(named)
        self.pre_hook(named)

    def _post(self, named: dict[str, Any], exception: BaseException | None) -> None:
        self.post_hook(named, exception=exception)

    def _reset(self, full: dict[str, Any]) -> None:
        self.pre_hook(full, reset_only=True)

    def _time(self, kernel_call: Callable[[], None], backend: Any) -> list[float]:
        if self._do_bench is not None:
            return self._do_bench(kernel_call, quantiles=tuner.QUANTILES)
        if self.use_cuda_graph:
            from tilec.testing import do_bench_cudagraph  # deferred: loads the report helpers

            return do_bench_cudagraph(kernel_call, rep=self.rep, quantiles=tuner.QUANTILES)
        return super()._time(kernel_call, backend)


__all__ = ["Autotuner"]
