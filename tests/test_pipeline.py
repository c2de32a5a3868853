"""The compile pipeline (`tilec.pipeline`): one owner, asking the plugin host once per backend and
options, and stage functions that get what they need without smuggling it through `metadata`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tilec
from tilec import pipeline
from tilec.frontend import compile_to_tir
from tilec.passes.instrumentation import PrintIRAfter
from tilec.pipeline import pass_pipeline
from tilec.plugin import manager as plugin_host
from tilec_interp.backend import InterpBackend
from tilec_nvidia.backend import NvidiaBackend

sys.path.insert(0, str(Path(__file__).parent / "frontend"))
from frontend_kernels import add_kernel

SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}


def tir():
    return compile_to_tir(add_kernel, SIGNATURE, {"BLOCK_SIZE": 1024})


@pytest.fixture
def host_calls(monkeypatch):
    """Count the calls to the plugin host's pass and backend lookups."""
    calls: list[str] = []
    for name in ("load_pass_classes", "load_backends"):
        original = getattr(plugin_host, name)

        def counted(original=original, name=name):
            calls.append(name)
            return original()

        monkeypatch.setattr(plugin_host, name, counted)
    plugin_host.reset_plugin_manager()  # a new generation: the pipelines are built again
    yield calls
    plugin_host.reset_plugin_manager()


def test_the_plugin_host_is_asked_once_per_backend_and_options(host_calls):
    backend = InterpBackend()
    options = backend.parse_options()
    for _ in range(3):
        pipeline.compile_module(tir(), backend, options, name="add_kernel")
    assert host_calls == ["load_pass_classes", "load_backends"]
    assert pass_pipeline(backend, options) is pass_pipeline(backend, options)
    pass_pipeline(backend, backend.parse_options(num_warps=8))
    assert host_calls == ["load_pass_classes", "load_backends"] * 2


def test_a_changed_plugin_set_builds_the_pipeline_again(host_calls):
    backend = InterpBackend()
    options = backend.parse_options()
    first = pass_pipeline(backend, options)
    plugin_host.register_plugin(object(), "nothing")
    assert pass_pipeline(backend, options) is not first


def test_interp_runs_the_tir_stage_only():
    backend = InterpBackend()
    compiled = pipeline.compile_module(tir(), backend, backend.parse_options(), name="add_kernel")
    assert list(compiled.asm) == ["tir"]
    assert compiled.metadata == {"name": "add_kernel", "target": None}
    assert "add_kernel" in compiled.located


def test_gpu_stages_come_from_the_core_and_codegen_from_the_backend():
    backend = NvidiaBackend()
    options = backend.parse_options(target="sm_90")
    assert pipeline.core_stage_names(backend) == ("tir", "gir", "llir")
    assert pipeline.backend_stages(backend, options) == ("tir", "gir", "llir")
    printed = _Collect()
    compiled = pipeline.compile_module(
        tir(), backend, options, name="add_kernel", target="sm_90", instrumentations=[printed]
    )
    assert list(compiled.asm)[:4] == ["tir", "gir", "llir", "ptx"]
    assert "#blocked" in compiled.asm["gir"]
    json.dumps(compiled.metadata)  # only JSON values: it goes into the compile cache
    assert compiled.metadata["target"] == "sm_90"
    assert compiled.metadata["threads_per_warp"] == 32
    assert "assign-layouts" in printed.names and "canonicalize" in printed.names


def test_tilec_compile_goes_through_the_pipeline(monkeypatch):
    seen = []
    original = pipeline.stages.compile_module

    def spy(*args, **kwargs):
        seen.append(kwargs["name"])
        return original(*args, **kwargs)

    monkeypatch.setattr(pipeline, "compile_module", spy)
    compiled = tilec.compile(
        add_kernel, SIGNATURE, {"BLOCK_SIZE": 1024}, backend="interp", instrumentations=[_Collect()]
    )
    assert seen == ["add_kernel"]
    assert "_context" not in compiled.metadata


class _Collect(PrintIRAfter):
    """Records the passes that ran."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def after_pass(self, pass_, module, changed, seconds) -> None:
        self.names.append(type(pass_).name)


NETWORKX_PROBE = """
import sys
from pathlib import Path
sys.path.insert(0, {frontend!r})
import tilec
from frontend_kernels import add_kernel
from tilec.passes.instrumentation import PassTiming
tilec.compile(add_kernel, {signature!r}, {{"BLOCK_SIZE": 1024}}, backend="interp",
              instrumentations=[PassTiming()])
print("networkx" in sys.modules)
"""


def test_networkx_is_not_imported_to_resolve_an_order(tmp_path):
    """A compile resolves a new pipeline order (the first run) or reads it back (the second)
    without networkx (`PassManager._relations`; issue 24: it costs a cold compile a hundred
    milliseconds and more to import)."""
    probe = NETWORKX_PROBE.format(
        frontend=str(Path(__file__).parent / "frontend"), signature=SIGNATURE
    )
    env = {**os.environ, "TILEC_CACHE_DIR": str(tmp_path)}
    runs = [
        subprocess.run(
            [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
        ).stdout.split()
        for _ in range(2)
    ]
    assert runs == [["False"], ["False"]]
    assert list((tmp_path / "pipelines").glob("*.json"))  # the first run resolved an order


def test_a_cache_hit_loads_no_pass_pipeline(tmp_path):
    """A launch served from the disk cache in a new process imports neither the pipeline nor the
    layout passes, the lowering or networkx: they cost start-up time on every such launch."""
    script = (
        "import sys, numpy as np, tilec, tilec.language as tl\n"
        "@tilec.jit\n"
        "def add(x, y, o, n, B: tl.constexpr):\n"
        "    off = tl.program_id(0) * B + tl.arange(0, B)\n"
        "    tl.store(o + off, tl.load(x + off) + tl.load(y + off))\n"
        "a = np.ones(64, np.float32)\n"
        "add[(1,)](a, a, a.copy(), 64, B=64, backend='interp')\n"
        "heavy = ['tilec.pipeline', 'tilec.layout.assign_layouts', 'tilec.lowering', 'networkx']\n"
        "print(' '.join(m for m in heavy if m in sys.modules))\n"
    )
    env = {**os.environ, "TILEC_CACHE_DIR": str(tmp_path / "cache")}
    kernel_file = tmp_path / "launch.py"
    kernel_file.write_text(script)
    command = [sys.executable, str(kernel_file)]
    first = subprocess.run(command, env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert "tilec.pipeline" in first.stdout  # a miss compiles through the pipeline
    hit = subprocess.run(command, env=env, capture_output=True, text=True)
    assert hit.returncode == 0, hit.stderr
    assert hit.stdout.strip() == ""
