"""LLVM IR -> PTX -> cubin without a GPU (ptxas where installed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
from nvidia_kernels import VECTOR_ADD_LLIR

from tilec_nvidia import codegen
from tilec_nvidia.arch import ARCHS
from tilec_nvidia.backend import NvidiaBackend
from tilec_nvidia.codegen import (
    CodegenError,
    PtxasInfo,
    find_ptxas,
    llir_to_ptx,
    parse_ptxas_info,
    ptx_features,
    ptx_to_cubin,
)

HERE = Path(__file__).parent
TARGETS = ARCHS.names


@pytest.fixture(autouse=True)
def fresh_ptxas_lookup(monkeypatch):
    """These test the search; the answer remembered between processes, test_ptxas_memo.py."""
    monkeypatch.setattr(codegen.ptxas_memo, "remembered", lambda: None)
    find_ptxas.cache_clear()
    yield
    find_ptxas.cache_clear()


def run_python(source: str) -> subprocess.CompletedProcess:
    """Run `source` in a fresh interpreter: an LLVM abort there cannot take pytest down."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(source)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=HERE,
    )


@pytest.fixture(scope="module")
def ptx_by_arch() -> dict[str, str]:
    """PTX of the vector-add kernel for every target, generated in one child process."""
    result = run_python(
        """
        import json
        from nvidia_kernels import VECTOR_ADD_LLIR
        from tilec_nvidia.arch import ARCHS
        from tilec_nvidia.codegen import llir_to_ptx
        print(json.dumps({arch: llir_to_ptx(VECTOR_ADD_LLIR, arch) for arch in ARCHS.names}))
        """
    )
    assert result.returncode == 0, f"PTX generation crashed ({result.returncode}):\n{result.stderr}"
    return json.loads(result.stdout)


def test_arch_table_is_the_backend_targets():
    backend = NvidiaBackend()
    assert backend.targets == TARGETS
    for arch in TARGETS:
        assert backend.parse_options(target=arch).target == arch
        assert (
            backend.layout_rules(arch).shared_memory_bytes == ARCHS.check(arch).shared_memory_bytes
        )


@pytest.mark.parametrize(
    ("arch", "feature"),
    [("sm_70", "+ptx60"), ("sm_80", "+ptx70"), ("sm_90", "+ptx78"), ("sm_90a", "+ptx80")],
)
def test_ptx_features(arch, feature):
    assert ptx_features(arch) == feature


@pytest.mark.parametrize("arch", ["sm_60", "sm_91", "compute_90", "SM_90", "", "sm_90 "])
def test_unsupported_arch_is_a_value_error_listing_targets(arch):
    with pytest.raises(ValueError, match="unsupported NVIDIA target") as info:
        ARCHS.check(arch)
    assert "sm_70" in str(info.value) and "sm_120" in str(info.value)


