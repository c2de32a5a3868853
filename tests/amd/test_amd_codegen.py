"""AMD code generation without a GPU: targets, layout rules, options, ld.lld discovery."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

import pytest

import tilec
from tilec_amd import codegen
from tilec_amd.arch import ARCHS
from tilec_amd.backend import AmdBackend
from tilec_amd.codegen import CodegenError, find_lld, link_hsaco

VECTOR_ADD = {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}


@pytest.fixture(autouse=True)
def fresh_lld_lookup():
    find_lld.cache_clear()
    yield
    find_lld.cache_clear()


def add_kernel():
    sys.path.insert(0, "tests/frontend")
    from frontend_kernels import add_kernel

    return add_kernel


def test_arch_table_is_the_backend_targets():
    assert (
        AmdBackend().targets == ARCHS.names == ("gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201")
    )


@pytest.mark.parametrize(
    "arch, lanes, lds", [("gfx90a", 64, 65536), ("gfx942", 64, 65536), ("gfx950", 64, 163840),
                         ("gfx1100", 32, 65536), ("gfx1201", 32, 65536)],
)  # fmt: skip
def test_layout_rules_per_arch(arch, lanes, lds):
    rules = AmdBackend().layout_rules(arch)
    assert (rules.threads_per_warp, rules.max_vector_bytes) == (lanes, 16)
    assert (rules.shared_memory_bytes, rules.default_num_warps) == (lds, 4)
    assert codegen.features(arch) == f"+wavefrontsize{lanes}"


@pytest.mark.parametrize("arch", ["gfx908", "gfx1030", "sm_90", "GFX942", "", "gfx942 "])
def test_unsupported_arch_is_a_value_error_listing_targets(arch):
    with pytest.raises(ValueError, match="gfx90a, gfx942, gfx950, gfx1100, gfx1201"):
        ARCHS.check(arch)
    with pytest.raises(ValueError, match="target"):
        AmdBackend().parse_options(target=arch)


def test_bad_arch_never_reaches_llvm():
    """LLVM aborts the process on an unknown CPU: the check must come first (a child process,
    so that an abort cannot take pytest down)."""
    code = textwrap.dedent(
        """
        from tilec_amd.codegen import compile_llir
        try:
            compile_llir("", "gfx9999")
        except ValueError as error:
            print("refused:", error)
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "refused: unsupported AMD target 'gfx9999'" in result.stdout


def test_invalid_llvm_ir_names_the_kernel():
    bad = "define amdgpu_kernel void @broken() {\n  ret i32 0\n}\n"
    with pytest.raises(CodegenError, match="broken"):
        codegen.llir_to_amdgcn(bad, "gfx942")


def test_options_reach_the_kernel(private_cache):
    compiled = tilec.compile(
        add_kernel(), VECTOR_ADD, {"BLOCK_SIZE": 256}, backend="amd", target="gfx942",
        num_warps=2, waves_per_eu=3, code_object_version=4,
    )  # fmt: skip
    llir = compiled.asm["llir"]
    assert '"amdgpu-flat-work-group-size"="1,128"' in llir
    assert '"amdgpu-waves-per-eu"="3"' in llir
    assert '!"amdhsa_code_object_version", i32 400' in llir
    assert ".amdhsa_code_object_version 4" in compiled.asm["amdgcn"]
    assert compiled.metadata["num_warps"] * compiled.metadata["threads_per_warp"] == 128


def test_default_code_object_version_is_5(private_cache):
    compiled = tilec.compile(
        add_kernel(), VECTOR_ADD, {"BLOCK_SIZE": 256}, backend="amd", target="gfx1100"
    )
    assert ".amdhsa_code_object_version 5" in compiled.asm["amdgcn"]
    assert "amdgpu-waves-per-eu" not in compiled.asm["llir"]


def test_option_values_are_checked():
    with pytest.raises(ValueError, match="code_object_version"):
        AmdBackend().parse_options(code_object_version=3)
    with pytest.raises(ValueError, match="waves_per_eu"):
        AmdBackend().parse_options(waves_per_eu=21)


