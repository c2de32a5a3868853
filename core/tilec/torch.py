"""tilec kernels inside PyTorch programs: `custom_op` makes a Python function that launches tilec
kernels a torch custom operator, so that `torch.compile(fullgraph=True)` traces through it.

torch cannot trace a tilec launch itself (it packs raw device addresses and calls the driver): a
custom op is opaque to it and runs the function on real tensors, while `register_fake` tells the
tracer the shapes and dtypes of what it returns. torch is imported on first use of this module's
functions, never by `import tilec`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

INSTALL_HINT = "tilec.torch needs PyTorch: pip install torch"


def _torch() -> Any:
    try:
        import torch  # deferred: torch is optional and slow to import
    except ImportError:
        raise ImportError(INSTALL_HINT) from None
    return torch


def custom_op(
    name: str,
    fn: Callable[..., Any] | None = None,
    /,
    *,
    mutates_args: str | Iterable[str],
    device_types: str | Iterable[str] | None = None,
    schema: str | None = None,
    tags: Any = None,
) -> Any:
    """`torch.library.custom_op` for a function that launches tilec kernels.

    `name` is "namespace::op"; `mutates_args` names the tensor arguments the kernels write
    ("unknown" if any may be). Used as a decorator (`fn` omitted) or called with `fn`. Returns
    torch's `CustomOpDef`: call it like the function, and give the tracer the output's shape with
    `@op.register_fake` (and gradients with `op.register_autograd`), as with torch's own. The
    function's type hints are the op's schema (`torch.Tensor`, `float`, `int`, ...), as torch
    requires; tilec launches inside it run on torch's current stream of the tensors' device.
    """
    torch = _torch()
    options: dict[str, Any] = {"mutates_args": mutates_args, "device_types": device_types}
    if schema is not None:
        options["schema"] = schema
    if tags is not None:
        options["tags"] = tags
    if fn is None:
        return torch.library.custom_op(name, **options)
    return torch.library.custom_op(name, fn, **options)
