"""tl.atomic_* on NVIDIA in Triton 3.6's PTX spellings (`tilec_nvidia.atomics`), which Triton's
own test_atomic_rmw and test_atomic_cas read from `asm["ptx"]`: `atom.global.<scope>.<sem>.<op>`
and `atom.global.<sem>.<scope>.cas`, for every `sem` and `scope` Triton accepts (a bf16 add before
sm_90: LLVM's CAS loop, `atom.<sem>.<scope>.global.cas`); ptxas assembles them for sm_80 and
sm_90a; on the GPU the values are the interpreter's (Triton's float max/min)."""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.runtime import check
from tilec_nvidia.codegen import find_ptxas

SEMS = [None, "acquire", "release", "acq_rel", "relaxed"]
SCOPES = [None, "gpu", "cta", "sys"]


@tilec.jit
def rmw_kernel(x_ptr, z_ptr, OP: tl.constexpr, SEM: tl.constexpr, SCOPE: tl.constexpr):
    x = tl.load(x_ptr + tl.program_id(0))
    if OP == "add":
        tl.atomic_add(z_ptr, x, sem=SEM, scope=SCOPE)
    elif OP == "max":
        tl.atomic_max(z_ptr, x, sem=SEM, scope=SCOPE)
    elif OP == "min":
        tl.atomic_min(z_ptr, x, sem=SEM, scope=SCOPE)
    elif OP == "xchg":
        tl.atomic_xchg(z_ptr, x, sem=SEM, scope=SCOPE)
    elif OP == "and":
        tl.atomic_and(z_ptr, x, sem=SEM, scope=SCOPE)
    elif OP == "or":
        tl.atomic_or(z_ptr, x, sem=SEM, scope=SCOPE)
    else:
        tl.atomic_xor(z_ptr, x, sem=SEM, scope=SCOPE)


@tilec.jit
def cas_kernel(lock_ptr, data_ptr, SEM: tl.constexpr, SCOPE: tl.constexpr):
    """Triton's test_atomic_cas lock."""
    while tl.atomic_cas(lock_ptr, 0, 1, SEM, SCOPE) == 1:
        pass
    offsets = tl.arange(0, 128)
    tl.store(data_ptr + offsets, tl.load(data_ptr + offsets) + 1.0)
    tl.debug_barrier()
    tl.atomic_xchg(lock_ptr, 0)


@tilec.jit
def tensor_kernel(z_ptr, w_ptr, x_ptr, old_ptr, n, OP: tl.constexpr):
    """Colliding atomics on `z` (16 addresses: its final values do not depend on the order) and
    one atomic per element of `w`, whose old values are stored."""
    offsets = tl.arange(0, 256)
    x = tl.load(x_ptr + offsets)
    mask = offsets < n
    if OP == "max":
        tl.atomic_max(z_ptr + offsets % 16, x, mask=mask)
        old = tl.atomic_max(w_ptr + offsets, x, mask=mask)
    elif OP == "min":
        tl.atomic_min(z_ptr + offsets % 16, x, mask=mask, sem="relaxed", scope="cta")
        old = tl.atomic_min(w_ptr + offsets, x, mask=mask, sem="relaxed", scope="cta")
    else:
        tl.atomic_add(z_ptr + offsets % 16, x, mask=mask, sem="release")
        old = tl.atomic_add(w_ptr + offsets, x, mask=mask, sem="release")
    tl.store(old_ptr + offsets, old)


# (op, dtype, Triton's <op>.<type>): the integer forms of Triton's float max/min
FORMS = [
    ("add", "fp32", ["add.f32"]),
    ("add", "fp64", ["add.f64"]),
    ("add", "fp16", ["add.noftz.f16"]),
    ("add", "bf16", ["add.noftz.bf16"]),
    ("add", "i32", ["add.u32"]),
    ("add", "u64", ["add.u64"]),
    ("max", "i32", ["max.s32"]),
    ("max", "u32", ["max.u32"]),
    ("max", "i64", ["max.s64"]),
    ("min", "u64", ["min.u64"]),
    ("max", "fp32", ["max.s32", "min.u32"]),
    ("min", "fp64", ["min.s64", "max.u64"]),
    ("xchg", "fp32", ["exch.b32"]),
    ("xchg", "i64", ["exch.b64"]),
    ("and", "i32", ["and.b32"]),
    ("or", "i64", ["or.b64"]),
    ("xor", "u32", ["xor.b32"]),
]


def _ptx(kernel, signature: dict, constexprs: dict, target: str = "sm_90a") -> str:
    compiled = tilec.compile(kernel, signature, constexprs, backend="nvidia", target=target)
    return compiled.asm["ptx"]