def test_compiling_without_target_or_device_says_what_to_pass(private_cache, monkeypatch):
    monkeypatch.setattr(AmdBackend, "is_available", lambda self: tilec.backend.Availability(
        False, "no ROCm runtime (libamdhip64.so not found)"))  # fmt: skip
    with pytest.raises(RuntimeError, match=r"target='gfx942'.*libamdhip64"):
        tilec.compile(add_kernel(), VECTOR_ADD, {"BLOCK_SIZE": 256}, backend="amd")


def test_device_print_warns_that_amd_drops_it(private_cache):
    sys.path.insert(0, "tests/language")
    from language_kernels import print_kernel

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = tilec.compile(
            print_kernel, {"x_ptr": "*fp32"}, {"N": 64}, backend="amd", target="gfx942"
        )
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) == 1 and "does not print from the device" in messages[0]
    assert "printf" not in compiled.asm["llir"]


def test_num_programs_reads_the_dispatch_packet(private_cache):
    sys.path.insert(0, "tests/language")
    from language_kernels import grid_kernel

    compiled = tilec.compile(
        grid_kernel, {"out_ptr": "*i32", "n": "i32"}, {"BLOCK": 64}, backend="amd",
        target="gfx942",
    )  # fmt: skip
    assert 'call ptr addrspace(4) @"llvm.amdgcn.dispatch.ptr"()' in compiled.asm["llir"]
    assert ".amdhsa_user_sgpr_dispatch_ptr 1" in compiled.asm["amdgcn"]
    assert 'call i32 @"llvm.amdgcn.workgroup.id.y"()' in compiled.asm["llir"]


# ld.lld ----------------------------------------------------------------------------------------


def _fake_lld(tmp_path, version: str):
    script = tmp_path / "ld.lld"
    script.write_text(f"#!/bin/sh\necho 'Debian LLD {version} (compatible with GNU linkers)'\n")
    script.chmod(0o755)
    return str(script)


def test_lld_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEC_LLD", _fake_lld(tmp_path, "19.1.0"))
    assert find_lld() == str(tmp_path / "ld.lld")


def test_lld_too_old_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEC_LLD", _fake_lld(tmp_path, "16.0.6"))
    with pytest.raises(CodegenError, match=r"version 16\).*apt-get install lld-22"):
        find_lld()


def test_lld_env_must_be_executable(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEC_LLD", str(tmp_path / "missing"))
    with pytest.raises(CodegenError, match=r"TILEC_LLD=.*not an executable"):
        find_lld()


def test_missing_lld_says_what_to_install(monkeypatch):
    monkeypatch.delenv("TILEC_LLD", raising=False)
    monkeypatch.setattr(codegen, "lld_candidates", lambda: [])
    with pytest.raises(CodegenError, match=r"needs ld.lld.*apt-get install lld-22"):
        link_hsaco(b"\x7fELF", "k")


def test_lld_search_order(monkeypatch, tmp_path):
    monkeypatch.delenv("TILEC_LLD", raising=False)
    for name in ("ld.lld-18", "ld.lld-21"):
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    found = [p.rsplit("/", 1)[1] for p in codegen.lld_candidates() if p.startswith(str(tmp_path))]
    assert found == ["ld.lld-21", "ld.lld-18"]


def test_module_imports_no_vendor_library():
    code = (
        "import sys, tilec_amd.backend, tilec_amd.codegen, tilec_amd.target_info, "
        "tilec_amd.driver, tilec_amd.launcher\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('hip', 'rocm')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "[]", result.stderr


@pytest.mark.parametrize("arch", ["gfx90a", "gfx950", "gfx1201"])
def test_the_other_targets_compile_to_hsaco(private_cache, arch):
    """gfx942 and gfx1100 build every kernel (test_amd_hsaco.py); the other targets build the
    kernel that uses the most features (math, reductions, atomics, f16, print, num_programs)."""
    sys.path.insert(0, "tests/frontend")
    from frontend_kernels import builtins_kernel

    signature = {"x_ptr": "*fp32", "u_ptr": "*u32", "i_ptr": "*i32", "n": "i32"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the kernel's device_print
        compiled = tilec.compile(
            builtins_kernel, signature, {"BLOCK": 64}, backend="amd", target=arch
        )
    assert compiled.asm["hsaco"][:4] == b"\x7fELF"
    assert f".wavefront_size: {ARCHS.check(arch).lanes}" in compiled.asm["amdgcn"]
    assert f'.amdgcn_target "amdgcn-amd-amdhsa--{arch}' in compiled.asm["amdgcn"]
