"""Benchmarking and testing helpers with Triton's meanings: `do_bench`, `do_bench_cudagraph`,
`assert_close`, `Benchmark` and `perf_report`.

`do_bench` times with CUDA events on the nvidia backend (through the driver, cuda.bindings), with
HIP events on amd (hip-python), with the host clock around a device synchronization on another
GPU backend, and with the CPU clock on the interpreter. On GPUs a 256 MB buffer is cleared
(cuMemsetD8Async / hipMemsetAsync) before every run so that no run finds its inputs in L2. Warm-up and repetitions are given in milliseconds and turned into counts from an
estimate of one run, as Triton's are.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tilec.runtime.compiler import get_backend
from tilec.testing_report import Benchmark, Mark, perf_report

RETURN_MODES = ("min", "max", "mean", "median", "all")
L2_FLUSH_BYTES = 256 * 1024 * 1024

__all__ = [
    "Benchmark",
    "Mark",
    "assert_close",
    "do_bench",
    "do_bench_cudagraph",
    "perf_report",
]


class _CpuTimer:
    """The host clock; `device` work is waited for with `synchronize` (None on the interp)."""

    def __init__(self, runtime: Any = None):
        self.runtime = runtime
        self.flush_address = None
        if runtime is not None:
            self.flush_address = runtime.mem_alloc(L2_FLUSH_BYTES)
            self.zeros = np.zeros(L2_FLUSH_BYTES, np.uint8)

    def sync(self) -> None:
        if self.runtime is not None:
            self.runtime.synchronize()

    def flush(self) -> None:
        if self.flush_address is not None:
            self.runtime.copy_to_device(self.flush_address, self.zeros.ctypes.data, L2_FLUSH_BYTES)

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


class _CudaTimer:
    """CUDA events on the default stream; the L2 flush is a cuMemsetD8Async of 256 MB."""

    def __init__(self, runtime: Any):
        self.runtime = runtime
        self.cu = runtime.cu
        self.flush_address = runtime.mem_alloc(L2_FLUSH_BYTES)
        self.events: list[Any] = []
        self.unused: list[Any] = []

    def reserve(self, count: int) -> None:
        """Create `count` events now, so that no event is created between a launch and the
        event that ends its timing."""
        for _ in range(count):
            self.unused.append(self.runtime.call("cuEventCreate", 0))
        self.events.extend(self.unused)

    def sync(self) -> None:
        self.runtime.synchronize()

    def flush(self) -> None:
        pointer = self.cu.CUdeviceptr(self.flush_address)
        self.runtime.call("cuMemsetD8Async", pointer, 0, L2_FLUSH_BYTES, self.runtime.stream(None))

    def mark(self) -> Any:
        if self.unused:
            event = self.unused.pop()
        else:
            event = self.runtime.call("cuEventCreate", 0)
            self.events.append(event)
        self.runtime.call("cuEventRecord", event, self.runtime.stream(None))
        return event

    def elapsed_ms(self, start: Any, end: Any) -> float:
        self.runtime.call("cuEventSynchronize", end)
        name = (
            "cuEventElapsedTime"
            if hasattr(self.cu, "cuEventElapsedTime")
            else "cuEventElapsedTime_v2"
        )
        return float(self.runtime.call(name, start, end))

    def close(self) -> None:
        self.sync()
        for event in self.events:
            self.runtime.call("cuEventDestroy", event)
        self.runtime.mem_free(self.flush_address)


class _HipTimer(_CudaTimer):
    """HIP events on the null stream (hip-python's names for the CUDA timer's calls); the L2
    flush is a hipMemsetAsync of 256 MB."""

    def __init__(self, runtime: Any):
        self.runtime = runtime
        self.flush_address = runtime.mem_alloc(L2_FLUSH_BYTES)
        self.events = []
        self.unused = []

    def reserve(self, count: int) -> None:
        for _ in range(count):
            self.unused.append(self.runtime.call("hipEventCreate"))
        self.events.extend(self.unused)

    def flush(self) -> None:
        self.runtime.call("hipMemsetAsync", self.flush_address, 0, L2_FLUSH_BYTES, None)

    def mark(self) -> Any:
        if self.unused:
            event = self.unused.pop()
        else:
            event = self.runtime.call("hipEventCreate")
            self.events.append(event)
        self.runtime.call("hipEventRecord", event, None)
        return event

    def elapsed_ms(self, start: Any, end: Any) -> float:
        self.runtime.call("hipEventSynchronize", end)
        return float(self.runtime.call("hipEventElapsedTime", start, end))

    def close(self) -> None:
        self.sync()
        for event in self.events:
            self.runtime.call("hipEventDestroy", event)
        self.runtime.mem_free(self.flush_address)


def _timer(backend: str | None) -> Any:
    chosen = get_backend(backend)
    runtime_of = getattr(chosen.driver, "runtime", None)
    if runtime_of is None:
        return _CpuTimer()
    return timer_for(runtime_of())


def timer_for(runtime: Any) -> Any:
    """The device timer of a GPU driver's runtime: CUDA or HIP events (the host clock with a
    device synchronization for another driver)."""
    if hasattr(runtime, "cu"):
        return _CudaTimer(runtime)
    if hasattr(runtime, "hip"):
        return _HipTimer(runtime)
    return _CpuTimer(runtime)


def summarize(times: Sequence[float], quantiles: Sequence[float] | None, return_mode: str) -> Any:
    """Triton's `_summarize_statistics`: the quantiles if asked (one value alone unwrapped),
    else the `return_mode` statistic of `times` (`all`: the list)."""
    if return_mode not in RETURN_MODES:
        raise ValueError(
            f"return_mode must be one of {', '.join(RETURN_MODES)}; got {return_mode!r}"
        )
    values = np.asarray(times, dtype=np.float64)
    if quantiles is not None:
        result = [float(q) for q in np.quantile(values, list(quantiles))]
        return result[0] if len(result) == 1 else result
    if return_mode == "all":
        return values.tolist()
    return float(getattr(np, return_mode)(values))


def do_bench(
    fn: Callable[[], Any],
    warmup: float = 25,
    rep: float = 100,
    grad_to_none: Sequence[Any] | None = None,
    quantiles: Sequence[float] | None = None,
    return_mode: str = "mean",
    backend: str | None = None,
) -> Any:
    """The time of one call of `fn` in milliseconds, as Triton's `do_bench`: about `warmup` ms of
    warm-up calls, then about `rep` ms of timed calls, each after an L2 flush (on GPUs).
    `backend` is the backend whose device `fn` runs on (default: the selected one)."""
    if return_mode not in RETURN_MODES:
        raise ValueError(
            f"return_mode must be one of {', '.join(RETURN_MODES)}; got {return_mode!r}"
        )
    timer = _timer(backend)
    try:
        fn()
        timer.sync()
        start = timer.mark()
        for _ in range(5):
            timer.flush()
            fn()
        estimate_ms = max(timer.elapsed_ms(start, timer.mark()) / 5, 1e-6)
        n_warmup = max(1, int(warmup / estimate_ms))
        n_repeat = max(1, int(rep / estimate_ms))
        for _ in range(n_warmup):
            fn()
        timer.reserve(2 * n_repeat)
        marks = []
        for _ in range(n_repeat):
            for tensor in grad_to_none or ():
                tensor.grad = None
            timer.flush()
            begin = timer.mark()
            fn()
            marks.append((begin, timer.mark()))
        timer.sync()
        times = [timer.elapsed_ms(begin, end) for begin, end in marks]
    finally:
        timer.close()
    return summarize(times, quantiles, return_mode)


def do_bench_cudagraph(
    fn: Callable[[], Any],
    rep: float = 20,
    grad_to_none: Sequence[Any] | None = None,
    quantiles: Sequence[float] | None = None,
    return_mode: str = "mean",
) -> Any:
    """Triton's `do_bench_cudagraph`: `fn` captured in a CUDA graph (through torch) and replayed,
    about `rep` ms of calls per replay, ten replays. nvidia only; needs torch. The work of `fn`
    must go to torch's current stream (torch operations, kernels launched on that stream)."""
    try:
        import torch  # deferred: an optional dependency, needed by this function alone
    except ImportError:
        raise RuntimeError(
            "do_bench_cudagraph needs torch (it captures fn with torch.cuda.CUDAGraph): "
            "install torch, or time with tilec.testing.do_bench"
        ) from None
    if not torch.cuda.is_available():
        raise RuntimeError("do_bench_cudagraph needs a CUDA device that torch can use")
    if return_mode not in RETURN_MODES:
        raise ValueError(
            f"return_mode must be one of {', '.join(RETURN_MODES)}; got {return_mode!r}"
        )
    with torch.cuda.stream(torch.cuda.Stream()):
        fn()
        for tensor in grad_to_none or ():
            tensor.grad = None
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        n_repeat = max(1, int(rep / max(start.elapsed_time(end), 1e-6)))
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(n_repeat):
                fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(10):
            start.record()
            graph.replay()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / n_repeat)
    return summarize(times, quantiles, return_mode)


