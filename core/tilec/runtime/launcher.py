"""`kernel[grid](*args, **meta)`: bind arguments, specialize, compile through the cache, run.

`meta` holds constexpr values and launch options (`num_warps`, `num_stages`, ... of the backend's
options); `backend=` and `check=` are reserved (`check=True` also runs the launch on the
interpreter and compares the results, see `tilec.runtime.check`). The
hot path (a launch like an earlier one) computes one small key per call and reuses the result.
"""

from __future__ import annotations

import inspect
from typing import Any

import attrs

from tilec.runtime import cache
from tilec.runtime import check as checking
from tilec.runtime.compiler import compile_cached, get_backend, requested_backend
from tilec.runtime.specialization import arg_type, spec_token

RESERVED = ("backend", "check")


class KernelInfo:
    """Per-kernel facts the launcher needs: parameter names, constexprs, defaults."""

    def __init__(self, kernel: Any):
        from tilec.frontend.generator import _is_constexpr

        params = inspect.signature(kernel.fn).parameters
        self.names = list(params)
        self.constexpr = [_is_constexpr(kernel, p) for p in self.names]
        self.runtime = {p for p, cx in zip(self.names, self.constexpr, strict=True) if not cx}
        self.defaults = {
            p: v.default for p, v in params.items() if v.default is not inspect.Parameter.empty
        }
        self.launches: dict[Any, Any] = {}
        self.generation = cache.generation


def kernel_info(kernel: Any) -> KernelInfo:
    info = kernel.__dict__.get("_launch_info")
    if info is None:
        info = kernel._launch_info = KernelInfo(kernel)
    if info.generation != cache.generation:
        info.launches.clear()
        info.generation = cache.generation
    return info


@attrs.define
class Launcher:
    kernel: Any
    grid: Any

    def __call__(self, *args: Any, **meta: Any) -> None:
        info = kernel_info(self.kernel)
        backend_name = requested_backend(meta.pop("backend", None))
        check = meta.pop("check", None)
        constexpr = info.constexpr
        try:
            key = (
                self.kernel.cache_key,  # changes with a rebound global or callee
                backend_name,
                len(args),
                tuple(a if cx else spec_token(a) for a, cx in zip(args, constexpr, strict=False)),
                tuple((k, spec_token(v) if k in info.runtime else v) for k, v in meta.items()),
            )
            hit = info.launches.get(key)
        except TypeError:  # an unhashable value: take the slow path, which reports it
            key, hit = None, None
        if hit is None:
            hit = self._specialize(info, args, meta, backend_name)
            if key is not None and len(args) <= len(constexpr):
                info.launches[key] = hit
        compiled = hit
        bound = dict(zip(info.names, args, strict=False))
        bound.update(meta)
        grid = self.grid
        if callable(grid):
            grid = grid({**info.defaults, **bound})
        grid = (grid,) if isinstance(grid, int) else tuple(grid)
        args = [bound[p] for p in compiled.runtime_params]
        if check or (check is None and checking.enabled):
            checking.run_checked(compiled, grid, args, lambda: self._reference(compiled))
            return
        compiled.run(grid, args)

    def _reference(self, compiled: Any) -> Any:
        """The interp compile of `compiled`'s kernel and specialization (for `check=True`)."""
        interp = get_backend("interp")
        return compile_cached(
            self.kernel, dict(compiled.signature), dict(compiled.constexprs), (), interp,
            interp.parse_options(),
        )  # fmt: skip

    def _specialize(self, info: KernelInfo, args: tuple, meta: dict, backend_name: str | None):
        kernel, name = self.kernel, self.kernel.__name__
        backend = get_backend(backend_name)
        option_names = set(attrs.fields_dict(backend.options_class))
        if len(args) > len(info.names):
            raise TypeError(
                f"{name} takes {len(info.names)} arguments ({', '.join(info.names)}); "
                f"got {len(args)}"
            )
        bound = dict(zip(info.names, args, strict=False))
        options = {}
        for key, value in meta.items():
            if key in bound:
                raise TypeError(f"{name} got multiple values for argument '{key}'")
            if key in info.names:
                bound[key] = value
            elif key in option_names:
                options[key] = value
            else:
                raise TypeError(
                    f"{name} got an unknown keyword '{key}' (parameters: {', '.join(info.names)}; "
                    f"launch options: {', '.join(sorted(option_names | set(RESERVED)))})"
                )
        signature, constexprs, divisible, equal_to_1 = {}, {}, [], []
        for param, cx in zip(info.names, info.constexpr, strict=True):
            if param not in bound and param in info.defaults:
                bound[param] = info.defaults[param]
            if param not in bound:
                kind = "constexpr" if cx else "argument"
                raise TypeError(f"{name} is missing {kind} '{param}'")
            if cx:
                constexprs[param] = bound[param]
                continue
            signature[param], divisible_16 = arg_type(name, param, bound[param])
            if divisible_16:
                divisible.append(param)
            if signature[param] in ("i32", "i64") and bound[param] == 1:
                equal_to_1.append(param)
        options = backend.parse_options(**options)
        return compile_cached(
            kernel, signature, constexprs, tuple(divisible), backend, options,
            equal_to_1=tuple(equal_to_1),
        )  # fmt: skip
