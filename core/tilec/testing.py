"""Benchmarking and testing helpers with Triton's meanings: `do_bench`, `do_bench_cudagraph`,
`assert_close`, `Benchmark` and `perf_report`.

`do_bench` times with the device's events where the backend's runtime offers a timer
(`tilec.interop.timing`: CUDA events on the nvidia backend, HIP events on amd), with the host
clock around a device synchronization on another GPU backend, and with the CPU clock on the
interpreter. On GPUs a 256 MB buffer is cleared before every run so that no run finds its inputs
in L2. Warm-up and repetitions are given in milliseconds and turned into counts from an estimate
of one run, as Triton's are.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tilec.interop import timing, torch_graphs
from tilec.runtime.compiler import get_backend
from tilec.testing_report import Benchmark, Mark, perf_report

RETURN_MODES = ("min", "max", "mean", "median", "all")

__all__ = [
    "Benchmark",
    "Mark",
    "assert_close",
    "do_bench",
    "do_bench_cudagraph",
    "perf_report",
]


def _timer(backend: str | None) -> Any:
    chosen = get_backend(backend)
    runtime_of = getattr(chosen.driver, "runtime", None)
    if runtime_of is None:
        return timing.HostTimer()
    return timing.timer_for(runtime_of())


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
    torch = torch_graphs.graph_torch()
    if return_mode not in RETURN_MODES:
        raise ValueError(
            f"return_mode must be one of {', '.join(RETURN_MODES)}; got {return_mode!r}"
        )
    times = torch_graphs.graph_replay_times(torch, fn, rep, grad_to_none)
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
