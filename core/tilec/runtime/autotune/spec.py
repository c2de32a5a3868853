"""The compile a launch would do, without launching: the launcher's argument binding
(`tilec.runtime.launcher.Launcher._specialize`) up to `compile_cached`, so that the autotuner can
compile configs (in worker processes too) and hit the same cache entries the launches then use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from tilec.runtime.compiler import compile_cached, get_backend
from tilec.runtime.launcher import RESERVED
from tilec.runtime.specialization import arg_type


def compile_job(kernel: Any, args: tuple, meta: dict[str, Any]) -> Callable[[], Any]:
    """A function compiling `kernel` for the launch `kernel[grid](*args, **meta)`. Binding
    errors (a wrong argument, an unknown keyword) are raised here, as the launch would."""
    meta = dict(meta)
    meta.pop("check", None)
    backend = get_backend(meta.pop("backend", None))
    names, name = kernel.arg_names, kernel.__name__
    option_names = set(attrs.fields_dict(backend.options_class))
    if len(args) > len(names):
        raise TypeError(
            f"{name} takes {len(names)} arguments ({', '.join(names)}); got {len(args)}"
        )
    bound = dict(zip(names, args, strict=False))
    options = {}
    for key, value in meta.items():
        if key in bound:
            raise TypeError(f"{name} got multiple values for argument '{key}'")
        if key in names:
            bound[key] = value
        elif key in option_names:
            options[key] = value
        else:
            raise TypeError(
                f"{name} got an unknown keyword '{key}' (parameters: {', '.join(names)}; "
                f"launch options: {', '.join(sorted(option_names | set(RESERVED)))})"
            )
    signature, constexprs, divisible, equal_to_1 = {}, {}, [], []
    for param, cx in zip(names, kernel.constexpr_flags, strict=True):
        if param not in bound and param in kernel.defaults:
            bound[param] = kernel.defaults[param]
        if param not in bound:
            raise TypeError(f"{name} is missing {'constexpr' if cx else 'argument'} '{param}'")
        if cx:
            constexprs[param] = bound[param]
            continue
        signature[param], divisible_16 = arg_type(name, param, bound[param])
        if divisible_16:
            divisible.append(param)
        if signature[param] in ("i32", "i64") and bound[param] == 1:
            equal_to_1.append(param)
    parsed = backend.parse_options(**options)
    spec = (kernel, signature, constexprs, tuple(divisible), backend, parsed)
    return lambda: compile_cached(*spec, equal_to_1=tuple(equal_to_1))