def to_numpy(value: Any) -> np.ndarray:
    """A NumPy copy of an array argument: NumPy, a tilec device array, a torch tensor, a scalar."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "detach"):  # torch: bfloat16 has no NumPy type
        tensor = value.detach().cpu()
        if str(tensor.dtype) == "torch.bfloat16":
            tensor = tensor.float()
        return tensor.numpy()
    if hasattr(value, "numpy"):
        return np.asarray(value.numpy())
    return np.asarray(value)


def assert_close(
    x: Any, y: Any, atol: float | None = None, rtol: float | None = None, err_msg: str = ""
) -> None:
    """Triton's `assert_close`: `x` and `y` equal within `atol` (default 1e-2) and `rtol`
    (default 0), compared on the host; raises AssertionError naming the mismatches."""
    atol = 1e-2 if atol is None else atol
    rtol = 0.0 if rtol is None else rtol
    expected, actual = to_numpy(y), to_numpy(x)
    if expected.dtype == np.bool_ or actual.dtype == np.bool_:
        np.testing.assert_array_equal(actual, expected, err_msg=err_msg)
        return
    np.testing.assert_allclose(
        actual.astype(np.float64), expected.astype(np.float64), atol=atol, rtol=rtol,
        equal_nan=True, err_msg=err_msg,
    )  # fmt: skip
