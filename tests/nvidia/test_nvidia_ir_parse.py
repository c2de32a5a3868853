"""NVIDIA's tensor-core layouts and wgmma ops are the plugin's (`tilec_nvidia.tensor_core_layouts`,
`tilec_nvidia.wgmma_ops`), registered when the plugin loads: `tilec opt` and `parse_module` read
them as before where the plugin is installed, and where it is not loaded the error says why."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

GIR = """\
#shared = #gpu.nvmma_shared<{swizzle = 128, transposed = false}>
#mma = #gpu.mma<{version = 3, warpsPerCTA = [4, 1], instrShape = [16, 128, 16]}>
#mma1 = #gpu.mma<{version = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>
#dot_op = #gpu.dot_op<{opIdx = 0, parent = #mma1, kWidth = 2}>
func.func @f(%a: tensor<64x64xf16, #shared>, %b: tensor<64x128xf16, #shared>, \
%c: tensor<64x128xf32, #mma>, %x: tensor<32x32xf16, #dot_op>) {
  gpu.fence_async_shared
  %d = gpu.warp_group_dot %a, %b, %c {pendings = 1 : i32} : tensor<64x128xf32, #mma>
  %d1 = gpu.warp_group_dot_wait %d {pendings = 0 : i32} : tensor<64x128xf32, #mma>
  tile.return
}
"""


def _opt(tmp_path: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    path = tmp_path / "wgmma.gir"
    path.write_text(GIR)
    return subprocess.run(
        [sys.executable, "-m", "tilec", "opt", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def test_tilec_opt_prints_the_plugins_layouts_and_ops_back_unchanged(tmp_path):
    done = _opt(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == GIR


def test_parse_module_loads_the_plugin_that_defines_a_layout(tmp_path):
    """Without `tilec opt` loading the plugins first: the parser asks the plugin host (through
    `tilec.dialects`, which a program that parses IR imports for the core's ops)."""
    (tmp_path / "wgmma.gir").write_text(GIR)
    script = (
        "import sys\n"
        "import tilec.dialects\n"
        "from tilec.ir import parse_module, print_module\n"
        "assert 'tilec_nvidia' not in sys.modules\n"
        "text = open('wgmma.gir').read()\n"
        "assert print_module(parse_module(text)) == text\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert done.returncode == 0, done.stderr


def test_without_plugins_loaded_the_error_says_why(tmp_path):
    done = _opt(tmp_path, {"TILEC_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert done.returncode == 1
    assert "unknown attribute '#gpu.nvmma_shared'" in done.stderr
    assert "TILEC_DISABLE_PLUGIN_AUTOLOAD is set, so no backend plugin is loaded" in done.stderr


def test_a_plugin_that_failed_to_load_is_named(tmp_path):
    broken = tmp_path / "shadow" / "tilec_nvidia"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('this copy of the plugin is broken')\n")
    path = os.pathsep.join(filter(None, [str(broken.parent), os.environ.get("PYTHONPATH")]))
    done = _opt(tmp_path, {"PYTHONPATH": path})
    assert done.returncode == 1
    assert "unknown attribute '#gpu.nvmma_shared'" in done.stderr
    assert "these plugins failed to load: 'nvidia (" in done.stderr, done.stderr
    assert "this copy of the plugin is broken" in done.stderr
