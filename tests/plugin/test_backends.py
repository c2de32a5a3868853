"""The shipped backends: options, cache-key hashes, and `is_available()` on a machine without
their vendor's driver (this one, and CI's), which must report and never raise."""

from __future__ import annotations

import ctypes.util
import enum
import subprocess
import sys
import types

import attrs
import pytest

from tilec.backend import Availability, Backend, BackendOptions, GpuBackend, GpuOptions
from tilec.errors import OptionValueError
from tilec_amd.backend import AmdBackend
from tilec_interp.backend import InterpBackend
from tilec_nvidia import libcuda
from tilec_nvidia.backend import NvidiaBackend

ALL_BACKENDS = [InterpBackend(), NvidiaBackend(), AmdBackend()]
HAS_CUDA_DRIVER = ctypes.util.find_library("cuda") is not None
HAS_ROCM_RUNTIME = ctypes.util.find_library("amdhip64") is not None


@pytest.mark.parametrize("backend", ALL_BACKENDS, ids=lambda b: b.name)
def test_is_available_reports_an_availability(backend: Backend):
    availability = backend.is_available()
    assert isinstance(availability, Availability)
    assert availability.available or availability.reason


def test_interp_is_always_available():
    assert InterpBackend().is_available().available


@pytest.mark.skipif(HAS_CUDA_DRIVER, reason="this machine has an NVIDIA driver")
def test_nvidia_without_driver_says_so():
    availability = NvidiaBackend().is_available()
    assert not availability
    assert availability.reason.startswith("no NVIDIA driver/device (")


@pytest.mark.skipif(HAS_ROCM_RUNTIME, reason="this machine has a ROCm runtime")
def test_amd_without_rocm_says_so():
    assert AmdBackend().is_available() == Availability(
        False, "no ROCm runtime (libamdhip64.so not found)"
    )


def test_nvidia_without_cuda_bindings_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)  # makes the import raise ImportError
    assert NvidiaBackend().is_available() == Availability(
        False, "cuda-python (cuda-bindings) is not installed: pip install cuda-bindings"
    )


def test_amd_without_hip_python_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "hip", None)
    assert AmdBackend().is_available() == Availability(
        False, "hip-python is not installed: pip install hip-python"
    )


class FakeCUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_NO_DEVICE = 100


def fake_cuda_driver(monkeypatch, init_result: FakeCUresult, count: int = 0) -> None:
    """cuda-bindings' driver module faked, and libcuda.so.1 not found by ctypes (so that the
    driver API is cuda-bindings', `tilec_nvidia.libcuda.driver_api`), on a GPU machine too."""

    def no_library():
        raise OSError("libcuda.so.1: cannot open shared object file")

    monkeypatch.setattr(libcuda, "_api", [])
    monkeypatch.setattr(libcuda, "_library_lookup", no_library)
    driver = types.ModuleType("cuda.bindings.driver")
    driver.CUresult = FakeCUresult
    driver.cuInit = lambda flags: (init_result,)
    driver.cuDeviceGetCount = lambda: (FakeCUresult.CUDA_SUCCESS, count)
    package = types.ModuleType("cuda.bindings")
    package.driver = driver
    monkeypatch.setitem(sys.modules, "cuda.bindings", package)
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", driver)


def test_nvidia_driver_error_is_reported_by_name(monkeypatch):
    fake_cuda_driver(monkeypatch, FakeCUresult.CUDA_ERROR_NO_DEVICE)
    assert NvidiaBackend().is_available() == Availability(
        False, "no NVIDIA driver/device (cuInit: CUDA_ERROR_NO_DEVICE)"
    )


def test_nvidia_with_devices_is_available(monkeypatch):
    fake_cuda_driver(monkeypatch, FakeCUresult.CUDA_SUCCESS, count=2)
    assert NvidiaBackend().is_available() == Availability(True, "2 CUDA device(s)")


