"""Whole kernels in hand-written tir: reductions, softmax, matmul, histogram, divergent control."""

import numpy as np
import pytest
from tir_helpers import compile_tir

from tilec_interp.interpreter import InterpreterError, execute

REDUCE_2D = """\
func.func @reduce2d(%x_ptr: !tile.ptr<f32>, %sum_ptr: !tile.ptr<f32>, %max_ptr: !tile.ptr<f32>, %arg_ptr: !tile.ptr<i32>) {
  %rows = tile.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
  %cols = tile.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
  %c32 = arith.constant {value = dense<32> : tensor<16x1xi32>} : tensor<16x1xi32>
  %r2 = tile.expand_dims %rows {axis = 1 : i32} : tensor<16x1xi32>
  %r3 = arith.muli %r2, %c32 : tensor<16x1xi32>
  %rb = tile.broadcast %r3 : tensor<16x32xi32>
  %c2 = tile.expand_dims %cols {axis = 0 : i32} : tensor<1x32xi32>
  %cb = tile.broadcast %c2 : tensor<16x32xi32>
  %offs = arith.addi %rb, %cb : tensor<16x32xi32>
  %xb = tile.splat %x_ptr : tensor<16x32x!tile.ptr<f32>>
  %xp = tile.addptr %xb, %offs : tensor<16x32x!tile.ptr<f32>>
  %x = tile.load %xp : tensor<16x32xf32>
  %sum = tile.reduce %x {axis = 1 : i32} : tensor<16xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tile.reduce.return %s
  }
  %max = tile.reduce %x {axis = 0 : i32} : tensor<32xf32> {
  ^bb0(%a: f32, %b: f32):
    %m = arith.maxnumf %b, %a : f32
    tile.reduce.return %m
  }
  %vmax, %imax = tile.reduce %x, %cb {axis = 1 : i32} : tensor<16xf32>, tensor<16xi32> {
  ^bb0(%va: f32, %ia: i32, %vb: f32, %ib: i32):
    %gt = arith.cmpf %va, %vb {predicate = "oge"} : i1
    %v = arith.select %gt, %va, %vb : f32
    %j = arith.select %gt, %ia, %ib : i32
    tile.reduce.return %v, %j
  }
  %sb = tile.splat %sum_ptr : tensor<16x!tile.ptr<f32>>
  %sp = tile.addptr %sb, %rows : tensor<16x!tile.ptr<f32>>
  tile.store %sp, %sum
  %mb = tile.splat %max_ptr : tensor<32x!tile.ptr<f32>>
  %mp = tile.addptr %mb, %cols : tensor<32x!tile.ptr<f32>>
  tile.store %mp, %max
  %ib = tile.splat %arg_ptr : tensor<16x!tile.ptr<i32>>
  %ip = tile.addptr %ib, %rows : tensor<16x!tile.ptr<i32>>
  tile.store %ip, %imax
  tile.return
}
"""


