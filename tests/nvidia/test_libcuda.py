"""`tilec_nvidia.libcuda`: the driver calls of a launch from the disk cache through ctypes, against
a fake libcuda.so.1 whose entry points are ctypes callbacks with cuda.h's prototypes
(`fake_libcuda.FakeLibCuda`), no GPU: `CudaDriver` runs on it as on cuda-bindings (contexts,
devices, loads, launches, the same errors), other names come from cuda-bindings, and a launch
from the disk cache in a new process imports no `cuda.bindings`."""

from __future__ import annotations

import ctypes
import gc
import json
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest
from fake_libcuda import FUNCTION, PRIMARY_CONTEXT, FakeLibCuda

from tilec_nvidia import driver as cuda
from tilec_nvidia import launcher, libcuda

HERE = Path(__file__).resolve().parent
ELF = b"\x7fELF" + bytes(60)
VECTOR_ADD = ("*fp32", "*fp32", "*fp32", "i32")


def driver_on(fake: FakeLibCuda, ordinal: int | None = None) -> cuda.CudaDriver:
    return cuda.CudaDriver(cu=libcuda.LibCuda(fake.lookup), ordinal=ordinal)


def test_a_driver_on_libcuda_reads_the_device_and_makes_its_primary_context_current():
    fake = FakeLibCuda()
    driver = driver_on(fake)
    props = driver.properties
    assert (props.name, props.compute_capability, props.max_grid) == (
        "Fake H100",
        (9, 0),
        (2**31 - 1, 65535, 65535),
    )
    assert (props.max_shared_per_block_optin, props.sm_count, props.warp_size) == (
        227 << 10,
        132,
        32,
    )
    assert driver.context == PRIMARY_CONTEXT == fake.current
    assert fake.versions_asked == {libcuda.API_VERSION}  # the prototypes' version, not the driver's


def test_a_current_context_is_used_as_it_is():
    """torch's context, current on the thread: no primary context retained, none set."""
    fake = FakeLibCuda(current=PRIMARY_CONTEXT)
    driver = driver_on(fake)
    assert driver.context == PRIMARY_CONTEXT and driver.device == 0
    assert "cuDevicePrimaryCtxRetain" not in fake.calls and "cuCtxSetCurrent" not in fake.calls


def test_load_and_launch_pass_what_cuda_bindings_would(monkeypatch):
    monkeypatch.setattr(cuda, "PREFER_SHARED", True)  # cuFuncSetCacheConfig called too
    fake = FakeLibCuda()
    fake.params_read = 4
    driver = driver_on(fake)
    kernel = driver.load(ELF, "add", is_ptx=False, shared_bytes=64 << 10, signature=VECTOR_ADD)
    assert (kernel.module, kernel.function, kernel.num_regs, kernel.max_threads) == (
        1,
        FUNCTION,
        32,
        1024,
    )
    assert fake.function_attributes == {8: 64 << 10}  # MAX_DYNAMIC_SHARED_SIZE_BYTES, opted in
    assert fake.cache_config == 1  # CU_FUNC_CACHE_PREFER_SHARED
    stream = 0x7F12_3456_7000  # 64 bits, as the handles and the kernelParams address
    driver.launch(kernel, (3, 2), 4, 32, [0x1000, 0x2000, 0x3000, 77], stream=stream)
    assert fake.launches == [
        (FUNCTION, (3, 2, 1), (128, 1, 1), 64 << 10, stream, [0x1000, 0x2000, 0x3000, 77])
    ]
    ptx = driver.load(".version 8.0\n", "add", is_ptx=True, signature=VECTOR_ADD)
    assert ptx.module == 2 and fake.images[-1].startswith(b".version")


def test_the_launch_call_takes_what_cuda_bindings_takes():
    """Handles as ints or `Handle`s, NumPy integers for sizes (through the prototype), no
    stream (None) and the kernelParams address; what it returns is `(CUresult,)`."""
    fake = FakeLibCuda()
    fake.params_read = 1
    api = libcuda.LibCuda(fake.lookup)
    value = ctypes.c_uint64(42)
    params = (ctypes.c_void_p * 1)(ctypes.addressof(value))
    address = ctypes.addressof(params)
    assert api.cuLaunchKernel(FUNCTION, 2, 1, 1, 64, 1, 1, 0, None, address, 0) == (0,)
    grid = np.int64(5)
    stream = api.CUstream(0x7F00_0000_5000)
    assert api.cuLaunchKernel(libcuda.Handle(FUNCTION), grid, 1, 1, 64, 1, 1, 0, stream,
                              address, 0) == (0,)  # fmt: skip
    assert fake.launches == [
        (FUNCTION, (2, 1, 1), (64, 1, 1), 0, 0, [42]),
        (FUNCTION, (5, 1, 1), (64, 1, 1), 0, 0x7F00_0000_5000, [42]),
    ]


