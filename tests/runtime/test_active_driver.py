"""`tilec.runtime.driver.active` (Triton's `triton.runtime.driver.active`) asks the selected
backend's driver for its torch device (`Driver.torch_device`) instead of naming a vendor."""

from __future__ import annotations

import types

import pytest

import tilec
from tilec.driver import Driver
from tilec.interop.gpu_driver import GpuDriver
from tilec.runtime import compiler, driver

torch = pytest.importorskip("torch")


def _selected(monkeypatch, torch_device: str) -> None:
    fake = types.SimpleNamespace(
        name="fake", driver=types.SimpleNamespace(torch_device=torch_device)
    )
    monkeypatch.setattr(compiler, "get_backend", lambda name=None, **_: fake)


def test_a_host_backend_answers_the_cpu_device():
    tilec.set_backend("interp")
    assert driver.active.get_active_torch_device() == torch.device("cpu")
    assert driver.active.get_device_interface() is torch.cpu


def test_the_device_is_the_one_the_backend_s_driver_declares(monkeypatch):
    _selected(monkeypatch, "cuda")
    tilec.set_device(1)
    try:
        assert driver.active.get_active_torch_device() == torch.device("cuda", 1)
    finally:
        tilec.set_device(None)
    assert driver.active.get_device_interface() is torch.cuda
    _selected(monkeypatch, "meta")
    assert driver.active.get_active_torch_device() == torch.device("meta", 0)


def test_drivers_declare_torch_s_device_type():
    assert Driver.torch_device == "cpu"
    assert GpuDriver.torch_device == "cuda"  # PyTorch's name, which its ROCm builds keep


def test_a_host_backend_s_properties_error_names_an_installed_gpu_backend():
    tilec.set_backend("interp")
    gpus = [b.name for b in compiler.automatic_order() if isinstance(b, tilec.backend.GpuBackend)]
    with pytest.raises(tilec.BackendUnavailableError) as error:
        driver.active.utils.get_device_properties()
    expected = f"tilec.set_backend({gpus[0]!r})" if gpus else "none is installed"
    assert f"select a GPU backend ({expected}) to ask for them" in str(error.value)
