"""The checks of test_lower_basic.py on an NVIDIA GPU, through `cuda.bindings.driver` directly
(not the backend's launcher, so that a lowering failure is told apart from a runtime one), and
the bandwidth of the vector add. Run alone: `python tests/lowering/test_lower_gpu.py`.
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np
import pytest
import test_lower_basic as basic

from tilec.lowering import lower_module
from tilec_nvidia.codegen import find_ptxas, llir_to_ptx, ptx_to_cubin
from tilec_nvidia.target_info import NvidiaTargetInfo

_CTYPES = {"i32": ctypes.c_int32, "i64": ctypes.c_int64, "u32": ctypes.c_uint32,
           "fp32": ctypes.c_float, "fp64": ctypes.c_double, "i1": ctypes.c_bool}  # fmt: skip


def _gpu():
    try:
        from cuda.bindings import driver as cu

        (err,) = cu.cuInit(0)
        if err != cu.CUresult.CUDA_SUCCESS:
            return None
        err, count = cu.cuDeviceGetCount()
    except Exception:  # ImportError, or no libcuda.so: no GPU here
        return None
    if err != cu.CUresult.CUDA_SUCCESS or count == 0:
        return None
    return cu


CU = _gpu()
pytestmark = pytest.mark.gpu


def _ok(result):
    err, *rest = result if isinstance(result, tuple) else (result,)
    if err != CU.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA error {err}")
    return rest[0] if len(rest) == 1 else rest


class Gpu:
    def __init__(self):
        self.device = _ok(CU.cuDeviceGet(0))
        self.context = _ok(CU.cuDevicePrimaryCtxRetain(self.device))
        _ok(CU.cuCtxSetCurrent(self.context))
        attr = CU.CUdevice_attribute
        major = _ok(CU.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0))
        minor = _ok(CU.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0))
        self.arch = f"sm_{major}{minor}"

    def load(self, name: str):
        module = basic._module(name)
        lowered = lower_module(module, NvidiaTargetInfo(self.arch, 32), basic._kernel_name(module))
        ptx = llir_to_ptx(lowered.llvm_ir, self.arch)
        image = ptx_to_cubin(ptx, self.arch) if find_ptxas() else None
        image = image or ptx.encode() + b"\0"
        cu_module = _ok(CU.cuModuleLoadData(image))
        function = _ok(CU.cuModuleGetFunction(cu_module, lowered.name.encode()))
        return lowered, function, ptx

    def launch(self, lowered, function, args, grid, device_args=None) -> None:
        values = []
        for param, arg in zip(lowered.params, args, strict=True):
            if param.startswith("*"):
                values.append(ctypes.c_uint64(int(arg)))
            else:
                values.append(_CTYPES[param](arg))
        pointers = (ctypes.c_void_p * len(values))(*(ctypes.addressof(v) for v in values))
        grid3 = tuple(grid) + (1,) * (3 - len(grid))
        threads = lowered.num_warps * lowered.threads_per_warp
        _ok(CU.cuLaunchKernel(function, *grid3, threads, 1, 1, lowered.shared_bytes, 0,
                              ctypes.addressof(pointers), 0))  # fmt: skip

    def run(self, name: str, args: list, grid: tuple[int, ...] = (1,)) -> None:
        """Copy arrays in, launch, copy every array back (as `run_on_cpu` writes in place)."""
        lowered, function, _ = self.load(name)
        device = []
        for arg in args:
            if isinstance(arg, np.ndarray):
                address = _ok(CU.cuMemAlloc(max(arg.nbytes, 1)))
                _ok(CU.cuMemcpyHtoD(address, arg.ctypes.data, arg.nbytes))
                device.append(address)
            else:
                device.append(arg)
        self.launch(lowered, function, device, grid)
        _ok(CU.cuCtxSynchronize())
        for arg, address in zip(args, device, strict=True):
            if isinstance(arg, np.ndarray):
                _ok(CU.cuMemcpyDtoH(arg.ctypes.data, address, arg.nbytes))
                _ok(CU.cuMemFree(address))


@pytest.fixture(scope="module")
def gpu() -> Gpu:
    if CU is None:
        pytest.skip("no NVIDIA driver or device (cuda.bindings)")
    return Gpu()


def test_vector_add(gpu):
    basic.check_vector_add_runs(gpu.run)


def test_masked_loads(gpu):
    basic.check_masked_loads_give_other(gpu.run)


def test_broadcast_2d(gpu):
    basic.check_broadcast_2d_runs(gpu.run)


def test_convert_layout(gpu):
    basic.check_convert_layout_trans_and_reshape_run(gpu.run)


@pytest.mark.parametrize("flag", [3, -1])
def test_control_flow(gpu, flag):
    basic.check_for_if_while_run(gpu.run, flag)


def test_casts(gpu):
    basic.check_casts_and_integer_semantics_match_the_interpreter(gpu.run)


def test_dtypes(gpu):
    basic.check_f16_bf16_f64_i1_and_unsigned_offsets_run(gpu.run)


def test_softmax_rows(gpu):
    basic.check_softmax_rows_run(gpu.run, rows=4096)


def _time_ms(gpu: Gpu, launch, repeats: int = 50) -> float:
    """The median time of `launch()` over `repeats` runs, by CUDA events."""
    start, stop = _ok(CU.cuEventCreate(0)), _ok(CU.cuEventCreate(0))
    times = []
    for _ in range(repeats):
        _ok(CU.cuEventRecord(start, 0))
        launch()
        _ok(CU.cuEventRecord(stop, 0))
        _ok(CU.cuEventSynchronize(stop))
        times.append(_ok(CU.cuEventElapsedTime(start, stop)))
    return float(np.median(times))


def _device_copy(array: np.ndarray) -> int:
    address = _ok(CU.cuMemAlloc(array.nbytes))
    _ok(CU.cuMemcpyHtoD(address, array.ctypes.data, array.nbytes))
    return address


def test_vector_add_and_softmax_bandwidth(gpu, capsys):
    """Vector add of 2^27 f32 and softmax of 32768x1024 f32: bytes moved over the median time
    (and Triton's, with the same timing, where Triton and torch are installed)."""
    n = 1 << 27
    add, add_fn, _ = gpu.load("vector_add.gir")
    x = np.ones(n, np.float32)
    buffers = [_device_copy(x), _device_copy(x), _ok(CU.cuMemAlloc(n * 4))]
    add_ms = _time_ms(gpu, lambda: gpu.launch(add, add_fn, [*buffers, n], (n // 1024,)))
    out = np.zeros(n, np.float32)
    _ok(CU.cuMemcpyDtoH(out.ctypes.data, buffers[2], n * 4))
    assert (out == 2).all()
    rows, cols = 32768, 1024
    soft, soft_fn, _ = gpu.load("softmax_rows.gir")
    data = RNG_GPU.standard_normal((rows, cols)).astype(np.float32)
    src, dst = _device_copy(data), _ok(CU.cuMemAlloc(data.nbytes))
    soft_ms = _time_ms(gpu, lambda: gpu.launch(soft, soft_fn, [dst, src, cols, cols], (rows,)))
    lines = [
        f"tilec vector add 2^27 f32 on {gpu.arch}: {add_ms:.3f} ms, "
        f"{3 * 4 * n / add_ms / 1e9:.2f} TB/s",
        f"tilec softmax {rows}x{cols} f32: {soft_ms:.3f} ms, "
        f"{2 * data.nbytes / soft_ms / 1e9:.2f} TB/s",
        *_triton_times(n, rows, cols),
    ]
    with capsys.disabled():
        print("\n" + "\n".join(lines))


RNG_GPU = np.random.default_rng(1)


def _triton_times(n: int, rows: int, cols: int) -> list[str]:
    try:
        import torch
        import triton
        import triton.language as tl
    except ImportError:
        return ["triton: not installed"]

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x + y, mask=mask)

    @triton.jit
    def softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offsets = tl.arange(0, BLOCK)
        mask = offsets < n_cols
        x = tl.load(in_ptr + row * stride + offsets, mask=mask, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * stride + offsets, e / tl.sum(e, axis=0), mask=mask)

    x = torch.ones(n, device="cuda")
    y, out = torch.ones_like(x), torch.empty_like(x)
    data = torch.randn(rows, cols, device="cuda")
    result = torch.empty_like(data)

    def add():
        add_kernel[(n // 1024,)](x, y, out, n, BLOCK=1024, num_warps=4)

    def softmax():
        softmax_kernel[(rows,)](result, data, cols, cols, BLOCK=1024, num_warps=4)

    add()
    softmax()
    torch.cuda.synchronize()
    add_ms = _time_torch(torch, add)
    soft_ms = _time_torch(torch, softmax)
    return [
        f"triton vector add: {add_ms:.3f} ms, {3 * 4 * n / add_ms / 1e9:.2f} TB/s",
        f"triton softmax: {soft_ms:.3f} ms, {2 * 4 * rows * cols / soft_ms / 1e9:.2f} TB/s",
    ]


def _time_torch(torch, launch, repeats: int = 50) -> float:
    times = []
    for _ in range(repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        launch()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return float(np.median(times))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-s", "-p", "no:cacheprovider"]))
