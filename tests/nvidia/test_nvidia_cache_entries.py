"""A cache entry signed with the user's key that lacks what the nvidia driver loads and launches
from (its PTX, a metadata key) is a miss, compiled again with a `CacheWarning`, not a KeyError
at the launch (issue 22). A fake cuda.bindings, no GPU."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from test_nvidia_runner import FakeDeviceArray, scale_kernel

from tilec.cache_files import CacheWarning
from tilec.runtime import cache, compiler


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = compiler.compile_to_tir
    monkeypatch.setattr(
        compiler, "compile_to_tir", lambda *a, **k: calls.append(a[0].__name__) or real(*a, **k)
    )
    return calls


def launch() -> None:
    x, out = FakeDeviceArray(0x10000, 128), FakeDeviceArray(0x20000, 128)
    scale_kernel[(1,)](x, out, 128, 2.0, BLOCK=128, backend="nvidia")


def rewrite_the_entry(change: Callable[[dict[str, Any]], None]) -> str:
    """Change the one entry's body and store it again, signed with the user's key."""
    (path,) = cache.entries()
    key = path.name.removesuffix(cache.SUFFIX)
    data = json.loads(cache.read(key))
    change(data)
    cache.write(key, json.dumps(data, sort_keys=True))
    cache.clear_memory()
    return key


def without_binaries(data: dict[str, Any]) -> None:
    data["asm"].pop("ptx")
    data["asm"].pop("cubin", None)


def without_params(data: dict[str, Any]) -> None:
    del data["metadata"]["params"]


@pytest.mark.parametrize(
    ("change", "lacking"),
    [(without_binaries, "ptx"), (without_params, "metadata params")],
    ids=["ptx", "params"],
)
def test_an_entry_without_what_the_launch_reads_is_compiled_again(
    fake_gpu, compiles, change, lacking
):
    launch()
    key = rewrite_the_entry(change)
    with pytest.warns(
        CacheWarning, match=f"lacks what backend 'nvidia' launches from \\({lacking}\\)"
    ):
        launch()
    assert compiles == ["scale_kernel"] * 2
    assert len(fake_gpu.launches) == 2
    data = json.loads(cache.read(key))  # rewritten whole
    assert "ptx" in data["asm"] and "params" in data["metadata"]


def test_an_entry_without_a_cubin_launches_from_its_ptx(fake_gpu, compiles):
    """A cubin is left out where ptxas cannot make one: the driver JIT-compiles the PTX."""
    launch()
    rewrite_the_entry(lambda data: data["asm"].pop("cubin", None))
    launch()
    assert compiles == ["scale_kernel"]
    assert len(fake_gpu.launches) == 2
