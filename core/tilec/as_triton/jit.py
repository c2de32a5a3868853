"""`triton.runtime.jit` under the alias: tilec's `jit` and `JITFunction`, Triton's
`KernelInterface`, `TensorWrapper`/`reinterpret` (`tilec.as_triton.tensors`) and
`type_canonicalisation_dict`."""

from __future__ import annotations

import abc
from typing import Any

from tilec.as_triton.tensors import TensorWrapper, reinterpret
from tilec.ir.type_names import SIGNATURE_BY_NUMPY, SIGNATURE_BY_TORCH
from tilec.runtime.autotune import Autotuner, Heuristics
from tilec.runtime.jit import JITFunction, jit


class KernelInterface(abc.ABC):  # noqa: B024 (Triton's base: no abstract method)
    """Triton's base of launchable kernels: `kernel[grid](*args)` is
    `kernel.run(*args, grid=grid, warmup=False)`. tilec's kernels, autotuners and heuristics
    are registered as its subclasses (they launch through their own `__getitem__`)."""

    def __getitem__(self, grid: Any) -> Any:
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)


for _kind in (JITFunction, Autotuner, Heuristics):
    KernelInterface.register(_kind)

type_canonicalisation_dict: dict[str, str] = {
    **SIGNATURE_BY_NUMPY,
    **SIGNATURE_BY_TORCH,
    **{"float8e4nv": "fp8e4nv", "float8e5": "fp8e5", "float8e4b15": "fp8e4b15",
       "float8e4b8": "fp8e4b8", "float8e5b16": "fp8e5b16"},
}  # fmt: skip
"""Triton's dtype name -> signature spelling (`float32` -> `fp32`)."""

__all__ = [
    "JITFunction", "KernelInterface", "TensorWrapper", "jit", "reinterpret",
    "type_canonicalisation_dict",
]  # fmt: skip
