"""Atomics order, CAS, math functions, casts, prints and chunking with divergence."""

import math

import numpy as np
import pytest
from tir_helpers import compile_tir

from tilec_interp.interpreter import execute

N = 128


def atomic_kernel(kind: str, t: str) -> str:
    return f"""\
func.func @k(%idx_ptr: !tile.ptr<i32>, %val_ptr: !tile.ptr<{t}>, %mem_ptr: !tile.ptr<{t}>, %old_ptr: !tile.ptr<{t}>) {{
  %pid = tile.program_id {{axis = 0 : i32}} : i32
  %block = arith.constant {{value = {N} : i32}} : i32
  %start = arith.muli %pid, %block : i32
  %r = tile.make_range {{start = 0 : i32, end = {N} : i32}} : tensor<{N}xi32>
  %s = tile.splat %start : tensor<{N}xi32>
  %offs = arith.addi %s, %r : tensor<{N}xi32>
  %ib = tile.splat %idx_ptr : tensor<{N}x!tile.ptr<i32>>
  %ip = tile.addptr %ib, %offs : tensor<{N}x!tile.ptr<i32>>
  %i = tile.load %ip : tensor<{N}xi32>
  %vb = tile.splat %val_ptr : tensor<{N}x!tile.ptr<{t}>>
  %vp = tile.addptr %vb, %offs : tensor<{N}x!tile.ptr<{t}>>
  %v = tile.load %vp : tensor<{N}x{t}>
  %mb = tile.splat %mem_ptr : tensor<{N}x!tile.ptr<{t}>>
  %mp = tile.addptr %mb, %i : tensor<{N}x!tile.ptr<{t}>>
  %old = tile.atomic_rmw %mp, %v {{kind = "{kind}", sem = "acq_rel", scope = "gpu"}} : tensor<{N}x{t}>
  %ob = tile.splat %old_ptr : tensor<{N}x!tile.ptr<{t}>>
  %op = tile.addptr %ob, %offs : tensor<{N}x!tile.ptr<{t}>>
  tile.store %op, %old
  tile.return
}}
"""


@pytest.mark.parametrize("slots", [3, 200])
@pytest.mark.parametrize(
    ("kind", "t", "dtype", "fn"),
    [
        ("add", "f32", np.float32, lambda a, b: np.float32(a + b)),
        ("max", "i32", np.int32, max),
        ("xchg", "f32", np.float32, lambda a, b: b),
        ("xor", "i32", np.int32, lambda a, b: a ^ b),
    ],
)
def test_atomics_apply_in_program_then_element_order(rng, kind, t, dtype, fn, slots):
    programs = 4
    n = programs * N
    idx = rng.integers(0, slots, n, dtype=np.int32)
    if dtype == np.float32:
        vals = rng.standard_normal(n).astype(np.float32)
        mem = rng.standard_normal(slots).astype(np.float32)
    else:
        vals = rng.integers(-1000, 1000, n, dtype=np.int32)
        mem = rng.integers(-1000, 1000, slots, dtype=np.int32)
    expected_mem = mem.copy()
    expected_old = np.zeros(n, dtype)
    for k in range(n):
        expected_old[k] = expected_mem[idx[k]]
        expected_mem[idx[k]] = fn(expected_mem[idx[k]], vals[k])
    old = np.zeros(n, dtype)
    execute(compile_tir(atomic_kernel(kind, t)), "k", (programs,), [idx, vals, mem, old])
    np.testing.assert_array_equal(mem, expected_mem)
    np.testing.assert_array_equal(old, expected_old)


CAS = """\
func.func @lock(%lock_ptr: !tile.ptr<i32>, %owner_ptr: !tile.ptr<i32>) {
  %pid = tile.program_id {axis = 0 : i32} : i32
  %c0 = arith.constant {value = 0 : i32} : i32
  %c1 = arith.constant {value = 1 : i32} : i32
  %me = arith.addi %pid, %c1 : i32
  %old = tile.atomic_cas %lock_ptr, %c0, %me {sem = "acq_rel", scope = "gpu"} : i32
  %p = tile.addptr %owner_ptr, %pid : !tile.ptr<i32>
  tile.store %p, %old
  tile.return
}
"""


