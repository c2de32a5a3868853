"""CUDA events for `tilec.testing.do_bench` (`tilec.interop.timing.EventTimer`): recorded on the
default stream, the L2 flush a `cuMemsetD8Async`. `CudaDriver.timer()` makes one."""

from __future__ import annotations

from typing import Any

from tilec.interop.timing import EventTimer


class CudaTimer(EventTimer):
    def __init__(self, runtime: Any):
        super().__init__(runtime)
        self.cu = runtime.cu

    def create_event(self) -> Any:
        return self.runtime.call("cuEventCreate", 0)

    def record_event(self, event: Any) -> None:
        self.runtime.call("cuEventRecord", event, self.runtime.stream(None))

    def event_elapsed_ms(self, start: Any, end: Any) -> float:
        self.runtime.call("cuEventSynchronize", end)
        name = (
            "cuEventElapsedTime"
            if hasattr(self.cu, "cuEventElapsedTime")
            else "cuEventElapsedTime_v2"
        )
        return float(self.runtime.call(name, start, end))

    def destroy_event(self, event: Any) -> None:
        self.runtime.call("cuEventDestroy", event)

    def flush(self) -> None:
        pointer = self.cu.CUdeviceptr(self.flush_address)
        self.runtime.call(
            "cuMemsetD8Async", pointer, 0, self.flush_bytes, self.runtime.stream(None)
        )


__all__ = ["CudaTimer"]
