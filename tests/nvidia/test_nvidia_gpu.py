"""The CUDA driver on a real GPU: load, launch, copies, limits, launch cost (printed)."""

from __future__ import annotations

import ctypes
import sys
import threading
import time

import numpy as np
import pytest
from nvidia_kernels import (
    SCALE_NAMES,
    SCALE_PTX,
    SCALE_SIGNATURE,
    VECTOR_ADD_LLIR,
    VECTOR_ADD_NAMES,
    VECTOR_ADD_SIGNATURE,
)

from tilec.interop.copies import run_kernel
from tilec.interop.device_array import empty, to_device
from tilec.interop.pointers import arg_signature_type, device_pointer
from tilec_nvidia import driver as cuda
from tilec_nvidia.codegen import llir_to_ptx, ptx_to_cubin
from tilec_nvidia.driver import CudaError
from tilec_nvidia.libcuda import bindings

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu():
    cuda.reset_driver(None)
    return cuda.get_driver()


@pytest.fixture(scope="module")
def vector_add_binaries(gpu):
    target = gpu.properties.target or "sm_90"
    ptx = llir_to_ptx(VECTOR_ADD_LLIR, target)
    return {"ptx": ptx, "cubin": ptx_to_cubin(ptx, target)}


def load_vector_add(gpu, binaries, form="ptx", **options):
    binary = binaries[form]
    if binary is None:
        pytest.skip("no ptxas here: no cubin")
    return gpu.load(
        binary,
        "vector_add",
        is_ptx=form == "ptx",
        signature=VECTOR_ADD_SIGNATURE,
        param_names=VECTOR_ADD_NAMES,
        **options,
    )


def test_device_properties(gpu):
    props = gpu.properties
    print(f"\n{props}")
    assert props.arch.startswith("sm_") and props.sm_count > 0
    assert props.max_grid[0] >= 2**31 - 1 and props.max_threads_per_block == 1024


