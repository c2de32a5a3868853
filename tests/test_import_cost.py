"""`import tilec` loads what a launch needs, not the compiler (issue 24): the frontend's code
generator, the dialects, the passes, llvmlite, networkx, NumPy and the plugin discovery
(pluggy, entry points) load on the first compile or launch. Each check runs in a fresh
interpreter, since this one has loaded everything already."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap

import pytest

import tilec.frontend
import tilec.ir

COMPILER = (
    "llvmlite",
    "networkx",
    "numpy",
    "pluggy",
    "importlib.metadata",
    "tilec.frontend.generator",
    "tilec.dialects",
    "tilec.ir.parser",
    "tilec.plugin.manager",
    "tilec.builtin_passes",
    "tilec.passes.manager",
    "tilec.pipeline",
    "tilec.lowering",
    "tilec.layout.rules",
)
"""Modules that only a compile (or the first launch) may load."""

KERNEL = """
import tilec
import tilec.language as tl


@tilec.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)
"""


def loaded_after(tmp_path, source: str, modules=COMPILER, **env: str) -> list[str]:
    """The `modules` loaded in a fresh interpreter after running `source`."""
    script = tmp_path / "program.py"
    script.write_text(
        textwrap.dedent(source)
        + "\nimport json, sys\n"
        + f"print(json.dumps([m for m in {list(modules)!r} if m in sys.modules]))\n"
    )
    env = {**os.environ, "TILEC_CACHE_DIR": str(tmp_path / "cache"), **env}
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


@pytest.mark.parametrize(
    "source",
    ["import tilec", "import tilec.language as tl", "import tilec.language.math", KERNEL],
    ids=["import tilec", "import tilec.language", "tl.math", "@tilec.jit"],
)
def test_import_and_decoration_load_no_compiler(tmp_path, source):
    assert loaded_after(tmp_path, source) == []


def test_the_check_sees_a_compile(tmp_path):
    """The same check after a compile names the compiler's modules (so it can fail)."""
    source = KERNEL + (
        "tilec.compile(add_kernel, {'x_ptr': '*fp32', 'y_ptr': '*fp32', 'out_ptr': '*fp32', "
        "'n': 'i32'}, {'BLOCK': 64}, backend='interp')\n"
    )
    loaded = loaded_after(tmp_path, source)
    assert {"tilec.frontend.generator", "tilec.dialects", "tilec.plugin.manager"} <= set(loaded)


LAUNCH = (
    KERNEL
    + """
import numpy as np

x = np.arange(100, dtype=np.float32)
out = np.empty_like(x)
add_kernel[(2,)](x, x, out, 100, BLOCK=64)
assert (out == x + 1).all()
"""
)

NOT_FOR_A_CACHE_HIT = (
    "tilec.frontend.generator",
    "tilec.pipeline",
    "tilec.passes.manager",
    "tilec.lowering",
    "llvmlite",
    "networkx",
    "numpy.ma",
    "tilec.runtime.native_launch",
)


def test_a_launch_from_the_disk_cache_in_a_new_process_compiles_nothing(tmp_path):
    """The first launch of a new process whose disk cache has the kernel loads no code
    generator, pass or LLVM module: the interp runs the cached tir. (Another process that edits
    tilec's files in between changes the cache key: tried again then.)"""
    compiled = loaded_after(tmp_path, LAUNCH, TILEC_BACKEND="interp")
    assert "tilec.frontend.generator" in compiled  # the first process compiles
    for _ in range(3):
        loaded = loaded_after(tmp_path, LAUNCH, NOT_FOR_A_CACHE_HIT, TILEC_BACKEND="interp")
        if "tilec.frontend.generator" not in loaded:
            break
    assert loaded == []


def test_a_compile_for_a_gpu_loads_no_numpy_or_networkx(tmp_path):
    """A cold compile for sm_90a (no device needed) folds constants without NumPy and orders
    the passes without networkx: each costs a cold compile a hundred milliseconds and more."""
    source = KERNEL + (
        "tilec.compile(add_kernel, {'x_ptr': '*fp32', 'y_ptr': '*fp32', 'out_ptr': '*fp32', "
        "'n': 'i32'}, {'BLOCK': 64}, backend='nvidia', target='sm_90a')\n"
    )
    loaded = loaded_after(tmp_path, source, ("numpy", "networkx", "tilec.frontend.generator"))
    assert loaded == ["tilec.frontend.generator"]


def test_every_public_name_of_tilec_ir_loads_from_its_module():
    for name in tilec.ir.__all__:
        value = getattr(tilec.ir, name)
        home = importlib.import_module(f"tilec.ir.{tilec.ir._HOME[name]}")
        assert value is getattr(home, name), name
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = tilec.ir.nothing


def test_the_frontends_compile_to_tir_is_the_generators():
    from tilec.frontend import compile_to_tir
    from tilec.frontend.generator import compile_to_tir as generated

    assert compile_to_tir is generated
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = tilec.frontend.nothing