def _assembles(ptx: str, arch: str, tmp_path) -> None:
    ptxas = find_ptxas()
    if ptxas is None:
        return
    source = tmp_path / "kernel.ptx"
    source.write_text(ptx)
    result = subprocess.run(
        [ptxas, f"-arch={arch}", str(source), "-o", str(tmp_path / "kernel.o")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(("op", "dtype", "forms"), FORMS)
@pytest.mark.parametrize("sem", SEMS)
def test_atomic_rmw_is_tritons_atom(op, dtype, forms, sem):
    signature = {"x_ptr": f"*{dtype}", "z_ptr": f"*{dtype}"}
    ptx = _ptx(rmw_kernel, signature, {"OP": op, "SEM": sem, "SCOPE": None})
    sem_str = sem or "acq_rel"  # Triton's default, as its test reads it
    for form in forms:
        assert f"atom.global.gpu.{sem_str}.{form}" in ptx, form
    assert "fence" not in ptx  # the order is the instruction's
    assert len(re.findall(r"\batom\.", ptx)) == len(forms)


@pytest.mark.parametrize("scope", SCOPES)
@pytest.mark.parametrize("sem", SEMS)
def test_scopes_and_cas(sem, scope, tmp_path):
    sem_str, scope_str = sem or "acq_rel", scope or "gpu"
    signature = {"x_ptr": "*fp32", "z_ptr": "*fp32"}
    ptx = _ptx(rmw_kernel, signature, {"OP": "add", "SEM": sem, "SCOPE": scope})
    assert f"atom.global.{scope_str}.{sem_str}.add.f32" in ptx
    _assembles(ptx, "sm_90a", tmp_path)
    signature = {"lock_ptr": "*i32", "data_ptr": "*fp32"}
    ptx = _ptx(cas_kernel, signature, {"SEM": sem, "SCOPE": scope})
    assert f"atom.global.{sem_str}.{scope_str}.cas.b32" in ptx
    assert f"atom.global.{sem_str}" in ptx  # what Triton's test_atomic_cas reads
    assert "atom.global.gpu.acq_rel.exch.b32" in ptx
    _assembles(ptx, "sm_90a", tmp_path)


@pytest.mark.parametrize("sem", SEMS)
def test_bf16_add_before_sm90_is_a_cas_loop_with_the_order(sem):
    """No atom.add.bf16 before sm_90: LLVM's CAS loop, its cas carrying the order and scope (no
    fences), which Triton's test_atomic_rmw reads as `atom.<sem>.gpu.global.cas` there."""
    signature = {"x_ptr": "*bf16", "z_ptr": "*bf16"}
    ptx = _ptx(rmw_kernel, signature, {"OP": "add", "SEM": sem, "SCOPE": None}, "sm_80")
    assert f"atom.{sem or 'acq_rel'}.gpu.global.cas" in ptx
    assert "fence" not in ptx


@pytest.mark.skipif(find_ptxas() is None, reason="no ptxas here")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize(("op", "dtype", "forms"), FORMS)
def test_atomics_assemble(arch, op, dtype, forms, tmp_path):
    signature = {"x_ptr": f"*{dtype}", "z_ptr": f"*{dtype}"}
    ptx = _ptx(rmw_kernel, signature, {"OP": op, "SEM": "release", "SCOPE": "sys"}, arch)
    if dtype == "bf16" and arch == "sm_80":  # no atom.add.bf16 before sm_90: LLVM's CAS loop
        assert "add.noftz.bf16" not in ptx and "atom.release.sys.global.cas.b32" in ptx
    else:
        assert f"atom.global.sys.release.{forms[0]}" in ptx
    _assembles(ptx, arch, tmp_path)


@pytest.mark.gpu
@pytest.mark.parametrize("op", ["max", "min", "add"])
def test_tensor_atomics_match_the_interpreter(rng, op):
    """Collisions, a mask, NaNs of both signs and signed zeros in values and memory."""
    x = rng.standard_normal(256).astype(np.float32)
    x[[3, 40, 77]] = [np.nan, -np.float32(np.nan), -0.0]
    z = rng.standard_normal(16).astype(np.float32)
    z[[1, 2, 5]] = [np.nan, -np.float32(np.nan), 0.0]
    if op == "add":
        x[np.isnan(x)], z[np.isnan(z)] = 1.0, 2.0  # order-dependent rounding aside
        x = np.round(x * 8) / 8  # exact sums in any order
        z = np.round(z * 8) / 8
    w = rng.standard_normal(256).astype(np.float32)
    w[[3, 4, 5, 6, 40, 41, 77, 78]] = [1.0, np.nan, -np.float32(np.nan), -0.0, 0.0, -1.0, 0.0, 2.0]
    if op == "add":
        w[np.isnan(w)] = 1.0
    args = [z, w, x, np.zeros(256, np.float32), 200]
    signature = {"z_ptr": "*fp32", "w_ptr": "*fp32", "x_ptr": "*fp32", "old_ptr": "*fp32"}
    signature["n"] = "i32"

    def compiled(backend: str):
        return tilec.compile(tensor_kernel, signature, {"OP": op}, backend=backend)

    check.run_checked(compiled("nvidia"), (1,), args, lambda: compiled("interp"))
