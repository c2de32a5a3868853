"""The stream a launch runs on: the `stream=` launch option, else the current torch stream of the
arguments' device where torch tensors are passed, else the default stream (handle 0).

torch is never imported here: a program that passes torch tensors has imported it already
(`sys.modules`). torch's ROCm builds answer the same `torch.cuda` calls with HIP streams.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from tilec.interop.device import stream_handle
from tilec.interop.pointers import is_torch_tensor


def torch_stream_getter() -> Callable[[int], int] | None:
    """`get(device_index)`: the raw handle of torch's current stream on that device; None
    without torch. `torch._C._cuda_getCurrentRawStream` where it exists (what Triton calls, a
    fraction of a microsecond), else `torch.cuda.current_stream(index).cuda_stream`."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw

    def current(index: int) -> int:
        return int(torch.cuda.current_stream(index).cuda_stream)

    return current


def launch_stream(stream: Any, args: Sequence[Any], ordinal: int) -> int:
    """The handle of the stream a launch with `args` on device `ordinal` runs on (see module)."""
    if stream is not None:
        return stream_handle(stream)
    if not any(is_torch_tensor(a) and a.is_cuda for a in args):
        return 0
    get = torch_stream_getter()
    return 0 if get is None else int(get(ordinal))


def torch_capturing() -> bool:
    """Whether this thread is inside a torch graph capture (`torch.cuda.graph`): torch's current
    stream captures. False without torch, or before torch has used the GPU. A capture on a
    stream of torch's makes no other stream capture (they are non-blocking), but forbids this
    thread's allocations and waits, so it is asked apart from `is_capturing`."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return False
    capturing = getattr(torch.cuda, "is_current_stream_capturing", None)
    return capturing is not None and bool(capturing())