def test_the_library_lives_as_long_as_its_functions():
    """A LibCuda keeps what its lookup came from (here a fake's callbacks, which nothing else
    holds): its functions stay callable (they pointed at freed callbacks, a crash)."""
    api = libcuda.LibCuda(FakeLibCuda(device_count=3).lookup)
    gc.collect()
    assert api.cuInit(0) == (0,) and api.cuDeviceGetCount() == (0, 3)


def test_handles_read_as_ints():
    handle = libcuda.Handle(0x7F00_0000_0F00)
    assert int(handle) == handle == 0x7F00_0000_0F00 and hash(handle) == hash(0x7F00_0000_0F00)
    assert handle != libcuda.Handle(1) and handle != "0x7f0000000f00"
    assert int(libcuda.Handle()) == 0 and not libcuda.Handle()
    assert repr(handle) == "Handle(0x7f0000000f00)"


def test_failed_calls_are_the_same_cuda_errors():
    fake = FakeLibCuda()
    driver = driver_on(fake)
    with pytest.raises(cuda.CudaError, match=r"^cuModuleLoadData failed for kernel 'add': "
                       r"CUDA_ERROR_INVALID_IMAGE$"):  # fmt: skip
        driver.load(b"not an image", "add", is_ptx=False)
    with pytest.raises(cuda.CudaError, match="cuModuleGetFunction failed for kernel 'missing': "
                       "CUDA_ERROR_NOT_FOUND"):  # fmt: skip
        driver.load(ELF, "missing", is_ptx=False)
    kernel = driver.load(ELF, "add", is_ptx=False, signature=VECTOR_ADD)
    fake.launch_result = 701
    with pytest.raises(cuda.CudaError, match=r"launch of kernel 'add' failed: "
                       r"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES \(grid \(2, 1, 1\), 128 threads"):  # fmt: skip
        driver.launch(kernel, (2,), 4, 32, [1, 2, 3, 4])
    fake.fail["cuFuncGetAttribute"] = 12345  # a code the driver cannot name
    with pytest.raises(cuda.CudaError, match="cuFuncGetAttribute failed for kernel 'add': "
                       "CUresult 12345"):  # fmt: skip
        driver.load(ELF, "add", is_ptx=False)


def test_a_launch_on_a_thread_without_the_context_makes_it_current_and_retries():
    fake = FakeLibCuda()
    driver = driver_on(fake)
    kernel = driver.load(ELF, "add", is_ptx=False, signature=VECTOR_ADD)
    fake.current = 0
    fake.invalid_context_once = True
    driver.launch(kernel, (1,), 4, 32, [1, 2, 3, 4])
    assert len(fake.launches) == 1 and fake.launch_contexts == [PRIMARY_CONTEXT]


def test_a_device_beyond_the_machines_is_a_device_not_found_error():
    with pytest.raises(cuda.CudaDeviceNotFoundError, match=r"there is no cuda:3: this machine "
                       r"has 2 CUDA device\(s\)"):  # fmt: skip
        driver_on(FakeLibCuda(device_count=2), ordinal=3)


def test_several_devices_launch_each_in_its_context():
    fake = FakeLibCuda(device_count=2)
    api = libcuda.LibCuda(fake.lookup)
    first, second = cuda.CudaDriver(cu=api), cuda.CudaDriver(cu=api, ordinal=1)
    cuda.reset_driver(first, second)
    try:
        kernel = second.load(ELF, "add", is_ptx=False, signature=VECTOR_ADD)
        second.launch(kernel, (1,), 4, 32, [1, 2, 3, 4])
    finally:
        cuda.reset_driver(None)
    assert fake.image_contexts == fake.launch_contexts == [PRIMARY_CONTEXT + 1]
    assert fake.current == PRIMARY_CONTEXT  # pushed and popped


