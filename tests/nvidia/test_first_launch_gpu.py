"""A program's first launch from a warm disk cache on an NVIDIA GPU (issue 24): it goes through
`tilec_nvidia.libcuda` (ctypes on libcuda.so.1) and imports no `cuda.bindings` or
`cuda.pathfinder`; its results are right, as are the next launches' (the native fast launch);
the driver's errors are the same `CudaError`s; what needs cuda-bindings afterwards (copies of
NumPy arrays, synchronizing, capture queries) takes the ctypes path's handles."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch", reason="needs PyTorch")

PROGRAM = """
import json, sys, time

import numpy as np
import torch

import tilec
import tilec.language as tl


@tilec.jit
def scale_kernel(x_ptr, out_ptr, factor, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + i, tl.load(x_ptr + i, mask=i < n) * factor, mask=i < n)


def vendor_modules():
    return sorted(m for m in sys.modules if m.startswith(("cuda.bindings", "cuda.pathfinder")))


x = torch.arange(4000, device="cuda", dtype=torch.float32)
out = torch.zeros_like(x)
torch.cuda.synchronize()
start = time.perf_counter()
scale_kernel[(4,)](x, out, 3, 4000, BLOCK=1024)
torch.cuda.synchronize()
report = dict(first_ms=1e3 * (time.perf_counter() - start), first_right=torch.equal(out, x * 3),
              after_first=vendor_modules())
from tilec.runtime import hot_path

for factor in (5, 7, 9):  # the Python fast launch (starting the native build), then native ones
    scale_kernel[(4,)](x, out, factor, 4000, BLOCK=1024)
    torch.cuda.synchronize()
    report[f"launch_{factor}_right"] = torch.equal(out, x * factor)
    hot_path.wait_for_native_launches()
report["native"] = type(scale_kernel._launch_info.fast[0]).__name__ == "builtin_function_or_method"

from tilec_nvidia import driver as cuda
from tilec_nvidia import libcuda

runtime = cuda.get_driver()
report["libcuda"] = isinstance(runtime.cu, libcuda.LibCuda)
errors = []
try:
    runtime.load(b"no image", "broken", is_ptx=False)
except cuda.CudaError as error:
    errors.append(str(error))
try:
    scale_kernel[(4, 70000)](x, out, 3, 4000, BLOCK=1024)
except cuda.CudaLimitError as error:
    errors.append(str(error))
report["errors"] = errors
report["after_errors"] = vendor_modules()
host = np.arange(4000, dtype=np.float32)  # copies, synchronizing: cuda-bindings' calls
host_out = np.zeros_like(host)
scale_kernel[(4,)](host, host_out, 2, 4000, BLOCK=1024)
report["numpy_right"] = bool((host_out == 2 * host).all())
device_x, device_out = tilec.to_device(host), tilec.to_device(host_out)
right = []
for factor in (4, 6):  # DeviceArrays: the runner's Python launch, libcuda's cuLaunchKernel
    scale_kernel[(4,)](device_x, device_out, factor, 4000, BLOCK=1024)
    right.append(bool((device_out.numpy() == factor * host).all()))
report["device_arrays_right"] = right
report["capturing"] = runtime.is_capturing()
runtime.synchronize()
report["after_numpy"] = vendor_modules()
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def first_launch(tmp_path_factory) -> dict:
    """The program's report from a process whose disk cache an earlier process wrote."""
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    folder = tmp_path_factory.mktemp("first-launch")
    script = folder / "program.py"
    script.write_text(textwrap.dedent(PROGRAM))
    env = {
        **os.environ,
        "TILEC_CACHE_DIR": str(folder / "cache"),
        "TILEC_BACKEND": "nvidia",
    }
    env.pop("TILEC_NVIDIA_LIBCUDA", None)  # the default: libcuda through ctypes
    report = {}
    for _ in range(2):  # the first compiles and writes the cache
        result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                                timeout=600, check=False, env=env)  # fmt: skip
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout.splitlines()[-1])
    print(f"first launch from the disk cache: {report['first_ms']:.1f} ms")
    return report


def test_the_first_launch_from_the_disk_cache_imports_no_cuda_bindings(first_launch):
    assert first_launch["libcuda"]
    assert first_launch["first_right"]
    assert first_launch["after_first"] == []


def test_the_next_launches_are_right(first_launch):
    assert all(first_launch[f"launch_{factor}_right"] for factor in (5, 7, 9))
    assert first_launch["native"]  # the last two went through the native fast launch


def test_driver_errors_are_the_same_cuda_errors(first_launch):
    bad_image, grid = first_launch["errors"]
    assert re.fullmatch(
        r"cuModuleLoadData failed for kernel 'broken': CUDA_ERROR_[A-Z_]+", bad_image
    )
    assert "grid of kernel 'scale_kernel' is 70000 programs along y" in grid
    assert first_launch["after_errors"] == []  # naming an error needs no cuda-bindings


def test_cuda_bindings_calls_take_the_ctypes_handles(first_launch):
    assert first_launch["numpy_right"]
    assert first_launch["device_arrays_right"] == [True, True]
    assert first_launch["capturing"] is False
    assert any(m.startswith("cuda.bindings") for m in first_launch["after_numpy"])
