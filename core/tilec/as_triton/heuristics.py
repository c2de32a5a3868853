"""`triton.heuristics` and `triton.runtime.autotuner.Heuristics` under the alias: tilec's
heuristics, whose launch torch's Dynamo can trace as it traces Triton's.

Dynamo puts a Triton `@triton.heuristics` kernel (with no autotuner above it) into its graph by
tracing Triton's Python: `KernelInterface.__getitem__` and `Heuristics.run`, which computes the
meta-parameters and launches the `JITFunction` below, a kernel Dynamo knows. tilec's own
launcher is in modules Dynamo skips (`tilec.as_triton.dynamo`), so this module, which Dynamo
traces, gives the alias's heuristics a launch of that shape while Dynamo compiles: each
heuristic's value from the named arguments (with the kernel's defaults, as tilec's launch
has them), then `fn[grid](*args, **kwargs)`. Outside Dynamo, and where tilec's launch has
something to say (a computed parameter also passed at launch: tilec's warning or error), the
launch is tilec's (`tilec.runtime.autotune.config.Heuristics`)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

from tilec.runtime.autotune import config
from tilec.runtime.entry import user_entry


def _compiling() -> bool:
    """Whether torch's Dynamo is tracing this call (torch is never imported here)."""
    torch = sys.modules.get("torch")
    return torch is not None and torch.compiler.is_compiling()


class _TritonHeuristicsType(type):
    """Every tilec heuristics wrapper (`tilec.heuristics` too) is an instance of Triton's
    `Heuristics` class, as Dynamo checks where one sits below an autotuner."""

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, config.Heuristics)


class Heuristics(config.Heuristics, metaclass=_TritonHeuristicsType):
    """tilec's `Heuristics` with Triton's attributes (`fn`, `values`, `arg_names`) in the
    instance, where Dynamo reads them, and a launch Dynamo traces."""

    def __init__(self, fn: Any, values: Mapping[str, Callable[[dict[str, Any]], Any]]):
        super().__init__(fn, values)
        self.arg_names = list(fn.arg_names)
        self.traced_defaults = dict(fn.defaults)
        # The wrappers down to the kernel or autotuner, found here rather than while Dynamo
        # traces: torch 2.11's Dynamo cannot decide isinstance() of a Triton kernel it wraps
        chain, inner = [], self
        while isinstance(inner, config.Heuristics):
            chain.append(inner)
            inner = inner.fn
        self.traced_chain = chain
        self.traced_base = inner
        self.traced_own = all(issubclass(type(k), Heuristics) for k in chain)
        """Whether every wrapper is this class's (another's launch is tilec's)."""

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        if _compiling():
            return lambda *args, **kwargs: _traced_launch(self, grid, args, kwargs)
        return super().__getitem__(grid)


def _traced_launch(kernel: Any, grid: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
    """Triton's `Heuristics.run` while Dynamo traces: the innermost launch is a kernel or an
    autotuner, which Dynamo puts into its graph."""
    passed = set(kwargs)
    computed = set()
    for wrapper in kernel.traced_chain:
        passed |= set(wrapper.arg_names[: len(args)])
        computed |= set(wrapper.values)
    if not kernel.traced_own or passed & computed:
        return config.Heuristics.__getitem__(kernel, grid)(*args, **kwargs)  # tilec's
    for wrapper in kernel.traced_chain:
        named = {
            **wrapper.traced_defaults,
            **dict(zip(wrapper.arg_names, args, strict=False)),
            **kwargs,
        }
        kwargs = dict(kwargs)
        for name, heuristic in wrapper.values.items():
            kwargs[name] = named[name] = heuristic(named)
    return kernel.traced_base[grid](*args, **kwargs)


def heuristics(values: Mapping[str, Callable[[dict[str, Any]], Any]]) -> Callable[[Any], Any]:
    """`@triton.heuristics({"BLOCK": lambda args: ...})`: `tilec.heuristics`, the wrapper
    this module's `Heuristics`."""

    @user_entry
    def decorate(fn: Any) -> Heuristics:
        return Heuristics(fn, values)

    return decorate


__all__ = ["Heuristics", "heuristics"]
