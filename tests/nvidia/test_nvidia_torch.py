"""tilec launches inside PyTorch programs on an NVIDIA GPU: streams (with a delayed producer),
CUDA graph capture and replay, the launch handle, threads, torch.compile, several devices."""

from __future__ import annotations

import threading

import pytest

import tilec
import tilec.language as tl
import tilec.torch as tilec_torch

torch = pytest.importorskip("torch", reason="needs PyTorch")
pytestmark = pytest.mark.gpu

N = 1 << 20
SLEEP_CYCLES = 200_000_000  # about 0.1 s on an H100: long enough to expose a wrong stream


@tilec.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


@tilec.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask))


def scale(x, out, factor, **options):
    return scale_kernel[(tilec.cdiv(x.numel(), 1024),)](
        x, out, x.numel(), factor, BLOCK=1024, backend="nvidia", **options
    )


@pytest.fixture(autouse=True)
def cuda_torch():
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    torch.cuda.synchronize()


def delayed_input(stream):
    """x written as 3.0 on `stream` only after a long sleep there."""
    x = torch.zeros(N, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(SLEEP_CYCLES)
        x.fill_(3.0)
    return x


def test_launch_inside_torch_stream_context_waits_for_the_producer():
    s = torch.cuda.Stream()
    x = delayed_input(s)
    out = torch.zeros_like(x)
    with torch.cuda.stream(s):
        scale(x, out, 2.0)  # no stream=: torch's current stream, s
    torch.cuda.synchronize()
    assert torch.all(out == 6.0)


@pytest.mark.parametrize("kind", ["torch", "cuda.bindings", "int"])
def test_stream_option_waits_for_the_producer(kind):
    from cuda.bindings import driver as cu

    s = torch.cuda.Stream()
    x = delayed_input(s)
    out = torch.zeros_like(x)
    stream = {"torch": s, "cuda.bindings": cu.CUstream(s.cuda_stream), "int": s.cuda_stream}
    scale(x, out, 2.0, stream=stream[kind])
    torch.cuda.synchronize()
    assert torch.all(out == 6.0)


def test_numpy_arguments_copy_on_the_launch_stream():
    import numpy as np

    s = torch.cuda.Stream()
    x = delayed_input(s)
    out = np.zeros(N, np.float32)
    scale(x, out, 2.0, stream=s)  # copies out on s, then waits for s
    assert np.all(out == 6.0)


def test_graph_capture_and_replay_of_several_launches():
    x = torch.randn(N, device="cuda")
    y, z, w = torch.empty_like(x), torch.empty_like(x), torch.empty_like(x)

    def step():
        scale(x, y, 2.0)
        scale(y, z, 3.0)
        add_kernel[(N // 1024,)](z, x, w, N, BLOCK=1024, backend="nvidia")

    warm = torch.cuda.Stream()
    warm.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(warm):
        step()  # compile and load before capturing
    torch.cuda.current_stream().wait_stream(warm)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    for _ in range(2):
        new = torch.randn(N, device="cuda")
        x.copy_(new)
        w.zero_()
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(w, new * 7.0)


def test_launch_handle_has_the_kernels_resources():
    x = torch.randn(N, device="cuda")
    handle = scale(x, torch.empty_like(x), 1.0)
    assert ".entry scale_kernel" in handle.asm["ptx"] and "cubin" in handle.asm
    md = handle.metadata
    assert md["num_regs"] > 0 and md["n_spills"] >= 0 and md["shared"] >= 0


def test_launches_from_many_threads():
    xs = [torch.full((N,), float(t), device="cuda") for t in range(8)]
    outs = [torch.empty_like(x) for x in xs]
    scale(xs[0], outs[0], 1.0)
    errors = []

    def worker(t):
        try:
            for i in range(50):
                scale(xs[t], outs[t], float(i))
        except Exception as error:
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    torch.cuda.synchronize()
    assert errors == []
    for t in range(8):
        assert torch.all(outs[t] == 49.0 * t)


@tilec_torch.custom_op("tilec_gpu_test::scale", mutates_args=())
def scale_op(x: torch.Tensor, factor: float) -> torch.Tensor:
    out = torch.empty_like(x)
    scale(x, out, factor)
    return out


@scale_op.register_fake
def _(x: torch.Tensor, factor: float) -> torch.Tensor:
    return torch.empty_like(x)


def test_torch_compile_fullgraph_traces_through_the_op():
    compiled = torch.compile(lambda x: scale_op(x, 3.0) + 1.0, fullgraph=True)
    x = torch.randn(N, device="cuda")
    torch.testing.assert_close(compiled(x), x * 3.0 + 1.0)


def test_two_devices():
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two CUDA devices; this machine has one (the logic is tested on the "
                    "CPU against a two-device fake: tests/nvidia/test_nvidia_devices.py)")  # fmt: skip
    for index in (1, 0):
        x = torch.randn(N, device=f"cuda:{index}")
        out = torch.empty_like(x)
        with torch.cuda.stream(torch.cuda.Stream(index)):
            scale(x, out, 2.0)
        torch.cuda.synchronize(index)
        torch.testing.assert_close(out, x * 2.0)
    with pytest.raises(TypeError, match="different devices"):
        scale(torch.randn(N, device="cuda:0"), torch.empty(N, device="cuda:1"), 1.0)


def test_set_device_and_torch_set_device_on_one_gpu():
    x = torch.randn(N, device="cuda")
    torch.cuda.set_device(0)
    tilec.set_device(0)
    try:
        handle = scale(x, torch.empty_like(x), 1.0)
        assert 0 in handle.runtime["loaded_on"]
        tilec.set_device(torch.cuda.device_count())  # no such device
        with pytest.raises(tilec.DeviceNotFoundError, match=r"there is no cuda:\d+"):
            tilec.to_device(x.cpu().numpy(), backend="nvidia")
    finally:
        tilec.set_device(None)


def test_do_bench_cudagraph_times_tilec_launches():
    """`tilec.testing.do_bench_cudagraph` captures tilec launches in a CUDA graph (on torch's
    side stream) and replays them: the time is positive, every replay wrote the output, and it
    is no longer than `do_bench`'s per-launch time (the graph removes the launch gaps)."""
    import tilec.testing

    x = torch.rand(N, device="cuda")
    out = torch.full((N,), -1.0, device="cuda")
    scale(x, out, 2.0)  # warm-up: compile and load before the capture
    torch.cuda.synchronize()
    out.fill_(-1.0)
    graph_ms = tilec.testing.do_bench_cudagraph(lambda: scale(x, out, 3.0), rep=20)
    torch.cuda.synchronize()
    assert graph_ms > 0
    torch.testing.assert_close(out, x * 3.0)
    plain_ms = tilec.testing.do_bench(lambda: scale(x, out, 3.0), warmup=5, rep=20)
    assert graph_ms < 2 * plain_ms
