"""`hookspec` and `hookimpl` without importing pluggy.

They mark a function exactly as `pluggy.HookspecMarker("tilec")` and `pluggy.HookimplMarker("tilec")`
do (the attribute `tilec_spec` / `tilec_impl` holding pluggy's option dict, which its plugin
manager reads), so that a plugin module, which imports `tilec.plugin.hookimpl`, can be imported
without pluggy: a launch from the disk cache loads the backend it launches on alone
(`tilec.plugin.launch_record`), and pluggy (with its `inspect` import) waits for a compile.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

PROJECT_NAME = "tilec"


class HookspecMarker:
    """pluggy's `HookspecMarker(PROJECT_NAME)`: `@hookspec` or `@hookspec(firstresult=True)`."""

    def __call__(
        self,
        function: Callable | None = None,
        firstresult: bool = False,
        historic: bool = False,
        warn_on_impl: Warning | None = None,
        warn_on_impl_args: Mapping[str, Warning] | None = None,
    ) -> Any:
        if historic and firstresult:
            raise ValueError("cannot have a historic firstresult hook")
        opts = {
            "firstresult": firstresult,
            "historic": historic,
            "warn_on_impl": warn_on_impl,
            "warn_on_impl_args": warn_on_impl_args,
        }
        return _marking(function, f"{PROJECT_NAME}_spec", opts)


class HookimplMarker:
    """pluggy's `HookimplMarker(PROJECT_NAME)`: `@hookimpl` or `@hookimpl(tryfirst=True)`."""

    def __call__(
        self,
        function: Callable | None = None,
        hookwrapper: bool = False,
        optionalhook: bool = False,
        tryfirst: bool = False,
        trylast: bool = False,
        specname: str | None = None,
        wrapper: bool = False,
    ) -> Any:
        opts = {
            "wrapper": wrapper,
            "hookwrapper": hookwrapper,
            "optionalhook": optionalhook,
            "tryfirst": tryfirst,
            "trylast": trylast,
            "specname": specname,
        }
        return _marking(function, f"{PROJECT_NAME}_impl", opts)


def _marking(function: Callable | None, attribute: str, opts: dict) -> Any:
    def mark(func: Callable) -> Callable:
        setattr(func, attribute, dict(opts))
        return func

    return mark if function is None else mark(function)


hookspec = HookspecMarker()
hookimpl = HookimplMarker()