def test_plugins_import_no_vendor_library():
    code = (
        "import sys, tilec_nvidia.plugin, tilec_amd.plugin, tilec_interp.plugin\n"
        "from tilec.plugin.manager import load_backends\n"
        "backends = load_backends()\n"
        "[b.parse_options() for b in backends.values()]\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('cuda', 'hip', 'rocm')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


# Options ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ALL_BACKENDS, ids=lambda b: b.name)
def test_default_options_are_frozen_and_hashable(backend: Backend):
    options = backend.parse_options()
    assert isinstance(options, BackendOptions)
    assert options == backend.parse_options()
    assert hash(options) == hash(backend.parse_options())
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        options.num_warps = 8  # type: ignore[misc]


@pytest.mark.parametrize("backend", ALL_BACKENDS, ids=lambda b: b.name)
def test_unknown_option_names_are_rejected_and_valid_ones_listed(backend: Backend):
    with pytest.raises(TypeError) as error:
        backend.parse_options(num_warp=4, blocksize=2)
    message = str(error.value)
    assert f"backend '{backend.name}' has no option 'blocksize', 'num_warp'" in message
    listed = message.split("valid options: ", 1)[1].split(", ")
    assert listed == sorted(listed) and {"debug", "num_stages", "num_warps"} <= set(listed)


@pytest.mark.parametrize(
    ("backend", "options", "expected"),
    [
        (NvidiaBackend(), {"target": "sm_1000"}, "option 'target' must be one of sm_70, "),
        (NvidiaBackend(), {"num_warps": 3}, "option 'num_warps' must be a power of two; got 3"),
        (NvidiaBackend(), {"num_warps": 64}, "option 'num_warps' must be between 1 and 32; got 64"),
        (InterpBackend(), {"num_stages": "3"}, "option 'num_stages' must be an integer; got '3'"),
        (InterpBackend(), {"debug": 1}, "option 'debug' must be True or False; got 1"),
        (AmdBackend(), {"target": "sm_90"}, "option 'target' must be one of gfx90a, gfx942, "),
        (
            AmdBackend(),
            {"waves_per_eu": -1},
            "option 'waves_per_eu' must be between 0 and 20; got -1",
        ),
    ],
    ids=lambda value: str(value) if isinstance(value, dict) else None,
)
def test_invalid_option_values_are_rejected_naming_them(backend, options, expected):
    with pytest.raises(ValueError) as error:
        backend.parse_options(**options)
    assert str(error.value).startswith(f"backend '{backend.name}': ")
    assert expected in str(error.value)


def test_backend_specific_options():
    assert NvidiaBackend().parse_options(target="sm_90", num_warps=8).target == "sm_90"
    amd = AmdBackend().parse_options(target="gfx942", waves_per_eu=2)
    assert (amd.target, amd.waves_per_eu, amd.num_stages) == ("gfx942", 2, 2)
    with pytest.raises(TypeError, match="has no option 'waves_per_eu'"):
        NvidiaBackend().parse_options(waves_per_eu=2)


# Cache-key hash --------------------------------------------------------------------------------


def test_hash_depends_on_name_version_and_options(monkeypatch):
    nvidia = NvidiaBackend()
    default = nvidia.hash()
    assert default == nvidia.hash(nvidia.parse_options())
    assert default == NvidiaBackend().hash()
    assert nvidia.hash(nvidia.parse_options(num_warps=8)) != default
    assert nvidia.hash(nvidia.parse_options(target="sm_90")) != default
    assert InterpBackend().hash() != AmdBackend().hash()
    monkeypatch.setattr(NvidiaBackend, "version", "99.0")
    assert nvidia.hash() != default


def test_base_backend_leaves_the_rest_to_later_stages():
    backend = InterpBackend()
    for call in (
        lambda: backend.layout_rules("sm_90"),
        lambda: backend.add_stages({}, backend.parse_options()),
        lambda: Backend().driver,
    ):
        with pytest.raises(NotImplementedError):
            call()
    availability = Backend().is_available()  # reports, never raises
    assert not availability and "has no driver" in availability.reason


# Drivers ---------------------------------------------------------------------------------------


def test_gpu_drivers_load_on_first_use():
    code = (
        "import sys\n"
        "from tilec.plugin.manager import load_backends\n"
        "backends = load_backends()\n"
        "before = 'tilec_nvidia.launcher' in sys.modules\n"
        "backends['nvidia'].driver\n"
        "print(before, 'tilec_nvidia.launcher' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["False", "True"]


class _BrokenDriverPathBackend(Backend):
    name = "broken-driver"
    driver_class = "tilec_no_such_module.launcher:Driver"


def test_a_driver_that_cannot_be_imported_is_reported_not_raised():
    availability = _BrokenDriverPathBackend().is_available()
    assert not availability
    assert "cannot import its driver 'tilec_no_such_module.launcher:Driver'" in availability.reason
    assert "ModuleNotFoundError" in availability.reason
    with pytest.raises(RuntimeError, match="reinstall the plugin"):
        _BrokenDriverPathBackend().make_driver()


class _HostDriver:
    """A driver with no `runtime()` (no GpuDriver): it runs on the host."""

    def is_available(self) -> Availability:
        return Availability(True, "always")


class _NoTargetBackend(GpuBackend):
    """A GpuBackend whose options do not derive from GpuOptions (no `target`)."""

    name = "no-target"
    options_class = BackendOptions
    archs = NvidiaBackend.archs
    driver_class = _HostDriver


class _FirstTryBackend(GpuBackend):
    """A backend author's first try: a GpuBackend left with the default options."""

    name = "first-try"
    archs = NvidiaBackend.archs
    driver_class = _HostDriver


def test_a_gpu_backend_s_default_options_have_a_checked_target_and_an_opt_level():
    backend = _FirstTryBackend()
    options = backend.parse_options(target="sm_90")
    assert isinstance(options, GpuOptions) and options.opt_level == 3
    assert backend.resolve_target(options) == "sm_90"
    with pytest.raises(OptionValueError) as info:
        backend.parse_options(target="sm_1000")
    assert str(info.value).startswith(
        "backend 'first-try': option 'target' must be one of sm_70, sm_75, "
    ) and str(info.value).endswith("; got 'sm_1000'")
    with pytest.raises(OptionValueError, match="'opt_level' must be one of 0, 1, 2, 3"):
        backend.parse_options(opt_level=4)


def test_gpu_backend_without_a_target_option_names_the_field_to_add():
    backend = _NoTargetBackend()
    for call in (lambda: backend.resolve_target(backend.parse_options()), backend.hash):
        with pytest.raises(TypeError) as info:
            call()
        message = str(info.value)
        assert "backend 'no-target': a GpuBackend's options need a `target` field" in message
        assert (
            "BackendOptions has none: derive its options_class from tilec.backend.GpuOptions"
            in message
        )


def test_default_device_target_without_a_gpu_driver_says_what_to_override():
    with pytest.raises(NotImplementedError) as info:
        _NoTargetBackend().device_target()
    assert "its driver (_HostDriver) has no runtime()" in str(info.value)
    assert "override GpuBackend.device_target()" in str(info.value)


def test_automatic_choice_is_by_the_priority_plugins_declare():
    from tilec.runtime.compiler import automatic_order

    order = [b.name for b in automatic_order()]
    assert order.index("nvidia") < order.index("amd") < order.index("interp")
    priorities = [b.priority for b in automatic_order()]
    assert priorities == sorted(priorities, reverse=True)
