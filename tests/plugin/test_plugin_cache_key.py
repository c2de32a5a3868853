"""Installing, upgrading or removing a plugin of the `tilec` entry-point group invalidates compile
cache entries (issue 14): a pass plugin changes what a compile makes."""

from __future__ import annotations

import importlib
import sys

import pytest

import tilec
import tilec.language as tl
from tilec.plugin import manager
from tilec.runtime import cache

PASS_PLUGIN = """
from tilec.passes.base import ModulePass
from tilec.plugin import hookimpl

class Noop(ModulePass):
    name = "noop-{version}"

    def run(self, module, context):
        return False

@hookimpl
def tilec_passes():
    return [Noop]
"""


@tilec.jit
def copy_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets))


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    cache.clear_memory()
    yield
    cache.clear_memory()


def compile_key() -> str:
    manager.reset_plugin_manager()
    cache.clear_memory()
    compiled = tilec.compile(
        copy_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"BLOCK": 16}, backend="interp"
    )
    return compiled.key


def uninstall(root) -> None:
    sys.path.remove(str(root))
    importlib.invalidate_caches()


def test_install_upgrade_and_removal_of_a_plugin_change_the_key(make_distribution):
    without = compile_key()
    assert compile_key() == without

    def install(version: str):
        module = f"noop_plugin_{version.replace('.', '_')}"
        source = PASS_PLUGIN.format(version=version.replace(".", "-"))
        return make_distribution("tilec-noop", {"noop": module}, {module: source}, version=version)

    first = install("0.1")
    installed = compile_key()
    assert installed != without
    uninstall(first)
    install("0.2")
    upgraded = compile_key()
    assert upgraded not in (without, installed)


def test_removing_a_plugin_gives_back_the_key_of_before(make_distribution):
    without = compile_key()
    root = make_distribution(
        "tilec-noop", {"noop": "noop_plugin"}, {"noop_plugin": PASS_PLUGIN.format(version="x")}
    )
    assert compile_key() != without
    uninstall(root)
    assert compile_key() == without
