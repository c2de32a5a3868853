"""The arguments of `@tilec.autotune`, checked where it is applied: each mistake is a
`DecoratorError` (also the `TypeError` or `ValueError` it was) that names the kernel and the fix."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from tilec.errors import DecoratorTypeError, DecoratorValueError
from tilec.runtime.autotune.config import Config
from tilec.runtime.entry import user_stacklevel

PRUNE_KEYS = ("perf_model", "top_k", "early_config_prune")


def checked_configs(name: str, configs: Any) -> list[Config]:
    """`configs` as a list of one or more `Config`s, or a DecoratorError naming the fix."""
    if isinstance(configs, Config):
        raise DecoratorTypeError(
            f"@tilec.autotune of {name}: configs is a list of tilec.Config; got one Config, "
            f"pass [{configs!r}]"
        )
    if isinstance(configs, (str, bytes, Mapping)) or not isinstance(configs, Iterable):
        raise DecoratorTypeError(
            f"@tilec.autotune of {name}: configs is a list of tilec.Config, as in "
            f"configs=[tilec.Config({{'BLOCK': 128}}, num_warps=4)]; got {configs!r}"
        )
    configs = list(configs)
    if not configs:
        raise DecoratorValueError(
            f"@tilec.autotune of {name} needs at least one tilec.Config, as in "
            f"configs=[tilec.Config({{'BLOCK': 128}}, num_warps=4)]"
        )
    for config in configs:
        if not isinstance(config, Config):
            raise DecoratorTypeError(
                f"@tilec.autotune of {name}: configs must be tilec.Config; got {config!r} "
                f"(write tilec.Config({{...}}, num_warps=..., num_stages=...))"
            )
    return configs


def checked_names_list(fn: Any, what: str, names: Any) -> list[str]:
    """`names` (the autotuner's `what`) as a list, or a DecoratorTypeError."""
    if isinstance(names, str) or not isinstance(names, Iterable):
        raise DecoratorTypeError(
            f"@tilec.autotune of {fn.__name__}: {what} is a list of parameter names, as in "
            f"{what}=['n']; got {names!r}"
        )
    return list(names)


def checked_names(fn: Any, what: str, names: Any) -> list[str]:
    """`names` (the autotuner's `what`) as a list of parameters of `fn`, or a DecoratorError."""
    names = checked_names_list(fn, what, names)
    unknown = [n for n in names if n not in fn.arg_names]
    if unknown:
        raise DecoratorValueError(
            f"@tilec.autotune {what}: {fn.__name__} has no parameter "
            f"{', '.join(map(repr, unknown))} (parameters: {', '.join(fn.arg_names)})"
        )
    return names


class AutotuneKeyWarning(UserWarning):
    """An `@tilec.autotune(key=[...])` name that is no parameter of the kernel: ignored, as
    Triton ignores it (its older grouped-GEMM tutorial has one)."""


def known_keys(fn: Any, key: Any) -> list[str]:
    """The autotuning `key` without the names that are no parameter of `fn`, each of those
    ignored with an `AutotuneKeyWarning` naming it, as Triton ignores them (its tuning key holds
    the values of the arguments named in `key` that the launch has)."""
    names = checked_names_list(fn, "key", key)
    unknown = [n for n in names if n not in fn.arg_names]
    if unknown:
        warnings.warn(
            f"@tilec.autotune of {fn.__name__}: key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))} "
            f"{'is no parameter' if len(unknown) == 1 else 'are no parameters'} of "
            f"{fn.__name__} (parameters: {', '.join(fn.arg_names)}); ignored, as Triton does",
            AutotuneKeyWarning,
            stacklevel=user_stacklevel(),
        )
    return [n for n in names if n in fn.arg_names]


def checked_pruning(name: str, prune_configs_by: Any) -> dict[str, Any]:
    """`prune_configs_by` as a dict, or a DecoratorError naming the fix."""
    if prune_configs_by is None:
        return {}
    if not isinstance(prune_configs_by, Mapping):
        raise DecoratorTypeError(
            f"@tilec.autotune of {name}: prune_configs_by is a dict with the keys "
            f"{', '.join(PRUNE_KEYS)}; got {prune_configs_by!r}"
        )
    prune = dict(prune_configs_by)
    # Triton's attribute name of top_k, which torch's Dynamo passes here: the same (all of them,
    # 1.0, is the default)
    if "configs_top_k" in prune and "top_k" not in prune:
        top_k = prune.pop("configs_top_k")
        if top_k != 1.0:
            prune["top_k"] = top_k
    unknown = sorted(set(prune) - set(PRUNE_KEYS))
    if unknown:
        raise DecoratorTypeError(
            f"@tilec.autotune of {name}: prune_configs_by has no key "
            f"{', '.join(map(repr, unknown))} (keys: {', '.join(PRUNE_KEYS)})"
        )
    for key in ("perf_model", "early_config_prune"):
        if prune.get(key) is not None and not callable(prune[key]):
            raise DecoratorTypeError(
                f"@tilec.autotune of {name}: prune_configs_by's {key} is a function; "
                f"got {prune[key]!r}"
            )
    if "top_k" in prune:
        if prune.get("perf_model") is None:
            raise DecoratorValueError(
                f"@tilec.autotune of {name}: prune_configs_by's top_k needs a perf_model, the "
                "estimate it keeps the top_k configs by"
            )
        top_k = prune["top_k"]
        fraction = isinstance(top_k, float) and top_k <= 1.0
        if not fraction and (not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1):
            raise DecoratorTypeError(
                f"@tilec.autotune of {name}: prune_configs_by's top_k is an int >= 1 or a "
                f"fraction of the configs <= 1.0; got {top_k!r}"
            )
    return prune