@pytest.mark.parametrize("form", ["ptx", "cubin"])
def test_vector_add_with_numpy_arrays(gpu, vector_add_binaries, form, rng):
    kernel = load_vector_add(gpu, vector_add_binaries, form)
    n = 1000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    run_kernel(gpu, kernel, ((n + 127) // 128,), [x, y, out, n], num_warps=4, written={2})
    np.testing.assert_array_equal(out, x + y)


def test_hand_written_ptx_with_scalars(gpu, rng):
    kernel = gpu.load(
        SCALE_PTX, "scale", is_ptx=True, signature=SCALE_SIGNATURE, param_names=SCALE_NAMES
    )
    n = 300
    x = to_device(gpu, rng.standard_normal(n).astype(np.float32))
    out = empty(gpu, n)
    for flag in (True, False):
        run_kernel(gpu, kernel, (3,), [x, out, 2.5, flag, n], num_warps=4)
        # ptxas may fuse the multiply and the add (one rounding): compare with a tolerance
        np.testing.assert_allclose(out.numpy(), x.numpy() * 2.5 + flag, rtol=1e-6, atol=1e-6)


def test_to_device_round_trip(gpu, rng):
    host = rng.standard_normal((257, 33))
    device = to_device(gpu, host)
    np.testing.assert_array_equal(device.numpy(), host)
    device.copy_from(host * 2)
    np.testing.assert_array_equal(device.numpy(), host * 2)


def test_grid_limit_error(gpu, vector_add_binaries):
    kernel = load_vector_add(gpu, vector_add_binaries)
    limit = gpu.properties.max_grid[1]
    with pytest.raises(CudaError, match=f"along y; .* at most {limit} along y"):
        gpu.launch(kernel, (1, limit + 1, 1), 4, 32, [0, 0, 0, 0])


def test_too_many_threads(gpu, vector_add_binaries):
    kernel = load_vector_add(gpu, vector_add_binaries)
    with pytest.raises(CudaError, match="num_warps=64"):
        gpu.launch(kernel, (1,), 64, 32, [0, 0, 0, 0])


def test_shared_memory_limits(gpu, vector_add_binaries, rng):
    optin = gpu.properties.max_shared_per_block_optin
    with pytest.raises(CudaError, match=f"at most {optin} per block"):
        load_vector_add(gpu, vector_add_binaries, shared_bytes=optin + 1)
    kernel = load_vector_add(gpu, vector_add_binaries, shared_bytes=optin)  # opts in
    x = rng.standard_normal(64).astype(np.float32)
    out = np.zeros(64, np.float32)
    run_kernel(gpu, kernel, (1,), [x, x, out, 64], num_warps=2, written={2})
    np.testing.assert_array_equal(out, 2 * x)


def test_launch_from_another_thread(gpu, vector_add_binaries, rng):
    kernel = load_vector_add(gpu, vector_add_binaries)
    x = rng.standard_normal(256).astype(np.float32)
    out = np.zeros(256, np.float32)
    errors = []

    def work():
        try:
            run_kernel(gpu, kernel, (2,), [x, x, out, 256], num_warps=4, written={2})
        except BaseException as error:
            errors.append(error)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert not errors, errors
    np.testing.assert_array_equal(out, 2 * x)


def test_launch_on_a_stream(gpu, vector_add_binaries, rng):
    kernel = load_vector_add(gpu, vector_add_binaries)
    cu = gpu.cu
    stream = gpu.call("cuStreamCreate", 0)
    try:
        x = to_device(gpu, rng.standard_normal(512).astype(np.float32))
        out = empty(gpu, 512)
        run_kernel(gpu, kernel, (4,), [x, x, out, 512], num_warps=4, stream=int(stream))
        gpu.synchronize(int(stream))
        np.testing.assert_array_equal(out.numpy(), 2 * x.numpy())
    finally:
        cu.cuStreamDestroy(stream)


def test_torch_tensors(gpu, vector_add_binaries):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    kernel = load_vector_add(gpu, vector_add_binaries)
    x = torch.randn(1000, device="cuda")
    out = torch.empty_like(x)
    run_kernel(gpu, kernel, (8,), [x, x, out, 1000], num_warps=4)
    torch.cuda.synchronize()
    assert torch.equal(out, 2 * x)
    with pytest.raises(TypeError, match="argument 'x' of vector_add lives on cpu"):
        run_kernel(gpu, kernel, (8,), [x.cpu(), x, out, 1000], num_warps=4)
    half = torch.ones(4, device="cuda", dtype=torch.bfloat16)
    assert arg_signature_type(gpu, half) == ("*bf16", True)
    assert arg_signature_type(gpu, OnlyDlpack(half)) == ("*bf16", True)
    assert device_pointer(gpu, OnlyDlpack(x), "x", stream=0) == x.data_ptr()
    assert device_pointer(gpu, OnlyCai(x[1:]), "x") == x.data_ptr() + 4
    with pytest.raises(TypeError, match="argument 'x' lives on cpu"):
        device_pointer(gpu, OnlyDlpack(x.cpu()), "x")


class OnlyDlpack:
    """A CUDA producer that speaks only DLPack."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __dlpack__(self, **kwargs):
        return self.tensor.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()


class OnlyCai:
    def __init__(self, tensor):
        self.tensor = tensor

    @property
    def __cuda_array_interface__(self):
        return self.tensor.__cuda_array_interface__


def _per_launch_us(function, launches=2000, repeats=5) -> float:
    """The median host time of one call of `function`, in microseconds."""
    function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(launches):
            function()
        times.append((time.perf_counter() - start) / launches * 1e6)
        cuda.get_driver().synchronize()
    return sorted(times)[len(times) // 2]


def test_launch_cost(gpu, vector_add_binaries):
    """Host time of a launch, by path (printed, not asserted)."""
    form = "cubin" if vector_add_binaries["cubin"] else "ptx"
    kernel = load_vector_add(gpu, vector_add_binaries, form)
    cu = bindings()  # cuda-bindings' calls, beside tilec's (`gpu.cu`: ctypes, libcuda)
    n = 512
    x, y, out = (
        to_device(gpu, np.ones(n, np.float32)),
        to_device(gpu, np.ones(n, np.float32)),
        empty(gpu, n),
    )
    values = [x.ptr, y.ptr, out.ptr, n]
    params = kernel.packer.pack(values)
    stream0 = gpu.stream(None)
    c_args = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)
    results = {
        "packer.pack": _per_launch_us(lambda: kernel.packer.pack(values)),
        "driver.launch (raw values)": _per_launch_us(
            lambda: gpu.launch(kernel, (4, 1, 1), 4, 32, values)
        ),
        "run_kernel (DeviceArrays)": _per_launch_us(
            lambda: run_kernel(gpu, kernel, (4,), [x, y, out, n], num_warps=4)
        ),
        "cuLaunchKernel, int kernelParams": _per_launch_us(
            lambda: cu.cuLaunchKernel(kernel.function, 4, 1, 1, 128, 1, 1, 0, stream0, params, 0)
        ),
        "cuLaunchKernel, int stream": _per_launch_us(
            lambda: cu.cuLaunchKernel(kernel.function, 4, 1, 1, 128, 1, 1, 0, 0, params, 0)
        ),
        "tilec_nvidia.libcuda cuLaunchKernel": _per_launch_us(
            lambda: gpu.cu.cuLaunchKernel(
                kernel.function, 4, 1, 1, 128, 1, 1, 0, stream0, params, 0
            )
        ),
        "cuLaunchKernel, tuple kernelParams": _per_launch_us(
            lambda: cu.cuLaunchKernel(
                kernel.function, 4, 1, 1, 128, 1, 1, 0, stream0, (tuple(values), c_args), 0
            )
        ),
    }
    host = [np.ones(n, np.float32), np.ones(n, np.float32), np.zeros(n, np.float32), n]
    results["run_kernel (NumPy, copy in/out)"] = _per_launch_us(
        lambda: run_kernel(gpu, kernel, (4,), host, num_warps=4, written={2}), launches=200
    )
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        tx, ty, tout = (torch.ones(n, device="cuda") for _ in range(3))
        results["run_kernel (torch tensors)"] = _per_launch_us(
            lambda: run_kernel(gpu, kernel, (4,), [tx, ty, tout, n], num_warps=4)
        )
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
        launch = libcuda.cuLaunchKernel
        launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
        launch.restype = ctypes.c_int
        handle = int(kernel.function)
        results["ctypes libcuda cuLaunchKernel"] = _per_launch_us(
            lambda: launch(handle, 4, 1, 1, 128, 1, 1, 0, None, params, None)
        )
    except OSError:
        pass
    gpu.synchronize()
    np.testing.assert_array_equal(out.numpy(), 2 * np.ones(n, np.float32))
    print(f"\n{gpu.properties.name}, {form}")
    for path, microseconds in results.items():
        print(f"launch cost: {path:40s} {microseconds:6.2f} us")
