"""`tilec.testing.do_bench` on the nvidia backend times with CUDA events
(`tilec_nvidia.timing.CudaTimer`, which `CudaDriver.timer()` makes): checked on a fake runtime."""

from __future__ import annotations

import pytest

import tilec.testing as tt
from tilec.interop import timing
from tilec_nvidia.timing import CudaTimer


class _FakeCuda:
    """A CUDA runtime of events on a fake GPU clock, logging the driver calls made."""

    class cu:  # the cuda.bindings module it stands for
        CUdeviceptr = int
        cuEventElapsedTime = None

    def __init__(self):
        self.clock, self.log, self.stamps, self.freed = 0.0, [], {}, []

    def mem_alloc(self, nbytes):
        return 4096

    def mem_free(self, address):
        self.freed.append(address)

    def synchronize(self, stream=None):
        pass

    def stream(self, stream):
        return 0

    def call(self, name, *args):
        self.log.append(name)
        if name == "cuEventCreate":
            return object()
        if name == "cuEventRecord":
            self.stamps[id(args[0])] = self.clock
        if name == "cuEventElapsedTime":
            return self.stamps[id(args[1])] - self.stamps[id(args[0])]
        return None


def test_do_bench_with_cuda_events(monkeypatch):
    fake = _FakeCuda()
    monkeypatch.setattr(tt, "_timer", lambda backend: CudaTimer(fake))

    def launch():
        fake.clock += 1.5

    assert tt.do_bench(launch, warmup=3, rep=30, return_mode="median") == pytest.approx(1.5)
    last_create = max(i for i, name in enumerate(fake.log) if name == "cuEventCreate")
    timed = fake.log[last_create:].count("cuEventRecord")
    assert timed == 2 * 20, "every event of the timed runs is created before the first of them"
    assert fake.log.count("cuEventDestroy") == fake.log.count("cuEventCreate")
    assert fake.log.count("cuMemsetD8Async") == 5 + 20, "the L2 is flushed before every run"
    assert fake.freed == [4096]


def test_the_cuda_runtime_offers_its_event_timer(monkeypatch):
    from fake_cuda import FakeCu

    from tilec_nvidia.driver import CudaDriver

    monkeypatch.setattr(timing, "L2_FLUSH_BYTES", 1024)
    timer = timing.timer_for(CudaDriver(cu=FakeCu()))
    assert isinstance(timer, CudaTimer)
    timer.close()
