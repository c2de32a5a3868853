"""torch.compile under the alias: Inductor's generated Triton kernels need Triton's compiler
internals (`triton.compiler.compiler.ASTSource` with Triton's attributes, `make_backend`,
`triton.runtime.cache` keys, launcher binaries), which tilec does not reproduce. So the alias
steps aside for Inductor: it sets Inductor's own switch `triton_disable_device_detection`
(`TORCHINDUCTOR_TRITON_DISABLE_DEVICE_DETECTION=1` for torch not yet imported and for child
processes, the config attribute for an Inductor already imported) and forgets a cached
`has_triton()`, so `torch.utils._triton.has_triton()` is false: Inductor compiles CPU graphs to
C++ as it does without Triton, and a CUDA graph stops with Inductor's own "no working triton"
error instead of running Triton code on tilec. The log (`TILEC_LOG=info`) says so.

The names Inductor imports from `triton` while it checks (`triton.language.dtype`, `Config`,
`CompiledKernel`, `JITFunction`, `KernelInterface`, `OutOfResources`) are tilec's, so those
imports succeed.
"""

from __future__ import annotations

import logging
import os
import sys

log = logging.getLogger("tilec.as_triton")

INDUCTOR_SWITCH = "TORCHINDUCTOR_TRITON_DISABLE_DEVICE_DETECTION"


_before: dict[str, object] = {}
"""What `step_aside` changed, as it was (`restore` puts it back)."""


def step_aside() -> None:
    _before.setdefault("variable", os.environ.get(INDUCTOR_SWITCH))
    os.environ[INDUCTOR_SWITCH] = "1"
    config = sys.modules.get("torch._inductor.config")
    if config is not None:
        _before.setdefault("config", config.triton_disable_device_detection)
        config.triton_disable_device_detection = True
    _forget_has_triton()
    log.info(
        "tilec.as_triton: `triton` is tilec in this process; torch's Inductor is told there is "
        "no Triton (%s=1), so torch.compile generates C++ for CPU graphs and refuses CUDA ones",
        INDUCTOR_SWITCH,
    )


def restore() -> None:
    """Undo `step_aside` (the alias removed again, `tilec.as_triton.deactivate`): Inductor looks
    for Triton as before."""
    if "variable" in _before:
        previous = _before.pop("variable")
        if previous is None:
            os.environ.pop(INDUCTOR_SWITCH, None)
        else:
            os.environ[INDUCTOR_SWITCH] = str(previous)
    config = sys.modules.get("torch._inductor.config")
    if config is not None:
        config.triton_disable_device_detection = bool(
            _before.pop("config", os.environ.get(INDUCTOR_SWITCH) == "1")
        )
    _forget_has_triton()


def _forget_has_triton() -> None:
    probes = sys.modules.get("torch.utils._triton")
    if probes is not None:
        probes.has_triton.cache_clear()
