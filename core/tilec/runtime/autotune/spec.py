"""The compile a launch would do, without launching (`tilec.runtime.launcher.bind_launch`, then
`compile_cached`), so that the autotuner can compile configs (in worker processes too) and hit the
same cache entries the launches then use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tilec.runtime.compiler import compile_cached, get_backend
from tilec.runtime.launcher import bind_launch


def compile_job(kernel: Any, args: tuple, meta: dict[str, Any]) -> Callable[[], Any]:
    """A function compiling `kernel` for the launch `kernel[grid](*args, **meta)`. Binding
    errors (a wrong argument, an unknown keyword) are raised here, as the launch would."""
    meta = dict(meta)
    meta.pop("check", None)
    meta.pop("stream", None)
    backend = get_backend(meta.pop("backend", None))
    spec = bind_launch(
        kernel, kernel.arg_names, kernel.constexpr_flags, kernel.defaults, args, meta, backend
    )
    return lambda: compile_cached(*spec[:-1], equal_to_1=spec[-1])
