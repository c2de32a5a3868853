"""`tilec opt` on gir with AMD's matrix-core layouts, in a fresh interpreter: the layouts are the
AMD plugin's (`tilec_amd.matrix_layouts`), registered when the plugin loads, which `tilec opt`
does before it parses (without it, `#gpu.amd_mfma` was an unknown attribute)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

GIR = Path(__file__).resolve().parents[1] / "filecheck" / "amd" / "dot-mfma-wave64.gir"


def test_tilec_opt_parses_the_plugins_layouts_without_a_backend_flag(tmp_path):
    source = "\n".join(line for line in GIR.read_text().splitlines() if not line.startswith("//"))
    path = tmp_path / "dot.gir"
    path.write_text(source)
    done = subprocess.run(
        [sys.executable, "-m", "tilec", "opt", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "#gpu.amd_mfma<{version = 3" in done.stdout
    assert "#gpu.amd_dot_op<{opIdx = 0" in done.stdout
