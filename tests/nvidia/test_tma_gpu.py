"""TMA on the GPU (docs/tma.md): tensor maps encoded by `tilec_nvidia.tensor_map` through the
process's driver (ctypes or cuda-bindings) and read by the kernel of `tma_kernels` (built with
`tilec_nvidia.tma`): boxes of fp16, bf16, fp32, int8 and fp64 rows, swizzled 0/32/64/128
bytes, partly out of bounds (TMA's zero or NaN fill), rows with a stride wider than the shape,
one mbarrier reused over several boxes. Needs an sm_90 device."""

from __future__ import annotations

import math

import numpy as np
import pytest
from tma_kernels import NAME, THREADS, signature, tensor_maps, tma_copy_llir

from tilec.interop.device_array import to_device
from tilec_nvidia import driver as cuda
from tilec_nvidia import tensor_map, tma_launch
from tilec_nvidia.codegen import llir_to_ptx, ptx_to_cubin

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu():
    cuda.reset_driver(None)
    driver = cuda.get_driver()
    if driver.properties.compute_capability < (9, 0):
        pytest.skip("TMA needs an sm_90 device")
    return driver


CASES = [
    # element, numpy dtype (bits), shape, row stride, block, padding, steps
    ("fp16", np.float16, (100, 72), 72, (64, 64), "zero", 1),
    ("bf16", np.uint16, (50, 96), 96, (32, 32), "zero", 2),
    ("fp32", np.float32, (40, 20), 24, (16, 8), "nan", 1),
    ("fp32", np.float32, (70, 90), 92, (32, 64), "zero", 3),  # box cut to 32 columns
    ("i8", np.int8, (70, 48), 48, (32, 64), "zero", 1),
    ("i8", np.int8, (33, 300), 304, (16, 128), "zero", 2),
    ("fp64", np.float64, (9, 30), 30, (8, 16), "zero", 1),
    ("fp16", np.float16, (256, 256), 256, (128, 64), "zero", 2),  # in bounds
]


@pytest.mark.parametrize(("element", "dtype", "shape", "stride", "block", "padding", "steps"),
                         CASES)  # fmt: skip
def test_tma_copies_boxes_as_descriptor_loads_read_them(gpu, element, dtype, shape, stride, block,
                                                        padding, steps):  # fmt: skip
    rng = np.random.default_rng(23)
    rows, columns = shape
    full = (rng.standard_normal((rows, stride)) * 50).astype(dtype)
    source = to_device(gpu, full)
    element_bytes = full.itemsize
    swizzle = tensor_map.swizzle_bytes(block[-1] * element_bytes)
    req = tensor_map.request(element, source.ptr, shape, (stride, 1), block, padding, swizzle)
    box = tuple(reversed(req.box))
    cache = tensor_map.TensorMapCache()
    assert cache.get(gpu, req) == cache.get(gpu, req)  # encoded once

    target = gpu.properties.target
    ptx = llir_to_ptx(tma_copy_llir(target, box, element_bytes, swizzle, steps), target)
    binary = ptx_to_cubin(ptx, target)
    kernel = gpu.load(binary or ptx, NAME, is_ptx=binary is None, signature=signature(element))
    metadata = {"params": list(signature(element)),
                "tensor_maps": tensor_maps(element, block, padding, swizzle)}  # fmt: skip
    tma_launch.install(gpu, kernel, metadata)
    grid = (math.ceil(columns / (box[1] * steps)), math.ceil(rows / box[0]))
    out_shape = (grid[1] * box[0], grid[0] * steps * box[1])
    initial = np.zeros(out_shape, dtype)
    initial.view(np.uint8)[...] = 0x5A  # what no box wrote would show
    out = to_device(gpu, initial)
    values = [source.ptr, rows, columns, stride, out.ptr, out_shape[1]]
    gpu.launch(kernel, grid, THREADS // 32, 32, values)
    gpu.synchronize()
    got = out.numpy()

    if padding == "nan":
        assert np.isnan(got[rows:, :]).all() and np.isnan(got[:, columns:]).all()
        np.testing.assert_array_equal(got[:rows, :columns], full[:, :columns])
        return
    expected = np.zeros(out_shape, dtype)
    expected[:rows, :columns] = full[:, :columns]
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))
