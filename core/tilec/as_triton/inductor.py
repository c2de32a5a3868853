"""torch.compile under the alias: Inductor's generated Triton kernels compile and run on tilec.

With `import triton` resolving to tilec, Inductor finds Triton (`torch.utils._triton.has_triton()`)
and generates Triton kernels; `triton.compile(ASTSource(...), target=GPUTarget(...), options)`
compiles each with tilec for the backend of its target (nvidia for CUDA tensors, amd for ROCm's;
the host backend, interp, for CPU tensors where Inductor generates Triton for CPU graphs:
`torch._inductor.config.cpu_backend = "triton"`), and Inductor's launcher calls Triton's
`CompiledKernel.run(gridX, gridY, gridZ, stream, ...)` (`tilec.runtime.triton_kernel`).

One of Inductor's defaults changes while the alias is active, through its variable (for a
torch not yet imported, and for child processes) and its config attribute (for an Inductor
already imported), logged at `TILEC_LOG=info`:

- `use_static_cuda_launcher` off (`TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER=0`): torch's static
  launcher reads the cubin from Triton's cache folder and passes Triton's kernel parameters
  (its global and profile scratch pointers), which tilec's cubins do not take; Inductor then
  launches through `CompiledKernel.run`, as it does with Triton's own launcher.

Inductor's compile workers are fresh interpreters started with the parent's `sys.path` as their
`PYTHONPATH`, which import `triton` first thing: the folder `WORKER_PATH` goes on `sys.path`
while the alias is active, second (`python -m tilec.as_triton` replaces the first, the
program's folder), ahead of the site-packages where a real Triton may be, and its `triton`
package turns the alias on in the worker. The workers send compiled kernels back pickled their own way, which tilec's `CompiledKernel` and
`JITFunction` support (`tilec.runtime.triton_kernel`). In the parent the folder is never reached:
the alias answers `triton` before the path is searched.

`TILEC_AS_TRITON_INDUCTOR=0` makes the alias step aside for Inductor instead: Inductor's own
switch `triton_disable_device_detection` is set and a cached `has_triton()` forgotten, so
`torch.utils._triton.has_triton()` is false; Inductor compiles CPU graphs to C++ as it does
without Triton, and a CUDA graph stops with Inductor's "no working triton" error.

Dynamo skips tilec's own frames under the alias (`tilec.as_triton.dynamo`). `restore` (the
alias removed, `tilec.as_triton.deactivate`) puts everything back.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from tilec import settings
from tilec.as_triton import dynamo

log = logging.getLogger("tilec.as_triton")

INDUCTOR_SWITCH = "TORCHINDUCTOR_TRITON_DISABLE_DEVICE_DETECTION"

RUN_ON_TILEC: dict[str, tuple[str, str, object]] = {
    "TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER": ("use_static_cuda_launcher", "0", False),
}
"""Inductor's variable -> (its config attribute, the variable's value, the attribute's value)
while Inductor's kernels run on tilec (see the module docstring)."""

STEP_ASIDE: dict[str, tuple[str, str, object]] = {
    INDUCTOR_SWITCH: ("triton_disable_device_detection", "1", True),
}

WORKER_PATH = str(Path(__file__).parent / "worker_path")
"""The folder whose `triton` package turns the alias on in Inductor's compile workers."""

_before: dict[str, tuple[str | None, object]] = {}
"""Each variable `apply` changed: its value and its config attribute's, as they were."""


def runs_on_tilec() -> bool:
    """Whether Inductor's kernels run on tilec under the alias (`TILEC_AS_TRITON_INDUCTOR`)."""
    return settings.AS_TRITON_INDUCTOR.get() is None or settings.AS_TRITON_INDUCTOR.enabled()


def apply() -> None:
    """At the alias's activation: Inductor's kernels run on tilec, or the alias steps aside."""
    on_tilec = runs_on_tilec()
    changes = RUN_ON_TILEC if on_tilec else STEP_ASIDE
    config = sys.modules.get("torch._inductor.config")
    for variable, (attribute, text, value) in changes.items():
        previous = getattr(config, attribute, None) if config is not None else None
        _before.setdefault(variable, (os.environ.get(variable), previous))
        os.environ[variable] = text
        if config is not None:
            setattr(config, attribute, value)
    _forget_probes()
    dynamo.skip_tilec()
    if on_tilec:
        if WORKER_PATH not in sys.path:  # after the script's folder, before site-packages
            sys.path.insert(1, WORKER_PATH)
        log.info(
            "tilec.as_triton: torch's Inductor generates Triton kernels that tilec compiles (also "
            "in Inductor's compile workers) and launches through CompiledKernel.run "
            "(use_static_cuda_launcher=False); TILEC_AS_TRITON_INDUCTOR=0 steps aside instead"
        )
    else:
        log.info(
            "tilec.as_triton: torch's Inductor is told there is no Triton (%s=1, "
            "TILEC_AS_TRITON_INDUCTOR=0), so torch.compile generates C++ for CPU graphs and "
            "refuses CUDA ones",
            INDUCTOR_SWITCH,
        )


def restore() -> None:
    """Undo `apply` (the alias removed again, `tilec.as_triton.deactivate`)."""
    dynamo.unskip_tilec()
    while WORKER_PATH in sys.path:
        sys.path.remove(WORKER_PATH)
    config = sys.modules.get("torch._inductor.config")
    for variable, (text, value) in list(_before.items()):
        del _before[variable]
        if text is None:
            os.environ.pop(variable, None)
        else:
            os.environ[variable] = text
        attribute = {**RUN_ON_TILEC, **STEP_ASIDE}[variable][0]
        if config is None:
            continue
        if value is None:  # imported since `apply`: what it computes from the variables
            value = {
                "triton_disable_device_detection": lambda: os.environ.get(INDUCTOR_SWITCH) == "1",
                "use_static_cuda_launcher": config.static_cuda_launcher_default,
            }[attribute]()
        setattr(config, attribute, value)
    _forget_probes()


def _forget_probes() -> None:
    """torch caches whether Triton is there; the answer changes with the alias."""
    probes = sys.modules.get("torch.utils._triton")
    if probes is not None:
        for name in ("has_triton_package", "has_triton", "get_triton_version", "triton_backend"):
            getattr(probes, name).cache_clear()
        probes.triton_hash_with_backend.cache_clear()
