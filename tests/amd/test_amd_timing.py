"""`tilec.testing.do_bench` on the AMD backend times with HIP events (and flushes L2 with
hipMemsetAsync) as it does with CUDA events on nvidia; checked against a fake hip module."""

from __future__ import annotations

from fake_hip import FakeHip

import tilec.testing as tt
from tilec.interop import timing
from tilec_amd.driver import HipDriver
from tilec_amd.timing import HipTimer


def test_do_bench_uses_hip_events_on_amd(monkeypatch):
    monkeypatch.setattr(timing, "L2_FLUSH_BYTES", 1024)
    hip = FakeHip()
    timer = timing.timer_for(HipDriver(hip=hip))
    assert isinstance(timer, HipTimer)
    monkeypatch.setattr(tt, "_timer", lambda backend: timer)
    runs = []
    ms = tt.do_bench(lambda: runs.append(1), warmup=1, rep=2, return_mode="median")
    assert ms >= 0 and len(runs) > 2
    assert hip.memsets and all(nbytes == 1024 for _, _, nbytes in hip.memsets)  # L2 flushes
    recorded = [event for event in range(len(hip.events)) if hip.events[event] is not None]
    assert len(recorded) >= 2  # start and end events of the timed runs
    assert sorted(hip.destroyed) == list(range(len(hip.events)))  # every event freed
