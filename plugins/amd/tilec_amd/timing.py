"""HIP events for `tilec.testing.do_bench` (`tilec.interop.timing.EventTimer`): recorded on the
null stream, the L2 flush a `hipMemsetAsync`. `HipDriver.timer()` makes one."""

from __future__ import annotations

from typing import Any

from tilec.interop.timing import EventTimer


class HipTimer(EventTimer):
    def create_event(self) -> Any:
        return self.runtime.call("hipEventCreate")

    def record_event(self, event: Any) -> None:
        self.runtime.call("hipEventRecord", event, None)

    def event_elapsed_ms(self, start: Any, end: Any) -> float:
        self.runtime.call("hipEventSynchronize", end)
        return float(self.runtime.call("hipEventElapsedTime", start, end))

    def destroy_event(self, event: Any) -> None:
        self.runtime.call("hipEventDestroy", event)

    def flush(self) -> None:
        self.runtime.call("hipMemsetAsync", self.flush_address, 0, self.flush_bytes, None)


__all__ = ["HipTimer"]
