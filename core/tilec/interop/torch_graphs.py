"""Timing through torch's graphs (`torch.cuda.CUDAGraph`, which ROCm builds of torch keep):
what Triton's `do_bench_cudagraph` measures (`tilec.testing.do_bench_cudagraph`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def graph_torch() -> Any:
    """torch, where it can capture graphs on a device; else a RuntimeError naming what is
    missing (torch, a device torch can use)."""
    try:
        import torch  # deferred: an optional dependency, needed by this function alone
    except ImportError:
        raise RuntimeError(
            "do_bench_cudagraph needs torch (it captures fn with torch.cuda.CUDAGraph): "
            "install torch, or time with tilec.testing.do_bench"
        ) from None
    if not torch.cuda.is_available():
        raise RuntimeError("do_bench_cudagraph needs a CUDA device that torch can use")
    return torch


def graph_replay_times(
    torch: Any, fn: Callable[[], Any], rep: float, grad_to_none: Sequence[Any] | None
) -> list[float]:
    """Milliseconds of one call of `fn` in each of ten replays of a torch graph that calls it
    about `rep` ms worth of times (`torch` from `graph_torch()`)."""
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
    return times


__all__ = ["graph_replay_times", "graph_torch"]
