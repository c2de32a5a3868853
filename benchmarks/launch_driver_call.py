"""Host time of the `cuLaunchKernel` call itself, made in different ways from Python.

    python benchmarks/launch_driver_call.py [--rounds 7] [--count 20000]   # device: torch, CUDA

The same loaded tilec vector add (three torch tensors and an int, one program), arguments packed
once, launched `--count` times a sample, `--rounds` samples taken in turn:
- `cuda-bindings`: `driver.cuLaunchKernel(CUfunction, ..., CUstream, params, 0)` (the baseline of
  issue 12's goal);
- `ctypes CDLL`: libcuda's `cuLaunchKernel` through a ctypes prototype (the GIL released around
  the call, as cuda-bindings does);
- `ctypes PyDLL`: the same prototype with the GIL held;
- `ctypes, no argtypes`: the symbol called with ctypes objects for the handles (no conversion
  call per argument);
- `ctypes, cuGetProcAddress entry`: the same on the entry point cuda-bindings resolves;
- `tilec_nvidia.libcuda`: tilec's own call (`CudaDriver.cu.cuLaunchKernel`: ctypes, no
  argtypes, `Handle`s, the kernelParams pointer kept), which a launch from the disk cache makes
  without importing cuda-bindings;
- `pack + ctypes`: what a launch needs beyond the call (`struct.pack_into` of the three addresses
  and the int under the kernel's lock) around the CDLL call.
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from launch_path import interleaved, load_kernel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--count", type=int, default=20000)
    options = parser.parse_args()

    import torch
    from cuda.bindings import driver as cu

    n = 1024
    x, y, out = (
        torch.randn(n, device="cuda"),
        torch.randn(n, device="cuda"),
        torch.empty(n, device="cuda"),
    )
    kernel = load_kernel("tilec")
    compiled = kernel[(1,)](x, y, out, n, BLOCK_SIZE=1024)
    torch.cuda.synchronize()
    loaded = compiled.runtime["loaded"]
    packer = loaded.packer
    params = packer.pack([x.data_ptr(), y.data_ptr(), out.data_ptr(), n])
    threads = compiled.metadata["num_warps"] * compiled.metadata["threads_per_warp"]
    handle = torch.cuda.current_stream().cuda_stream
    hstream = cu.CUstream(handle)
    function, shared = loaded.function, loaded.shared_bytes
    function_address = int(function)

    argtypes = [ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p, ctypes.c_void_p,
                ctypes.c_void_p]  # fmt: skip
    prototypes = {}
    for name, loader in (("cdll", ctypes.CDLL), ("pydll", ctypes.PyDLL)):
        entry = loader("libcuda.so.1").cuLaunchKernel
        entry.argtypes, entry.restype = argtypes, ctypes.c_int
        prototypes[name] = entry
    for entry in prototypes.values():
        out.zero_()
        assert entry(function_address, 1, 1, 1, threads, 1, 1, shared, handle, params, None) == 0
        torch.cuda.synchronize()
        assert torch.equal(out, x + y), "the ctypes launch computed a wrong sum"
    cdll, pydll = prototypes["cdll"], prototypes["pydll"]
    # no argtypes: ctypes converts a Python int as a C int and passes a ctypes object's value,
    # with no from_param call (and no new ctypes object) per argument
    plain = ctypes.CDLL("libcuda.so.1").cuLaunchKernel
    f_arg, s_arg, p_arg = (ctypes.c_void_p(v) for v in (function_address, handle, params))
    # the versioned entry point that cuda-bindings resolves (cuGetProcAddress), same prototype
    error, entry_address, _status = cu.cuGetProcAddress(b"cuLaunchKernel", 12000, 0)
    assert not error, error
    resolved = ctypes.CFUNCTYPE(ctypes.c_int)(int(entry_address))
    for call in (plain, resolved):
        out.zero_()
        assert call(f_arg, 1, 1, 1, threads, 1, 1, shared, s_arg, p_arg, None) == 0
        torch.cuda.synchronize()
        assert torch.equal(out, x + y), "the ctypes launch computed a wrong sum"
    from tilec_nvidia import driver as cuda

    runtime = cuda.get_driver()
    tilec_launch, tilec_stream = runtime.cu.cuLaunchKernel, runtime.stream(handle)
    out.zero_()
    assert tilec_launch(function, 1, 1, 1, threads, 1, 1, shared, tilec_stream, params, 0) == (0,)
    torch.cuda.synchronize()
    assert torch.equal(out, x + y), "tilec's launch call computed a wrong sum"
    lock, pack_into = packer.lock, packer.pack_into
    xp, yp, op = x.data_ptr(), y.data_ptr(), out.data_ptr()

    def pack_and_call() -> None:
        with lock:
            pack_into(xp, yp, op, n)
            if cdll(function_address, 1, 1, 1, threads, 1, 1, shared, handle, params, None):
                raise RuntimeError("launch failed")

    rows = {
        "cuda-bindings": "cu_launch(function, 1, 1, 1, threads, 1, 1, shared, hstream, params, 0)",
        "ctypes CDLL": "cdll(function_address, 1, 1, 1, threads, 1, 1, shared, handle, params, None)",
        "ctypes PyDLL": "pydll(function_address, 1, 1, 1, threads, 1, 1, shared, handle, params, None)",
        "pack + ctypes CDLL": "pack_and_call()",
        "tilec_nvidia.libcuda": "tilec_launch(function, 1, 1, 1, threads, 1, 1, shared, "
        "tilec_stream, params, 0)",
        "ctypes, no argtypes": "plain(f_arg, 1, 1, 1, threads, 1, 1, shared, s_arg, p_arg, None)",
        "ctypes, cuGetProcAddress entry": "resolved(f_arg, 1, 1, 1, threads, 1, 1, shared, s_arg, p_arg, None)",
    }
    namespace = {**locals(), "cu_launch": cu.cuLaunchKernel}
    samples = interleaved(rows, namespace, options.rounds, options.count, torch.cuda.synchronize)
    base = statistics.median(samples["cuda-bindings"])
    print(
        f"device: {torch.cuda.get_device_name()}, {options.rounds} rounds x {options.count} launches"
    )
    print("| driver call | median us | min us | x cuda-bindings |")
    print("|---|---|---|---|")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.2f} | {min(values):.2f} | {median / base:.2f} |")


if __name__ == "__main__":
    main()
