"""Host time of a launch on a cache hit: tilec beside a bare `cuLaunchKernel` and Triton.

    python benchmarks/launch_path.py [--rounds 7] [--count 20000]   # device: torch, CUDA
    python benchmarks/launch_path.py --fake                          # CPU: fake driver and torch
    python benchmarks/launch_path.py --interp                        # CPU: the interp backend

Device mode (an NVIDIA GPU with torch; Triton where installed) launches the same vector add
(three torch tensors and an int, one program) `--count` times per sample and prints, per launch
in microseconds, the median and minimum of `--rounds` samples taken in turn (bare, tilec,
tilec `kernel[grid]` each call, tilec `stream=`, Triton, then again), so every row sees the
same machine state:
- `bare`: `cuLaunchKernel` through cuda-bindings with tilec's loaded kernel, the arguments
  packed once, the CUstream looked up once (what the issue's goal is measured against);
- `tilec`: `launch(x, y, out, n, BLOCK_SIZE=1024)` with `launch = add_kernel[(1,)]`;
- `tilec kernel[grid]`: `add_kernel[(1,)](...)` on every call;
- `tilec stream=`: with `stream=` torch's current stream (its handle, no stream look-up), which
  the native fast launch leaves to the Python one;
- `tilec, Python fast path`: the first row's launch with `native_launch.enabled` off;
- `triton`: the same kernel under `triton.jit`.
Then the Python fast path's work without the driver call (the runner's `cuLaunchKernel` replaced
by a function that returns success) and each step of it timed alone, to show where the time goes.

`--fake` runs the same launch against the test suite's fake cuda.bindings and a fake torch (no
GPU), for profiling the Python side; `--interp` times a warm launch on the interpreter.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import tempfile
import time
import timeit
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
KERNEL = """
@jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x + y, mask=mask)
"""


def load_kernel(flavour: str):
    """KERNEL exec'd under tilec or triton (both read the source back from a file)."""
    if flavour == "tilec":
        import tilec as front
        import tilec.language as tl
    else:
        import triton as front
        import triton.language as tl
    namespace = {"jit": front.jit, "tl": tl}
    path = Path(tempfile.mkdtemp(prefix="launch-path-")) / f"{flavour}_kernels.py"
    path.write_text(KERNEL)
    exec(compile(KERNEL, str(path), "exec"), namespace)
    return namespace["add_kernel"]


def interleaved(
    rows: dict[str, str], namespace: dict, rounds: int, count: int, sync=None
) -> dict[str, list[float]]:
    """Microseconds a launch of every row (a statement, timed in a `timeit` loop: no wrapper
    call), `rounds` samples of `count` launches each, taken in turn after a warm-up of each;
    `sync()` (untimed) after every sample."""
    timers = {name: timeit.Timer(stmt, globals=namespace) for name, stmt in rows.items()}
    for timer in timers.values():
        timer.timeit(200)
        if sync is not None:
            sync()
    samples: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(rounds):
        for name, timer in timers.items():
            samples[name].append(timer.timeit(count) / count * 1e6)
            if sync is not None:
                sync()
    return samples


def step_us(stmt, count: int) -> float:
    """Median microseconds of a statement (a callable), 5 samples."""
    return statistics.median(timeit.repeat(stmt, number=count, repeat=5)) / count * 1e6


def print_table(samples: dict[str, list[float]], bare: str | None) -> None:
    base = statistics.median(samples[bare]) if bare else None
    print("| launch (cache hit) | median us | min us | x bare |")
    print("|---|---|---|---|")
    for name, values in samples.items():
        median = statistics.median(values)
        ratio = f"{median / base:.2f}" if base else "-"
        print(f"| {name} | {median:.2f} | {min(values):.2f} | {ratio} |")


