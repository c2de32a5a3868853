"""The timers `tilec.testing.do_bench` measures kernels with, and what a GPU runtime supplies.

A timer brackets each timed call with `mark()` and reads `elapsed_ms(start, end)`; `flush()`
evicts the device's L2 cache before a call (it writes an `L2_FLUSH_BYTES` buffer), `reserve(n)`
prepares `n` marks ahead of the timed calls, `sync()` waits for the device and `close()` frees
what the timer holds.

- `HostTimer`: the host clock around a device synchronization (on the interpreter, no device).
- `EventTimer`: the device's own events, recorded on the default stream. A vendor's runtime (a
  `tilec.interop.device.DeviceRuntime`) offers one through an optional `timer()` method returning
  an `EventTimer` subclass that defines `create_event`, `record_event`, `event_elapsed_ms`,
  `destroy_event` and `flush` with its vendor's calls (`tilec_nvidia.timing`,
  `tilec_amd.timing`); a runtime without `timer()` is timed with the `HostTimer`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

L2_FLUSH_BYTES = 256 * 1024 * 1024
"""The buffer written before every timed run so that no run finds its inputs in the L2 cache."""


class HostTimer:
    """The host clock; device work is waited for with the runtime's `synchronize` (no runtime:
    the interpreter, nothing to wait for or to flush)."""

    def __init__(self, runtime: Any = None):
        self.runtime = runtime
        self.flush_address = None
        if runtime is not None:
            self.flush_bytes = L2_FLUSH_BYTES
            self.flush_address = runtime.mem_alloc(self.flush_bytes)
            self.zeros = np.zeros(self.flush_bytes, np.uint8)

    def sync(self) -> None:
        if self.runtime is not None:
            self.runtime.synchronize()

    def flush(self) -> None:
        if self.flush_address is not None:
            self.runtime.copy_to_device(
                self.flush_address, self.zeros.ctypes.data, self.flush_bytes
            )

    def mark(self) -> Any:
        self.sync()
        return time.perf_counter()

    def elapsed_ms(self, start: Any, end: Any) -> float:
        return (end - start) * 1000.0

    def reserve(self, count: int) -> None:
        """Nothing to prepare for the host clock."""

    def close(self) -> None:
        if self.flush_address is not None:
            self.runtime.mem_free(self.flush_address)


class EventTimer:
    """Device events on the default stream, the L2 flush a device memset of `flush_bytes`. The
    events are made ahead (`reserve`), so that none is created between a launch and the event
    that ends its timing, and all are destroyed by `close`."""

    def __init__(self, runtime: Any):
        self.runtime = runtime
        self.flush_bytes = L2_FLUSH_BYTES
        self.flush_address = runtime.mem_alloc(self.flush_bytes)
        self.events: list[Any] = []
        self.unused: list[Any] = []

    # What a vendor defines -----------------------------------------------------------------

    def create_event(self) -> Any:
        """A new device event."""
        raise NotImplementedError(f"{type(self).__qualname__} does not define create_event()")

    def record_event(self, event: Any) -> None:
        """Record `event` on the default stream."""
        raise NotImplementedError(f"{type(self).__qualname__} does not define record_event()")

    def event_elapsed_ms(self, start: Any, end: Any) -> float:
        """The milliseconds between two recorded events, `end` waited for."""
        raise NotImplementedError(f"{type(self).__qualname__} does not define event_elapsed_ms()")

    def destroy_event(self, event: Any) -> None:
        raise NotImplementedError(f"{type(self).__qualname__} does not define destroy_event()")

    def flush(self) -> None:
        """Write the `flush_bytes` at `flush_address` on the default stream (a memset)."""
        raise NotImplementedError(f"{type(self).__qualname__} does not define flush()")

    # The timer -----------------------------------------------------------------------------

    def reserve(self, count: int) -> None:
        """Create `count` events now, for the marks of the timed runs."""
        made = [self.create_event() for _ in range(count)]
        self.unused.extend(made)
        self.events.extend(made)

    def sync(self) -> None:
        self.runtime.synchronize()

    def mark(self) -> Any:
        if self.unused:
            event = self.unused.pop()
        else:
            event = self.create_event()
            self.events.append(event)
        self.record_event(event)
        return event

    def elapsed_ms(self, start: Any, end: Any) -> float:
        return float(self.event_elapsed_ms(start, end))

    def close(self) -> None:
        self.sync()
        for event in self.events:
            self.destroy_event(event)
        self.runtime.mem_free(self.flush_address)


def timer_for(runtime: Any) -> Any:
    """The timer of a GPU runtime: its own events where it offers `timer()`, else the host
    clock around its `synchronize`."""
    make = getattr(runtime, "timer", None)
    return make() if make is not None else HostTimer(runtime)


__all__ = ["L2_FLUSH_BYTES", "EventTimer", "HostTimer", "timer_for"]