def test_the_native_launch_entry_is_the_drivers_cuLaunchKernel():
    fake = FakeLibCuda()
    assert launcher._launch_entry(libcuda.LibCuda(fake.lookup)) == fake.lookup("cuLaunchKernel")


def fake_bindings(monkeypatch) -> list[str]:
    """cuda-bindings' driver module as a namespace; returns the list its imports are noted in."""
    imports: list[str] = []
    module = types.SimpleNamespace(
        cuMemAlloc=lambda nbytes: (0, 0xABC),
        CUresult=types.SimpleNamespace(CUDA_ERROR_NOT_FOUND=500),
        cuInit=lambda flags: (0,),
        cuDeviceGetCount=lambda: (0, 7),
    )

    def bindings():
        imports.append("cuda.bindings.driver")
        return module

    monkeypatch.setattr(libcuda, "bindings", bindings)
    return imports


def test_other_names_are_cuda_bindings_imported_when_first_asked_for(monkeypatch):
    imports = fake_bindings(monkeypatch)
    driver = driver_on(FakeLibCuda())
    driver.load(ELF, "add", is_ptx=False, signature=VECTOR_ADD)
    assert imports == []  # everything so far went to libcuda
    assert driver.mem_alloc(16) == 0xABC
    assert driver.cu.CUresult.CUDA_ERROR_NOT_FOUND == 500
    assert imports == ["cuda.bindings.driver"] * 2  # once the function, once the enum member
    driver.mem_alloc(16)
    assert len(imports) == 2  # the function is kept
    assert not hasattr(driver.cu, "cuNoSuchCall")


def test_without_libcuda_or_an_entry_point_the_driver_is_cuda_bindings(monkeypatch):
    fake_bindings(monkeypatch)
    monkeypatch.setattr(libcuda, "_api", [])

    def no_library():
        raise OSError("libcuda.so.1: cannot open shared object file")

    monkeypatch.setattr(libcuda, "_library_lookup", no_library)
    assert libcuda.driver_api() is libcuda.bindings()
    for missing in ("cuGetProcAddress_v2", "cuModuleGetFunction"):
        fake = FakeLibCuda()
        if missing == "cuGetProcAddress_v2":
            monkeypatch.setattr(libcuda, "_library_lookup", lambda: lambda name: None)
        else:
            del fake.callbacks[missing]
            monkeypatch.setattr(libcuda, "_library_lookup", lambda fake=fake: fake.lookup)
        with pytest.raises(libcuda.LibCudaError, match=missing):
            libcuda.LibCuda(libcuda._library_lookup())
        libcuda.reset()
        assert libcuda.driver_api() is libcuda.bindings()


@pytest.mark.parametrize(
    ("value", "through_libcuda"),
    [(None, True), ("", True), ("1", True), ("0", False), ("false", False), ("no", False)],
)
def test_libcuda_is_the_default_and_0_goes_back_to_cuda_bindings(
    monkeypatch, value, through_libcuda
):
    fake_bindings(monkeypatch)
    fake = FakeLibCuda()
    monkeypatch.setattr(libcuda, "_library_lookup", lambda: fake.lookup)
    monkeypatch.setattr(libcuda, "_api", [])
    if value is None:
        monkeypatch.delenv(libcuda.ENABLED.name, raising=False)
    else:
        monkeypatch.setenv(libcuda.ENABLED.name, value)
    api = libcuda.driver_api()
    assert isinstance(api, libcuda.LibCuda) == through_libcuda
    assert (api is libcuda.bindings()) != through_libcuda
    assert libcuda.ENABLED.default == "on"


def test_availability_is_asked_of_libcuda(monkeypatch):
    imports = fake_bindings(monkeypatch)
    monkeypatch.setattr(libcuda, "bindings_installed", lambda: True)
    fake = FakeLibCuda(device_count=2)
    monkeypatch.setattr(libcuda, "_api", [libcuda.LibCuda(fake.lookup)])
    assert cuda.runtime_availability() == cuda.Availability(True, "2 CUDA device(s)")
    fake.fail["cuInit"] = 100
    assert cuda.runtime_availability() == cuda.Availability(
        False, "no NVIDIA driver/device (cuInit: CUDA_ERROR_NO_DEVICE)"
    )
    assert imports == []
    monkeypatch.setattr(libcuda, "bindings_installed", lambda: False)
    assert cuda.runtime_availability() == cuda.Availability(False, cuda.INSTALL_HINT)