def device(rounds: int, count: int) -> None:
    import torch
    from cuda.bindings import driver as cu

    from tilec import settings
    from tilec.runtime import cache, hot_path, native_launch

    hot_path.native_in_background = False  # native code built by a shape's 2nd launch, timed after
    os.environ.setdefault("TILEC_CACHE_DIR", tempfile.mkdtemp(prefix="tilec-launch-"))
    n = 1024
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    kernel = load_kernel("tilec")
    launch = kernel[(1,)]
    compiled = launch(x, y, out, n, BLOCK_SIZE=1024)
    torch.cuda.synchronize()
    assert torch.equal(out, x + y), "tilec's vector add is wrong"
    loaded = compiled.runtime["loaded"]
    params = loaded.packer.pack([x.data_ptr(), y.data_ptr(), out.data_ptr(), n])
    threads = compiled.metadata["num_warps"] * compiled.metadata["threads_per_warp"]
    stream_handle = torch.cuda.current_stream().cuda_stream
    hstream = cu.CUstream(stream_handle)
    function, shared = loaded.function, loaded.shared_bytes
    native_launch.enabled = False  # a second kernel object whose fast launch stays Python
    python_kernel = load_kernel("tilec")
    python_launch = python_kernel[(1,)]
    python_launch(x, y, out, n, BLOCK_SIZE=1024)
    native_launch.enabled = True

    rows = {
        "bare cuLaunchKernel": "cu_launch(function, 1, 1, 1, threads, 1, 1, shared, hstream, "
        "params, 0)",
        "tilec": "launch(x, y, out, n, BLOCK_SIZE=1024)",
        "tilec kernel[grid]": "kernel[(1,)](x, y, out, n, BLOCK_SIZE=1024)",
        "tilec stream=": "launch(x, y, out, n, BLOCK_SIZE=1024, stream=stream_handle)",
        "tilec, Python fast path": "python_launch(x, y, out, n, BLOCK_SIZE=1024)",
    }
    try:
        triton_launch = load_kernel("triton")[(1,)]
        triton_launch(x, y, out, n, BLOCK_SIZE=1024)
        rows["triton"] = "triton_launch(x, y, out, n, BLOCK_SIZE=1024)"
    except ImportError as error:
        print(f"triton: skipped ({error})")
    namespace = {**locals(), "cu_launch": cu.cuLaunchKernel}
    samples = interleaved(rows, namespace, rounds, count, torch.cuda.synchronize)
    import cuda.bindings

    triton = sys.modules.get("triton")
    print(
        f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
        f"triton {getattr(triton, '__version__', '-')}, "
        f"cuda-bindings {getattr(cuda.bindings, '__version__', '?')}, "
        f"{rounds} rounds x {count} launches, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    print_table(samples, "bare cuLaunchKernel")

    def lock_cycle() -> None:
        with loaded.packer.lock:
            pass

    # tilec's own work: the runner's driver call replaced by one that returns success
    # tilec's Python fast path, step by step (the native launch calls the driver itself)
    kernel, launch = python_kernel, python_launch
    namespaces = _launch_namespaces(kernel)
    fast = kernel._launch_info.fast[0]
    print("\ntilec's steps, each alone (median us):")
    steps = {
        "whole launch, driver call replaced by a no-op": lambda: launch(
            x, y, out, n, BLOCK_SIZE=1024
        ),
        "the fast launch alone, fast(grid, args, meta)": lambda: fast(
            (1,), (x, y, out, n), {"BLOCK_SIZE": 1024}
        ),
        "an empty lambda (the floor of each row)": lambda: None,
        "kernel.cache_key (globals unchanged?)": lambda: kernel.cache_key,
        "settings.backend() (TILEC_BACKEND)": settings.backend,
        "cache.generation read": lambda: cache.generation,
        "3 x (type, dtype, get_device, data_ptr)": lambda: [
            (type(t), t.dtype, t.get_device(), t.data_ptr()) for t in (x, y, out)
        ],
        "3 x get_device()": lambda: (x.get_device(), y.get_device(), out.get_device()),
        "3 x data_ptr()": lambda: (x.data_ptr(), y.data_ptr(), out.data_ptr()),
        "torch current stream (_cuda_getCurrentRawStream)": lambda: (
            torch._C._cuda_getCurrentRawStream(0)
        ),
        "pack (struct.pack_into)": lambda: loaded.packer.pack_into(
            x.data_ptr(), y.data_ptr(), out.data_ptr(), n
        ),
        "lock (with lock: pass)": lock_cycle,
    }
    success = cu.cuLaunchKernel(function, 1, 1, 1, threads, 1, 1, shared, hstream, params, 0)
    original = namespaces[0]["cu_launch"]
    for namespace in namespaces:
        namespace["cu_launch"] = lambda *args: success
    try:
        for name, fn in steps.items():
            print(f"| {name} | {step_us(fn, count):.3f} |")
    finally:
        for namespace in namespaces:
            namespace["cu_launch"] = original
    torch.cuda.synchronize()


def _launch_namespaces(kernel) -> list[dict]:
    """The namespaces of the kernel's runners and Python fast launches that call `cu_launch`
    (the fast launch inlines the runner's launch into its own), for the no-op swap. The native
    fast launch calls the driver's entry point itself: the no-op rows time the Python path
    (`native_launch.enabled` is switched off for them)."""
    functions = [runner for _compiled, runner in kernel._launch_info.launches.values()]
    functions += list(kernel._launch_info.fast)
    found = [
        f.__globals__
        for f in functions
        if "cu_launch" in getattr(f, "__globals__", ())  # native launches: not swapped
    ]
    if not found:
        raise RuntimeError("the launch took no compiled runner")
    return found


def install_fake_torch() -> type:
    """A fake torch in `sys.modules` (its current stream 0, its CUDA initialized, device 0);
    returns its `Tensor`: a float32 CUDA tensor that is an address (`Tensor(address)`)."""

    class Tensor:
        dtype = "torch.float32"
        is_cuda = True
        device = "cuda:0"

        def __init__(self, address: int):
            self.address = address

        def get_device(self) -> int:
            return 0

        def data_ptr(self) -> int:
            return self.address

    sys.modules["torch"] = types.SimpleNamespace(  # type: ignore[assignment]
        Tensor=Tensor,
        _C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda index: 0),
        cuda=types.SimpleNamespace(is_initialized=lambda: True, current_device=lambda: 0),
    )
    return Tensor


