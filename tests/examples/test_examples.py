"""The examples through `tilec run` and `tilec compile`, each as a subprocess."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tilec_nvidia.backend import PTXAS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
ADD_SIGNATURE = "x_ptr=*fp32,y_ptr=*fp32,output_ptr=*fp32,n_elements=i32"


@pytest.fixture
def tilec(tmp_path):
    """Run `python -m tilec ARGS` from the repository root with a private compile cache."""
    env = {k: v for k, v in os.environ.items() if k != "TILEC_BACKEND"}
    env["TILEC_CACHE_DIR"] = str(tmp_path / "cache")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "tilec", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    return run


@pytest.mark.parametrize(
    "name", ["vector_add", "softmax", "layernorm", "matmul", "histogram", "attention"]
)
def test_example_runs_on_interp(tilec, name):
    result = tilec("run", f"examples/{name}.py", "--backend", "interp")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[-1].startswith(f"{name}: max abs error ")
    assert lines[-1].endswith("(OK)")


def test_run_passes_script_arguments_and_backend(tilec, tmp_path):
    script = tmp_path / "show.py"
    script.write_text(
        "import os, sys\n"
        "from tilec.runtime import compiler\n"
        "print(__name__, sys.argv[1:], os.environ['TILEC_BACKEND'], compiler.get_backend().name)\n"
        "sys.exit(3)\n"
    )
    result = tilec("run", str(script), "--backend", "interp", "--", "a", "--b")
    assert result.returncode == 3, result.stderr
    assert result.stdout.strip() == "__main__ ['a', '--b'] interp interp"


@pytest.mark.parametrize(
    ("backend", "message"),
    [("nvidia", "backend 'nvidia' is not available: "), ("cuda", "unknown backend 'cuda'")],
)
def test_run_unavailable_backend_is_one_line(tilec, backend, message):
    from tilec.plugin.manager import load_backends

    backends = load_backends()
    if backend in backends and backends[backend].is_available():
        pytest.skip(f"{backend} is available here")
    result = tilec("run", "examples/vector_add.py", "--backend", backend)
    assert result.returncode == 1
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith(f"tilec run: error: {message}")


def test_run_missing_file(tilec):
    result = tilec("run", "examples/no_such_example.py")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "no_such_example.py" in result.stderr


def test_compile_emits_tir(tilec):
    result = tilec(
        "compile",
        "examples/vector_add.py:add_kernel",
        "--signature",
        ADD_SIGNATURE,
        "--constexpr",
        "BLOCK_SIZE=1024",
        "--backend",
        "interp",
        "--emit",
        "tir",
    )
    assert result.returncode == 0, result.stderr
    assert "func.func @add_kernel" in result.stdout
    assert "tile.load" in result.stdout
    assert "tile.store" in result.stdout


def test_compile_print_after_all_and_timing(tilec):
    result = tilec(
        "compile",
        "examples/vector_add.py:add_kernel",
        "--signature",
        ADD_SIGNATURE,
        "--constexpr",
        "BLOCK_SIZE=1024",
        "--print-after-all",
        "--timing",
    )
    assert result.returncode == 0, result.stderr
    assert "tile.load" in result.stdout
    assert "IR Dump After canonicalize" in result.stderr
    assert "Pass execution timing report" in result.stderr


@pytest.mark.parametrize(
    ("target", "signature", "message"),
    [
        ("add_kernel", "x_ptr", "--signature: expected NAME=VALUE pairs"),
        ("add_kernel", "x_ptr=*fp33", "--signature: unknown type '*fp33' for 'x_ptr'"),
        ("add_kernel", "bogus=i32", "add_kernel has no parameter 'bogus'"),
        ("add_kernel", "x_ptr=*fp32,x_ptr=i32", "'x_ptr' is given twice"),
        (
            "add_kernel",
            "x_ptr=*fp32,y_ptr=*fp32,output_ptr=*fp32",
            "parameter 'n_elements' of add_kernel has neither",
        ),
        ("nope", ADD_SIGNATURE, "has no 'nope' (kernels: add_kernel)"),
    ],
)
def test_compile_bad_input_is_a_clear_error(tilec, target, signature, message):
    result = tilec(
        "compile",
        f"examples/vector_add.py:{target}",
        "--signature",
        signature,
        "--constexpr",
        "BLOCK_SIZE=1024",
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("tilec compile: error: ")
    assert message in result.stderr


def test_compile_for_nvidia_emits_ptx_and_writes_the_cubin(tilec, tmp_path):
    common = ("compile", "examples/vector_add.py:add_kernel", "--signature", ADD_SIGNATURE,
              "--constexpr", "BLOCK_SIZE=1024", "--backend", "nvidia", "--target", "sm_90",
              "--divisibility", "x_ptr,y_ptr,output_ptr,n_elements")  # fmt: skip
    result = tilec(*common, "--emit", "ptx")
    assert result.returncode == 0, result.stderr
    assert ".target sm_90" in result.stdout and "ld.global.v4" in result.stdout
    binary = tilec(*common, "--emit", "cubin")
    assert binary.returncode == 1 and "-o FILE" in binary.stderr
    if shutil.which("ptxas") or PTXAS.get():
        written = tilec(*common, "--emit", "cubin", "-o", str(tmp_path / "k.cubin"))
        assert written.returncode == 0, written.stderr
        assert (tmp_path / "k.cubin").read_bytes()[:4] == b"\x7fELF"


def test_compile_without_target_or_device_says_what_to_pass(tilec):
    line = next(x for x in tilec("backends").stdout.splitlines() if x.startswith("nvidia"))
    if line.split()[1] == "available":
        pytest.skip("an NVIDIA device is present: the target comes from it")
    result = tilec("compile", "examples/vector_add.py:add_kernel", "--signature", ADD_SIGNATURE,
                   "--constexpr", "BLOCK_SIZE=1024", "--backend", "nvidia", "--emit", "ptx")  # fmt: skip
    assert result.returncode == 1
    assert "pass --target sm_90" in result.stderr and "Traceback" not in result.stderr


def test_run_says_which_backend_ran_and_why(tilec):
    named = tilec("run", "examples/vector_add.py", "--backend", "interp")
    assert named.returncode == 0, named.stderr
    assert "tilec run: backend 'interp' (named by --backend)" in named.stderr
    automatic = tilec("run", "examples/vector_add.py")
    assert automatic.returncode == 0, automatic.stderr
    assert re.search(r"tilec run: backend '\w+' \(the first available", automatic.stderr)