def test_bindings_installed_is_asked_without_importing(monkeypatch):
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)
    assert not libcuda.bindings_installed()


PROGRAM = """
import json, sys, types
sys.path.insert(0, {here!r})
from fake_libcuda import FakeLibCuda


class Tensor:
    def __init__(self, address):
        self.address, self.dtype, self.is_cuda, self.device = address, "float32", True, "cuda:0"

    def get_device(self):
        return 0

    def data_ptr(self):
        return self.address


sys.modules["torch"] = types.SimpleNamespace(
    Tensor=Tensor,
    _C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda index: 0x5000),
    cuda=types.SimpleNamespace(is_initialized=lambda: True, current_device=lambda: 0),
)
NOT_FOR_A_LAUNCH = {not_for_a_launch!r}
import tilec
import tilec.language as tl
from tilec_nvidia import libcuda

fake = FakeLibCuda(current=0x1234)  # torch's context, current
fake.params_read = 4
libcuda.reset(libcuda.LibCuda(fake.lookup))


@tilec.jit
def scale_kernel(x_ptr, out_ptr, factor, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + i, tl.load(x_ptr + i, mask=i < n) * factor, mask=i < n)


loaded = set(sys.modules)
scale_kernel[(4,)](Tensor(0x10000), Tensor(0x20000), 3, 4000, BLOCK=1024)
imported = [sys.modules[m] for m in sorted(set(sys.modules) - loaded) if sys.modules[m]]
print(json.dumps(dict(
    launches=fake.launches,
    modules=[m for m in sys.modules if m.startswith(("cuda.", "tilec.frontend.generator"))
             or m in NOT_FOR_A_LAUNCH],
    attrs_classes=[m.__name__ + "." + name for m in imported for name, value in vars(m).items()
                   if isinstance(value, type) and value.__module__ == m.__name__
                   and "__attrs_attrs__" in vars(value)],
)))
"""


NOT_FOR_A_LAUNCH = (
    "tilec.interop.copies",
    "tilec.interop.dlpack",
    "tilec.ir.float8",
    "tilec_nvidia.tma_launch",
    "tilec_nvidia.tensor_map",
    "pluggy",
    "tilec.plugin.manager",
    "tilec.plugin.entry_point_index",
    "tilec_interp.plugin",
    "tilec_amd.plugin",
)
"""What a launch of torch tensors does without: the NumPy copies, the DLPack capsule reader, the
float8 formats (a float8 scalar's conversion), the TMA tensor maps (a kernel reading host
descriptors through TMA), and the plugin manager, pluggy, the entry-point index and the other
backends' plugins (the plugins' launch record, `tilec.plugin.launch_record`)."""


def test_a_launch_from_the_disk_cache_in_a_new_process_imports_no_cuda_bindings(tmp_path):
    """The first process compiles (and may import cuda.pathfinder for ptxas); the next launches
    from the disk cache through libcuda alone, loading no NumPy copies, DLPack reader or float8
    formats: one launch, its arguments, on torch's stream."""
    if not libcuda.bindings_installed():  # the backend says it is unavailable without it
        pytest.skip("cuda-bindings is not installed")
    script = tmp_path / "program.py"
    program = PROGRAM.format(here=str(HERE), not_for_a_launch=NOT_FOR_A_LAUNCH)
    script.write_text(textwrap.dedent(program))
    env = {
        **os.environ,
        "TILEC_CACHE_DIR": str(tmp_path / "cache"),
        "TILEC_BACKEND": "nvidia",
    }
    env.pop("TILEC_NVIDIA_LIBCUDA", None)  # the default

    def run() -> dict:
        result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                                timeout=300, check=False, env=env)  # fmt: skip
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout.splitlines()[-1])

    first = run()
    assert "tilec.frontend.generator" in first["modules"]  # it compiled
    for _ in range(3):  # another process editing tilec's files changes the key: try again
        second = run()
        if "tilec.frontend.generator" not in second["modules"]:
            break
    assert second["modules"] == []
    # attrs generates and compiles each class's methods (0.5-1 ms a class): of the modules the
    # launch imports, only the backend's options (attrs by contract) define one
    assert second["attrs_classes"] == ["tilec_nvidia.backend.NvidiaOptions"]
    assert second["launches"] == [
        [FUNCTION, [4, 1, 1], [128, 1, 1], 0, 0x5000, [0x10000, 0x20000, 3, 4000]]
    ]
