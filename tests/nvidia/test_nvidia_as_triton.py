"""`tilec.as_triton` on an NVIDIA GPU: a Triton program with plain `import triton` runs on the
nvidia backend with CUDA tensors, `triton.runtime.driver.active` answers for the GPU, and
torch.compile of a CUDA graph meets Inductor's own "no Triton" error (the alias steps aside).
Each check runs in a subprocess, so that the alias stays out of the other tests."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="needs PyTorch")
pytestmark = pytest.mark.gpu

PROGRAMS = Path(__file__).parents[1] / "compat" / "triton_programs"


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TILEC_CACHE_DIR": str(tmp_path / "cache"), "TILEC_BACKEND": "nvidia"}
    env.pop("TRITON_INTERPRET", None)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=600)  # fmt: skip


def test_a_triton_program_runs_on_the_gpu(tmp_path):
    result = run(tmp_path, "-m", "tilec.as_triton", str(PROGRAMS / "vector_ops.py"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split("\n")[:4] == [
        "interpret False device cuda:0", "add ok", "scale ok", "reinterpret ok",
    ]  # fmt: skip


def test_the_active_driver_answers_for_the_gpu(tmp_path):
    script = tmp_path / "driver.py"
    script.write_text(
        textwrap.dedent("""
        import tilec.as_triton
        import torch, triton
        active = triton.runtime.driver.active
        target = active.get_current_target()
        major, minor = torch.cuda.get_device_capability()
        assert (target.backend, target.arch, target.warp_size) == ("cuda", major * 10 + minor, 32)
        assert active.get_device_interface() is torch.cuda
        assert active.get_active_torch_device() == torch.device("cuda", 0)
        assert active.get_current_stream() == torch.cuda.current_stream().cuda_stream
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            assert active.get_current_stream() == side.cuda_stream
        properties = active.utils.get_device_properties(0)
        assert properties["multiprocessor_count"] == torch.cuda.get_device_properties(0).multi_processor_count
        print("ok")
    """)
    )
    result = run(tmp_path, str(script))
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stdout + result.stderr


def test_torch_compile_of_a_cuda_graph_meets_inductors_no_triton_error(tmp_path):
    script = tmp_path / "compile.py"
    script.write_text(
        textwrap.dedent("""
        import tilec.as_triton
        import torch, triton
        compiled = torch.compile(lambda x: torch.sin(x) + 1, fullgraph=True)
        try:
            compiled(torch.randn(16, device="cuda"))
        except Exception as error:
            print("refused:", "triton" in str(error).lower())
        cpu = torch.compile(lambda x: torch.sin(x) + 1, fullgraph=True)
        x = torch.randn(16)
        print("cpu:", torch.allclose(cpu(x), torch.sin(x) + 1))
    """)
    )
    result = run(tmp_path, str(script))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split("\n")[:2] == ["refused: True", "cpu: True"]