def test_atomic_cas_first_program_wins():
    lock = np.zeros(1, np.int32)
    owner = np.full(5, -1, np.int32)
    execute(compile_tir(CAS), "lock", (5,), [lock, owner])
    assert lock[0] == 1
    np.testing.assert_array_equal(owner, [0, 1, 1, 1, 1])


def unary_kernel(op: str, t: str, r: str) -> str:
    return f"""\
func.func @k(%a_ptr: !tile.ptr<{t}>, %out_ptr: !tile.ptr<{r}>) {{
  %offs = tile.make_range {{start = 0 : i32, end = {N} : i32}} : tensor<{N}xi32>
  %ab = tile.splat %a_ptr : tensor<{N}x!tile.ptr<{t}>>
  %ap = tile.addptr %ab, %offs : tensor<{N}x!tile.ptr<{t}>>
  %a = tile.load %ap : tensor<{N}x{t}>
  %y = {op} %a : tensor<{N}x{r}>
  %ob = tile.splat %out_ptr : tensor<{N}x!tile.ptr<{r}>>
  %op = tile.addptr %ob, %offs : tensor<{N}x!tile.ptr<{r}>>
  tile.store %op, %y
  tile.return
}}
"""


def run_unary(op, t, r, x, out_dtype):
    out = np.zeros(N, out_dtype)
    execute(compile_tir(unary_kernel(op, t, r)), "k", (1,), [x, out])
    return out


@pytest.mark.parametrize(
    ("op", "fn"),
    [
        ("math.exp", np.exp),
        ("math.log", lambda x: np.log(np.abs(x))),
        ("math.sqrt", lambda x: np.sqrt(np.abs(x))),
        ("math.sin", np.sin),
        ("math.tanh", np.tanh),
        ("math.erf", np.vectorize(math.erf)),
        ("math.floor", np.floor),
    ],
)
def test_math_functions(rng, op, fn):
    x = rng.standard_normal(N).astype(np.float32)
    if op in ("math.log", "math.sqrt"):
        x = np.abs(x) + np.float32(0.1)
    out = run_unary(op, "f32", "f32", x, np.float32)
    np.testing.assert_allclose(out, fn(x.astype(np.float64)), rtol=2e-7, atol=1e-7)


def test_casts(rng):
    x = (rng.standard_normal(N) * 1e3).astype(np.float32)
    x[:3] = [np.nan, 1e20, -1e20]
    out = run_unary("arith.fptosi", "f32", "i16", x, np.int16)
    expected = np.clip(np.trunc(np.nan_to_num(x[3:])), -32768, 32767).astype(np.int16)
    np.testing.assert_array_equal(out[3:], expected)
    np.testing.assert_array_equal(out[:3], [0, 32767, -32768])
    y = rng.integers(-128, 128, N, dtype=np.int8)
    np.testing.assert_array_equal(run_unary("arith.extsi", "i8", "i32", y, np.int32), y)
    np.testing.assert_array_equal(
        run_unary("arith.extui", "i8", "i32", y, np.int32), y.view(np.uint8)
    )
    f = rng.standard_normal(N).astype(np.float32)
    bits = run_unary("arith.truncf", "f32", "bf16", f, np.uint16)
    from tilec.dialects.arith_folding import bf16_round

    expected_bits = np.array([bf16_round(float(v)) for v in f], np.float32).view(np.uint32) >> 16
    np.testing.assert_array_equal(bits, expected_bits.astype(np.uint16))
    back = run_unary("arith.extf", "bf16", "f32", bits, np.float32)
    np.testing.assert_array_equal(back.view(np.uint32) >> 16, expected_bits)


PRINT = """\
func.func @k(%x: i32) {
  %pid = tile.program_id {axis = 0 : i32} : i32
  %y = arith.addi %pid, %x : i32
  tile.print %y {prefix = "y = "}
  tile.return
}
"""


def test_print_per_program(capsys):
    execute(compile_tir(PRINT), "k", (3,), [10])
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["pid (0,) y = 10", "pid (1,) y = 11", "pid (2,) y = 12"]
