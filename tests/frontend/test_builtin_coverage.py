"""Every `tl` function kernel authors can call is compiled by the frontend, and every function the
frontend compiles has its `tl` name (or its `tl.extra.libdevice` one, for the few libdevice
functions that are builtins): adding a language function is one entry on each side."""

from __future__ import annotations

import tilec.language as tl
from tilec.frontend.builtins import UNARY_MATH, Builtins
from tilec.frontend.control_flow import LOOP_ITERATORS

HANDLER_PREFIX = "tl_"


def language_builtins() -> set[str]:
    return {
        name for name in dir(tl) if getattr(getattr(tl, name), "__tilec_builtin__", None) == name
    }


def frontend_builtins() -> set[str]:
    methods = {
        n.removeprefix(HANDLER_PREFIX) for n in dir(Builtins) if n.startswith(HANDLER_PREFIX)
    }
    return methods | set(UNARY_MATH) | set(LOOP_ITERATORS)


def test_every_tl_function_is_compiled_by_the_frontend():
    missing = sorted(language_builtins() - frontend_builtins())
    assert not missing, (
        "tl functions without a frontend handler (add Builtins.tl_<name> or a UNARY_MATH entry): "
        + ", ".join(missing)
    )


def libdevice_builtins() -> set[str]:
    from tilec.language.extra import libdevice

    return {
        name
        for name in dir(libdevice)
        if getattr(getattr(libdevice, name), "__tilec_builtin__", None) == name
        and not hasattr(tl, name)
    }


def extra_builtins() -> set[str]:
    """The handlers of `tl.extra.cuda`'s and `tl.extra.hip`'s functions (`cuda_<name>`)."""
    from tilec.language.extra import cuda, hip

    return {
        getattr(module, name).__tilec_builtin__
        for module in (cuda, hip)
        for name in module.__all__
        if hasattr(getattr(module, name), "__tilec_builtin__")
    }


def test_every_frontend_handler_has_a_tl_function():
    assert libdevice_builtins() == {"add_rn", "sub_rn", "mul_rn"}  # never fused into FMAs
    extra = extra_builtins()
    assert {"cuda_globaltimer", "cuda_num_warps", "hip_memrealtime"} <= extra
    missing = sorted(frontend_builtins() - language_builtins() - libdevice_builtins() - extra)
    assert not missing, (
        'frontend handlers without a tl function (add `<name> = _builtin("<name>")` to '
        "tilec/language/__init__.py and to its BUILTIN_NAMES): " + ", ".join(missing)
    )


def test_every_tl_function_is_listed():
    # cdiv is an ordinary function as well (it computes grids on the host), defined apart
    assert language_builtins() == {*tl.BUILTIN_NAMES, "cdiv"}


def test_the_sets_are_not_empty():
    assert {"load", "exp", "dot"} <= language_builtins() & frontend_builtins()