def test_reductions_along_both_axes(rng):
    module = compile_tir(REDUCE_2D)
    x = rng.standard_normal((16, 32)).astype(np.float32)
    sums, maxes, args = np.zeros(16, np.float32), np.zeros(32, np.float32), np.zeros(16, np.int32)
    execute(module, "reduce2d", (1,), [x, sums, maxes, args])
    np.testing.assert_allclose(sums, x.sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(maxes, x.max(axis=0))
    np.testing.assert_array_equal(args, x.argmax(axis=1))


SOFTMAX = """\
func.func @softmax(%out_ptr: !tile.ptr<f32>, %in_ptr: !tile.ptr<f32>, %stride: i32, %n_cols: i32) {
  %row = tile.program_id {axis = 0 : i32} : i32
  %start = arith.muli %row, %stride : i32
  %cols = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %ss = tile.splat %start : tensor<128xi32>
  %offs = arith.addi %ss, %cols : tensor<128xi32>
  %ns = tile.splat %n_cols : tensor<128xi32>
  %mask = arith.cmpi %cols, %ns {predicate = "slt"} : tensor<128xi1>
  %ninf = arith.constant {value = dense<-1.0e30> : tensor<128xf32>} : tensor<128xf32>
  %ib = tile.splat %in_ptr : tensor<128x!tile.ptr<f32>>
  %ip = tile.addptr %ib, %offs : tensor<128x!tile.ptr<f32>>
  %x = tile.load %ip, %mask, %ninf : tensor<128xf32>
  %m = tile.reduce %x {axis = 0 : i32} : f32 {
  ^bb0(%a: f32, %b: f32):
    %t = arith.maxnumf %a, %b : f32
    tile.reduce.return %t
  }
  %ms = tile.splat %m : tensor<128xf32>
  %z = arith.subf %x, %ms : tensor<128xf32>
  %e = math.exp %z : tensor<128xf32>
  %s = tile.reduce %e {axis = 0 : i32} : f32 {
  ^bb0(%a: f32, %b: f32):
    %t = arith.addf %a, %b : f32
    tile.reduce.return %t
  }
  %sp = tile.splat %s : tensor<128xf32>
  %y = arith.divf %e, %sp : tensor<128xf32>
  %ob = tile.splat %out_ptr : tensor<128x!tile.ptr<f32>>
  %op = tile.addptr %ob, %offs : tensor<128x!tile.ptr<f32>>
  tile.store %op, %y, %mask
  tile.return
}
"""


def test_softmax_rows(rng):
    text = SOFTMAX.replace("dense<-1.0e30>", "dense<-1.0e30>")
    module = compile_tir(text)
    rows, cols = 37, 100
    x = rng.standard_normal((rows, cols)).astype(np.float32) * 3
    out = np.zeros_like(x)
    execute(module, "softmax", (rows,), [out, x, cols, cols])
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def matmul_tir(in_t: str, acc_t: str) -> str:
    return f"""\
func.func @matmul(%a_ptr: !tile.ptr<{in_t}>, %b_ptr: !tile.ptr<{in_t}>, %c_ptr: !tile.ptr<{acc_t}>, %M: i32, %N: i32, %K: i32) {{
  %pm = tile.program_id {{axis = 0 : i32}} : i32
  %pn = tile.program_id {{axis = 1 : i32}} : i32
  %c16 = arith.constant {{value = 16 : i32}} : i32
  %c0 = arith.constant {{value = 0 : i32}} : i32
  %r16 = tile.make_range {{start = 0 : i32, end = 16 : i32}} : tensor<16xi32>
  %mo = arith.muli %pm, %c16 : i32
  %mos = tile.splat %mo : tensor<16xi32>
  %rm = arith.addi %mos, %r16 : tensor<16xi32>
  %no = arith.muli %pn, %c16 : i32
  %nos = tile.splat %no : tensor<16xi32>
  %rn = arith.addi %nos, %r16 : tensor<16xi32>
  %rm2 = tile.expand_dims %rm {{axis = 1 : i32}} : tensor<16x1xi32>
  %rn2 = tile.expand_dims %rn {{axis = 0 : i32}} : tensor<1x16xi32>
  %rk_col = tile.expand_dims %r16 {{axis = 0 : i32}} : tensor<1x16xi32>
  %rk_row = tile.expand_dims %r16 {{axis = 1 : i32}} : tensor<16x1xi32>
  %Ks = tile.splat %K : tensor<16x1xi32>
  %a_row = arith.muli %rm2, %Ks : tensor<16x1xi32>
  %a_rowb = tile.broadcast %a_row : tensor<16x16xi32>
  %a_colb = tile.broadcast %rk_col : tensor<16x16xi32>
  %a_offs = arith.addi %a_rowb, %a_colb : tensor<16x16xi32>
  %Ns = tile.splat %N : tensor<16x1xi32>
  %b_row = arith.muli %rk_row, %Ns : tensor<16x1xi32>
  %b_rowb = tile.broadcast %b_row : tensor<16x16xi32>
  %b_colb = tile.broadcast %rn2 : tensor<16x16xi32>
  %b_offs = arith.addi %b_rowb, %b_colb : tensor<16x16xi32>
  %zero = arith.constant {{value = dense<0.0> : tensor<16x16x{acc_t}>}} : tensor<16x16x{acc_t}>
  %acc = scf.for %c0, %K, %c16, %zero : tensor<16x16x{acc_t}> {{
  ^bb0(%k: i32, %acc_in: tensor<16x16x{acc_t}>):
    %ks = tile.splat %k : tensor<16x16xi32>
    %ao = arith.addi %a_offs, %ks : tensor<16x16xi32>
    %Nk = arith.muli %k, %N : i32
    %Nks = tile.splat %Nk : tensor<16x16xi32>
    %bo = arith.addi %b_offs, %Nks : tensor<16x16xi32>
    %ab = tile.splat %a_ptr : tensor<16x16x!tile.ptr<{in_t}>>
    %ap = tile.addptr %ab, %ao : tensor<16x16x!tile.ptr<{in_t}>>
    %a = tile.load %ap : tensor<16x16x{in_t}>
    %bb = tile.splat %b_ptr : tensor<16x16x!tile.ptr<{in_t}>>
    %bp = tile.addptr %bb, %bo : tensor<16x16x!tile.ptr<{in_t}>>
    %b = tile.load %bp : tensor<16x16x{in_t}>
    %d = tile.dot %a, %b, %acc_in : tensor<16x16x{acc_t}>
    scf.yield %d
  }}
  %Nc = tile.splat %N : tensor<16x1xi32>
  %c_row = arith.muli %rm2, %Nc : tensor<16x1xi32>
  %c_rowb = tile.broadcast %c_row : tensor<16x16xi32>
  %c_offs = arith.addi %c_rowb, %b_colb : tensor<16x16xi32>
  %cb = tile.splat %c_ptr : tensor<16x16x!tile.ptr<{acc_t}>>
  %cp = tile.addptr %cb, %c_offs : tensor<16x16x!tile.ptr<{acc_t}>>
  tile.store %cp, %acc
  tile.return
}}
"""


@pytest.mark.parametrize(("in_t", "dtype"), [("f32", np.float32), ("f16", np.float16)])
def test_matmul_with_k_loop(rng, in_t, dtype):
    module = compile_tir(matmul_tir(in_t, "f32"))
    M, N, K = 48, 32, 64
    a = rng.standard_normal((M, K)).astype(dtype)
    b = rng.standard_normal((K, N)).astype(dtype)
    c = np.zeros((M, N), np.float32)
    execute(module, "matmul", (M // 16, N // 16), [a, b, c, M, N, K])
    expected = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, expected, rtol=1e-4, atol=1e-4)


HISTOGRAM = """\
func.func @histogram(%data_ptr: !tile.ptr<i32>, %bins_ptr: !tile.ptr<i32>, %old_ptr: !tile.ptr<i32>, %n: i32) {
  %pid = tile.program_id {axis = 0 : i32} : i32
  %block = arith.constant {value = 256 : i32} : i32
  %start = arith.muli %pid, %block : i32
  %range = tile.make_range {start = 0 : i32, end = 256 : i32} : tensor<256xi32>
  %s = tile.splat %start : tensor<256xi32>
  %offs = arith.addi %s, %range : tensor<256xi32>
  %ns = tile.splat %n : tensor<256xi32>
  %mask = arith.cmpi %offs, %ns {predicate = "slt"} : tensor<256xi1>
  %db = tile.splat %data_ptr : tensor<256x!tile.ptr<i32>>
  %dp = tile.addptr %db, %offs : tensor<256x!tile.ptr<i32>>
  %d = tile.load %dp, %mask : tensor<256xi32>
  %bb = tile.splat %bins_ptr : tensor<256x!tile.ptr<i32>>
  %bp = tile.addptr %bb, %d : tensor<256x!tile.ptr<i32>>
  %one = arith.constant {value = dense<1> : tensor<256xi32>} : tensor<256xi32>
  %old = tile.atomic_rmw %bp, %one, %mask {kind = "add", sem = "acq_rel", scope = "gpu"} : tensor<256xi32>
  %ob = tile.splat %old_ptr : tensor<256x!tile.ptr<i32>>
  %op = tile.addptr %ob, %offs : tensor<256x!tile.ptr<i32>>
  tile.store %op, %old, %mask
  tile.return
}
"""


def test_atomic_add_histogram(rng):
    module = compile_tir(HISTOGRAM)
    n, nbins = 5000, 17
    data = rng.integers(0, nbins, n, dtype=np.int32)
    bins = np.zeros(nbins, np.int32)
    old = np.full(n, -1, np.int32)
    execute(module, "histogram", ((n + 255) // 256,), [data, bins, old, n])
    np.testing.assert_array_equal(bins, np.bincount(data, minlength=nbins))
    # Program-major then element order: the old value is the count of earlier equal elements.
    expected_old = np.array([np.count_nonzero(data[:i] == v) for i, v in enumerate(data)])
    np.testing.assert_array_equal(old, expected_old)


DIVERGENT_LOOP = """\
func.func @prefix(%x_ptr: !tile.ptr<f32>, %out_ptr: !tile.ptr<f32>, %count_ptr: !tile.ptr<i32>) {
  %pid = tile.program_id {axis = 0 : i32} : i32
  %c0 = arith.constant {value = 0 : i32} : i32
  %c1 = arith.constant {value = 1 : i32} : i32
  %zero = arith.constant {value = 0.0 : f32} : f32
  %ub = arith.addi %pid, %c1 : i32
  %sum = scf.for %c0, %ub, %c1, %zero : f32 {
  ^bb0(%i: i32, %acc: f32):
    %p = tile.addptr %x_ptr, %i : !tile.ptr<f32>
    %v = tile.load %p : f32
    %n = arith.addf %acc, %v : f32
    %q = tile.addptr %count_ptr, %i : !tile.ptr<i32>
    %old = tile.atomic_rmw %q, %c1 {kind = "add", sem = "relaxed", scope = "gpu"} : i32
    scf.yield %n
  }
  %o = tile.addptr %out_ptr, %pid : !tile.ptr<f32>
  tile.store %o, %sum
  tile.return
}
"""


@pytest.mark.parametrize("chunk", [1 << 22, 7])
def test_loop_bound_depends_on_program_id(rng, monkeypatch, chunk):
    import tilec_interp.interpreter as interp

    monkeypatch.setattr(interp, "MAX_CHUNK_ELEMENTS", chunk)
    module = compile_tir(DIVERGENT_LOOP)
    n = 50
    x = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    counts = np.zeros(n, np.int32)
    execute(module, "prefix", (n,), [x, out, counts])
    # Each program sums x[0..pid] sequentially in float32, as np.cumsum does.
    np.testing.assert_array_equal(out, np.cumsum(x, dtype=np.float32))
    # Element i was touched by programs i..n-1, and never by an inactive program.
    np.testing.assert_array_equal(counts, n - np.arange(n))


IF_ON_PID = """\
func.func @branch(%x_ptr: !tile.ptr<f32>, %out_ptr: !tile.ptr<f32>) {
  %pid = tile.program_id {axis = 0 : i32} : i32
  %c2 = arith.constant {value = 2 : i32} : i32
  %c0 = arith.constant {value = 0 : i32} : i32
  %block = arith.constant {value = 64 : i32} : i32
  %start = arith.muli %pid, %block : i32
  %range = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %s = tile.splat %start : tensor<64xi32>
  %offs = arith.addi %s, %range : tensor<64xi32>
  %xb = tile.splat %x_ptr : tensor<64x!tile.ptr<f32>>
  %xp = tile.addptr %xb, %offs : tensor<64x!tile.ptr<f32>>
  %x = tile.load %xp : tensor<64xf32>
  %ob = tile.splat %out_ptr : tensor<64x!tile.ptr<f32>>
  %op = tile.addptr %ob, %offs : tensor<64x!tile.ptr<f32>>
  %rem = arith.remsi %pid, %c2 : i32
  %even = arith.cmpi %rem, %c0 {predicate = "eq"} : i1
  %y = scf.if %even : tensor<64xf32> {
    %d = arith.addf %x, %x : tensor<64xf32>
    scf.yield %d
  } {
    %sq = arith.mulf %x, %x : tensor<64xf32>
    tile.store %op, %sq
    scf.yield %x
  }
  %z = arith.addf %y, %x : tensor<64xf32>
  scf.if %even {
    tile.store %op, %z
    scf.yield
  }
  tile.return
}
"""


def test_if_on_program_id(rng):
    module = compile_tir(IF_ON_PID)
    programs = 7
    x = rng.standard_normal(programs * 64).astype(np.float32)
    out = np.zeros_like(x)
    execute(module, "branch", (programs,), [x, out])
    even = (np.arange(programs * 64) // 64) % 2 == 0
    np.testing.assert_array_equal(out, np.where(even, x + x + x, x * x))


WHILE_ASSERT = """\
func.func @collatz(%out_ptr: !tile.ptr<i32>) {
  %pid = tile.program_id {axis = 0 : i32} : i32
  %c0 = arith.constant {value = 0 : i32} : i32
  %c1 = arith.constant {value = 1 : i32} : i32
  %c2 = arith.constant {value = 2 : i32} : i32
  %c3 = arith.constant {value = 3 : i32} : i32
  %start = arith.addi %pid, %c1 : i32
  %n, %steps = scf.while %start, %c0 : i32, i32 {
  ^bb0(%x: i32, %k: i32):
    %more = arith.cmpi %x, %c1 {predicate = "sgt"} : i1
    scf.condition %more, %x, %k
  } {
  ^bb0(%x: i32, %k: i32):
    %r = arith.remsi %x, %c2 : i32
    %odd = arith.cmpi %r, %c0 {predicate = "ne"} : i1
    %h = arith.divsi %x, %c2 : i32
    %t = arith.muli %x, %c3 : i32
    %t1 = arith.addi %t, %c1 : i32
    %next = arith.select %odd, %t1, %h : i32
    %k1 = arith.addi %k, %c1 : i32
    scf.yield %next, %k1
  }
  %ok = arith.cmpi %steps, %c0 {predicate = "sge"} : i1
  tile.assert %ok {message = "negative step count"}
  %p = tile.addptr %out_ptr, %pid : !tile.ptr<i32>
  tile.store %p, %steps
  tile.return
}
"""


def collatz_steps(n):
    steps = 0
    while n > 1:
        n = 3 * n + 1 if n % 2 else n // 2
        steps += 1
    return steps


def test_while_loop_diverges_per_program():
    module = compile_tir(WHILE_ASSERT)
    out = np.full(30, -1, np.int32)
    execute(module, "collatz", (30,), [out])
    np.testing.assert_array_equal(out, [collatz_steps(i + 1) for i in range(30)])


def test_assert_names_location_and_program():
    text = WHILE_ASSERT.replace('{predicate = "sge"}', '{predicate = "slt"}', 1)
    module = compile_tir(text, "collatz.tir")
    out = np.zeros(30, np.int32)
    with pytest.raises(
        InterpreterError, match=r"collatz\.tir:24:\d+: assertion failed in program \(0,\)"
    ):
        execute(module, "collatz", (30,), [out])


CUMSUM = """\
func.func @cumsum(%x_ptr: !tile.ptr<i32>, %out_ptr: !tile.ptr<i32>, %gen_ptr: !tile.ptr<i32>) {
  %r = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %xb = tile.splat %x_ptr : tensor<64x!tile.ptr<i32>>
  %xp = tile.addptr %xb, %r : tensor<64x!tile.ptr<i32>>
  %x = tile.load %xp : tensor<64xi32>
  %c = tile.scan %x {axis = 0 : i32} : tensor<64xi32> {
  ^bb0(%a: i32, %b: i32):
    %s = arith.addi %a, %b : i32
    tile.scan.return %s
  }
  %g = tile.scan %x {axis = 0 : i32, reverse = 1 : i32} : tensor<64xi32> {
  ^bb0(%a: i32, %b: i32):
    %s = arith.subi %b, %a : i32
    tile.scan.return %s
  }
  %ob = tile.splat %out_ptr : tensor<64x!tile.ptr<i32>>
  %op = tile.addptr %ob, %r : tensor<64x!tile.ptr<i32>>
  tile.store %op, %c
  %gb = tile.splat %gen_ptr : tensor<64x!tile.ptr<i32>>
  %gp = tile.addptr %gb, %r : tensor<64x!tile.ptr<i32>>
  tile.store %gp, %g
  tile.return
}
"""


def test_scans(rng):
    module = compile_tir(CUMSUM)
    x = rng.integers(-(2**31), 2**31, 64, dtype=np.int64).astype(np.int32)
    out, gen = np.zeros(64, np.int32), np.zeros(64, np.int32)
    execute(module, "cumsum", (1,), [x, out, gen])
    np.testing.assert_array_equal(out, np.cumsum(x, dtype=np.int32))
    expected = np.empty(64, np.int64)
    running = int(x[-1])
    expected[-1] = running
    for i in range(62, -1, -1):
        running = int(x[i]) - running
        expected[i] = running
    np.testing.assert_array_equal(gen, expected.astype(np.int64).astype(np.int32))


NESTED = """\
func.func @nested(%x_ptr: !tile.ptr<f32>, %out_ptr: !tile.ptr<f32>) {
  %pid = tile.program_id {axis = 0 : i32} : i32
  %c0 = arith.constant {value = 0 : i32} : i32
  %c1 = arith.constant {value = 1 : i32} : i32
  %c3 = arith.constant {value = 3 : i32} : i32
  %zero = arith.constant {value = 0.0 : f32} : f32
  %sum = scf.for %c0, %pid, %c1, %zero : f32 {
  ^bb0(%i: i32, %acc: f32):
    %p = tile.addptr %x_ptr, %i : !tile.ptr<f32>
    %v = tile.load %p : f32
    %r = arith.remsi %i, %c3 : i32
    %skip = arith.cmpi %r, %c0 {predicate = "eq"} : i1
    %n = scf.if %skip : f32 {
      scf.yield %acc
    } {
      %a = arith.addf %acc, %v : f32
      scf.yield %a
    }
    scf.yield %n
  }
  %o = tile.addptr %out_ptr, %pid : !tile.ptr<f32>
  tile.store %o, %sum
  tile.return
}
"""


def test_if_nested_in_divergent_loop(rng):
    n = 40
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    execute(compile_tir(NESTED), "nested", (n,), [x, out])
    expected = np.zeros(n, np.float32)
    for p in range(n):
        acc = np.float32(0)
        for i in range(p):
            if i % 3:
                acc = np.float32(acc + x[i])
        expected[p] = acc
    np.testing.assert_array_equal(out, expected)
