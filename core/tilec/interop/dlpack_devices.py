"""DLPack's device types (`DLDeviceType`) by number and name: what a launch checks of an array's
device, without the capsule reader (`tilec.interop.dlpack`, loaded when a capsule is read)."""

from __future__ import annotations

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED, KDL_ROCM = 1, 2, 3, 13, 10
DEVICE_NAMES = {
    1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal", 10: "rocm",
    13: "cuda_managed", 14: "oneapi",
}  # fmt: skip
