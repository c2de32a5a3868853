"""Every example and every language- and frontend-test kernel compiled for gfx942 (CDNA3,
wave64) and gfx1100 (RDNA3, wave32): the hsaco is an AMDGPU ELF shared object whose
NT_AMDGPU_METADATA note names the kernel and its arguments, the wavefront size and the
work-group size the launch uses. Each kernel compiles once per arch (module-scoped)."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import warnings

import pytest
from amd_kernels import example_specs, language_specs

import tilec
from tilec.runtime import cache, compiler

ARCHS = {"gfx942": 64, "gfx1100": 32}
READELF = next(
    (p for p in (shutil.which(n) for n in ("llvm-readelf-22", "llvm-readelf")) if p), None
)
EM_AMDGPU, ET_DYN = 224, 3


def _readelf_version(path: str | None) -> int:
    if path is None:
        return 0
    out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    match = re.search(r"LLVM version (\d+)", out)
    return int(match.group(1)) if match else 0


READELF_OK = _readelf_version(READELF) >= 17


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """{arch: [(spec, CompiledKernel)]}, compiled in a private cache."""
    mp = pytest.MonkeyPatch()
    mp.setenv("TILEC_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    mp.delenv("TILEC_BACKEND", raising=False)
    cache.clear_memory()
    compiler.set_backend(None)
    try:
        specs = example_specs() + language_specs()
        result = {}
        for arch in ARCHS:
            kernels = []
            for spec in specs:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # print_kernel's printf
                    kernels.append((spec, tilec.compile(
                        spec.kernel, spec.signature, spec.constexprs, backend="amd",
                        target=arch, divisibility=spec.divisibility, equal_to_1=spec.equal_to_1,
                    )))  # fmt: skip
            result[arch] = kernels
        yield result
    finally:
        cache.clear_memory()
        mp.undo()


def notes(hsaco: bytes, tmp_path) -> str:
    path = tmp_path / "kernel.hsaco"
    path.write_bytes(hsaco)
    return subprocess.run(
        [READELF, "--notes", str(path)], capture_output=True, text=True, check=True
    ).stdout


def test_every_kernel_compiles_for_both_archs(compiled):
    for arch, kernels in compiled.items():
        ids = {spec.id for spec, _ in kernels}
        assert {"example-add_kernel", "example-softmax_kernel", "example-layer_norm_fwd",
                "example-matmul_kernel", "example-histogram_kernel"} <= ids, arch  # fmt: skip
        for spec, kernel in kernels:
            assert list(kernel.asm) == ["tir", "gir", "llir", "amdgcn", "hsaco"], spec.id
            assert kernel.metadata["threads_per_warp"] == ARCHS[arch], spec.id


@pytest.mark.parametrize("arch", ARCHS)
def test_hsaco_is_an_amdgpu_shared_object(compiled, arch):
    for spec, kernel in compiled[arch]:
        hsaco = kernel.asm["hsaco"]
        assert hsaco[:4] == b"\x7fELF" and hsaco[4] == 2, spec.id  # ELF64
        e_type, e_machine = struct.unpack_from("<HH", hsaco, 16)
        assert (e_type, e_machine) == (ET_DYN, EM_AMDGPU), spec.id


@pytest.mark.skipif(not READELF_OK, reason="needs llvm-readelf 17+ (apt-get install llvm-22)")
@pytest.mark.parametrize("arch", ARCHS)
def test_metadata_note_matches_the_launch(compiled, arch, tmp_path):
    for spec, kernel in compiled[arch]:
        text = notes(kernel.asm["hsaco"], tmp_path)
        md = kernel.metadata
        where = f"{spec.id} ({arch})"
        assert "NT_AMDGPU_METADATA" in text, where
        assert re.search(rf"\.name:\s+{md['kernel']}\n", text), where
        assert re.search(rf"\.wavefront_size:\s+{ARCHS[arch]}\n", text), where
        threads = md["num_warps"] * md["threads_per_warp"]
        assert re.search(rf"\.max_flat_workgroup_size:\s+{threads}\n", text), where
        assert f"amdhsa.target:   amdgcn-amd-amdhsa--{arch}" in text, where
        args = re.findall(r"- (?:\.address_space:\s+global\n\s+)?\.name:\s+(\w+)", text)
        assert args[: len(kernel.runtime_params)] == kernel.runtime_params, where


def test_gir_differs_only_in_lane_count(compiled):
    """The same 1-D kernel laid out for wave64 and wave32: only `threadsPerWarp` changes."""
    girs = {
        arch: next(k.asm["gir"] for s, k in kernels if s.id == "frontend-softmax")
        for arch, kernels in compiled.items()
    }
    assert "threadsPerWarp = [64]" in girs["gfx942"]
    assert "gpu.threads_per_warp = 64" in girs["gfx942"]
    as_wave32 = girs["gfx942"].replace("threadsPerWarp = [64]", "threadsPerWarp = [32]")
    as_wave32 = as_wave32.replace("gpu.threads_per_warp = 64", "gpu.threads_per_warp = 32")
    assert as_wave32 == girs["gfx1100"]