def fake(rounds: int, count: int) -> None:
    """The launch against tests/nvidia/fake_cuda.py and a fake torch: tilec's Python side."""
    sys.path.insert(0, str(HERE.parent / "tests" / "nvidia"))
    from fake_cuda import FakeCu

    from tilec.backend import Availability
    from tilec.runtime import hot_path
    from tilec_nvidia import driver as cuda
    from tilec_nvidia.backend import NvidiaBackend

    Tensor = install_fake_torch()
    success = (0,)

    entry = ctypes.CFUNCTYPE(ctypes.c_int, *[ctypes.c_void_p] * 11)(lambda *args: 0)

    class FastCu(FakeCu):
        def cuLaunchKernel(self, *args):
            return success

        def cuDriverGetVersion(self):
            return (0, 12080)

        def cuGetProcAddress(self, symbol, version, flags):  # the native launch's entry point
            return (0, ctypes.cast(entry, ctypes.c_void_p).value, 0)

    os.environ.setdefault("TILEC_CACHE_DIR", tempfile.mkdtemp(prefix="tilec-launch-"))
    os.environ.pop("TILEC_BACKEND", None)
    fake_cu = FastCu()
    cuda.reset_driver(cuda.CudaDriver(cu=fake_cu))
    hot_path.native_in_background = False  # native code built by a shape's 2nd launch, timed after
    NvidiaBackend.is_available = lambda self: Availability(True, "fake")  # type: ignore[method-assign]
    kernel = load_kernel("tilec")
    x, y, out, n = Tensor(0x10000), Tensor(0x20000), Tensor(0x30000), 1024
    launch = kernel[(1,)]
    launch(x, y, out, n, BLOCK_SIZE=1024)
    rows = {
        "fake cuLaunchKernel": "fake_cu.cuLaunchKernel(1, 1, 1, 1, 128, 1, 1, 0, 0, 0, 0)",
        "fake entry point (ctypes callback)": "entry(1, 1, 1, 1, 128, 1, 1, 0, 0, 0, 0)",
        "tilec": "launch(x, y, out, n, BLOCK_SIZE=1024)",
        "tilec kernel[grid]": "kernel[(1,)](x, y, out, n, BLOCK_SIZE=1024)",
        "tilec stream=": "launch(x, y, out, n, BLOCK_SIZE=1024, stream=0)",
    }
    print_table(interleaved(rows, locals(), rounds, count), "fake cuLaunchKernel")


def interp(rounds: int, count: int) -> None:
    """A warm 16-element vector add on the interpreter (the whole launch, NumPy included)."""
    import numpy as np

    os.environ.setdefault("TILEC_CACHE_DIR", tempfile.mkdtemp(prefix="tilec-launch-"))
    os.environ["TILEC_BACKEND"] = "interp"  # read on every launch, as without set_backend
    kernel = load_kernel("tilec")
    x, y, out = (np.ones(16, np.float32) for _ in range(3))
    launch = kernel[(1,)]
    rows = {"interp launch": "launch(x, y, out, 16, BLOCK_SIZE=16)"}
    print_table(interleaved(rows, locals(), rounds, count), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--count", type=int, default=20000)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--fake", action="store_true", help="CPU: fake cuda.bindings and torch")
    mode.add_argument("--interp", action="store_true", help="CPU: the interp backend")
    args = parser.parse_args()
    if args.fake:
        fake(args.rounds, args.count)
    elif args.interp:
        interp(args.rounds, min(args.count, 2000))
    else:
        device(args.rounds, args.count)


if __name__ == "__main__":
    main()