def test_bad_arch_never_reaches_llvm():
    """LLVM aborts the process on an unknown CPU; tilec must raise before it gets there."""
    result = run_python(
        """
        from nvidia_kernels import VECTOR_ADD_LLIR
        from tilec_nvidia.codegen import llir_to_ptx, ptx_to_cubin
        for arch in ("sm_60", "sm_95", "gfx90a"):
            for function in (llir_to_ptx, ptx_to_cubin):
                try:
                    function(VECTOR_ADD_LLIR, arch)
                except ValueError as error:
                    assert arch in str(error), error
                else:
                    raise SystemExit(f"{function.__name__} accepted {arch}")
        print("survived")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "survived"


@pytest.mark.parametrize("arch", TARGETS)
def test_vector_add_ptx_for_every_target(ptx_by_arch, arch):
    ptx = ptx_by_arch[arch]
    version = str(ARCHS.check(arch).ptx_version)
    assert f".version {version[0]}.{version[1:]}" in ptx
    assert f".target {arch}" in ptx
    assert ".entry vector_add(" in ptx
    assert "add.rn.f32" in ptx or "add.f32" in ptx


@pytest.mark.parametrize("arch", TARGETS)
def test_vector_add_assembles_for_every_target(ptx_by_arch, arch):
    if find_ptxas() is None:
        pytest.skip("ptxas not found (set TILEC_PTXAS or put CUDA's bin folder on PATH)")
    info: dict[str, PtxasInfo] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cubin = ptx_to_cubin(ptx_by_arch[arch], arch, info=info)
    if cubin is None:  # a ptxas too new for the arch (CUDA 13 dropped sm_70)
        assert any(arch in str(w.message) for w in caught), "a missing cubin must be explained"
        return
    assert cubin[:4] == b"\x7fELF"
    assert info["vector_add"].registers > 0
    assert info["vector_add"].spill_stores == 0


def test_llir_to_ptx_in_process_with_levels():
    fast = llir_to_ptx(VECTOR_ADD_LLIR, "sm_80")
    unoptimized = llir_to_ptx(VECTOR_ADD_LLIR, "sm_80", opt_level=0)
    assert ".entry vector_add(" in fast and ".entry vector_add(" in unoptimized
    with pytest.raises(ValueError, match="opt_level"):
        llir_to_ptx(VECTOR_ADD_LLIR, "sm_80", opt_level=4)


def test_invalid_llvm_ir_names_the_kernel():
    broken = VECTOR_ADD_LLIR.replace("%sum = fadd float %vx, %vy", "%sum = fadd float %vx, %nope")
    with pytest.raises(CodegenError, match="invalid LLVM IR for kernel vector_add"):
        llir_to_ptx(broken, "sm_90")


def test_ptxas_error_shows_its_message_and_the_kernel(ptx_by_arch):
    if find_ptxas() is None:
        pytest.skip("ptxas not found")
    broken = ptx_by_arch["sm_90"].replace("ret;", "not_an_instruction;", 1)
    with pytest.raises(CodegenError) as info:
        ptx_to_cubin(broken, "sm_90")
    message = str(info.value)
    assert "vector_add" in message and "sm_90" in message
    assert "not_an_instruction" in message  # ptxas's own diagnostic


def test_ptxas_from_environment(tmp_path, monkeypatch):
    fake = tmp_path / "ptxas"
    fake.write_text("#!/bin/sh\necho 'ptxas fatal   : fake failure' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("TILEC_PTXAS", str(fake))
    assert find_ptxas() == str(fake)
    with pytest.raises(CodegenError, match="fake failure") as info:
        ptx_to_cubin(".version 7.8\n.target sm_90\n.visible .entry k()\n{ ret; }\n", "sm_90")
    assert "exit status 3" in str(info.value) and "kernel k" in str(info.value)


def test_ptxas_env_must_be_executable(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEC_PTXAS", str(tmp_path / "missing"))
    with pytest.raises(CodegenError, match="TILEC_PTXAS"):
        find_ptxas()


def test_no_ptxas_means_no_cubin(monkeypatch):
    monkeypatch.delenv("TILEC_PTXAS", raising=False)
    monkeypatch.setattr(codegen, "_pathfinder_ptxas", lambda: None)
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(codegen.glob, "glob", lambda pattern: [])
    assert find_ptxas() is None
    assert ptx_to_cubin(".version 7.8\n", "sm_90") is None


def test_cuda_pathfinder_comes_before_path(tmp_path, monkeypatch):
    """cuda.pathfinder (with cuda-bindings) is asked first; where it is missing, finds nothing
    or raises, PATH and /usr/local/cuda* are searched."""
    import sys
    import types

    toolkit, on_path = tmp_path / "toolkit", tmp_path / "bin"
    for folder in (toolkit, on_path):
        folder.mkdir()
        (folder / "ptxas").write_text("#!/bin/sh\n")
        (folder / "ptxas").chmod(0o755)
    monkeypatch.delenv("TILEC_PTXAS", raising=False)
    monkeypatch.setenv("PATH", str(on_path))
    fake = types.ModuleType("cuda.pathfinder")
    monkeypatch.setitem(sys.modules, "cuda.pathfinder", fake)
    fake.find_nvidia_binary_utility = lambda name: str(toolkit / name)  # type: ignore[attr-defined]
    assert find_ptxas() == str(toolkit / "ptxas")
    find_ptxas.cache_clear()
    fake.find_nvidia_binary_utility = lambda name: None  # type: ignore[attr-defined]
    assert find_ptxas() == str(on_path / "ptxas")

    def broken(name):
        raise RuntimeError("incomplete toolkit")

    find_ptxas.cache_clear()
    fake.find_nvidia_binary_utility = broken  # type: ignore[attr-defined]
    assert find_ptxas() == str(on_path / "ptxas")
    find_ptxas.cache_clear()
    monkeypatch.setitem(sys.modules, "cuda.pathfinder", None)  # not installed: ImportError
    assert find_ptxas() == str(on_path / "ptxas")


def test_ptxas_lookup_is_cached(monkeypatch):
    first = find_ptxas()
    monkeypatch.setenv("PATH", "")
    monkeypatch.setenv("TILEC_PTXAS", "/nonexistent")
    assert find_ptxas() == first


def test_parse_ptxas_info():
    log = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'matmul' for 'sm_90'
ptxas info    : Function properties for matmul
    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 32768 bytes smem, 380 bytes cmem[0]
ptxas info    : Compiling entry function 'tiny' for 'sm_90'
ptxas info    : Function properties for tiny
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers, 360 bytes cmem[0]
"""
    info = parse_ptxas_info(log)
    assert info["matmul"] == PtxasInfo(
        registers=255, spill_stores=8, spill_loads=12, shared_bytes=32768, stack_bytes=16
    )
    assert info["tiny"] == PtxasInfo(registers=8)


def test_module_imports_no_vendor_library():
    result = run_python(
        """
        import sys
        import tilec_nvidia.backend, tilec_nvidia.codegen, tilec_nvidia.driver
        import tilec_nvidia.launcher, tilec_nvidia.target_info
        loaded = [name for name in sys.modules if name.startswith("cuda")]
        print(",".join(loaded))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


@pytest.mark.skipif(os.name != "posix", reason="uses a shell script as ptxas")
def test_ptxas_for_an_arch_it_dropped_keeps_the_ptx(tmp_path, monkeypatch):
    fake = tmp_path / "ptxas"
    fake.write_text(
        "#!/bin/sh\necho \"ptxas fatal   : Value 'sm_70' is not defined for option "
        "'gpu-name'\" >&2\nexit 255\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("TILEC_PTXAS", str(fake))
    codegen._warn_unsupported_arch.cache_clear()
    with pytest.warns(RuntimeWarning, match="cannot assemble for sm_70"):
        assert ptx_to_cubin(".version 6.0\n.target sm_70\n", "sm_70") is None
