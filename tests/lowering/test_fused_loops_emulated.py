"""fuse-nested-loops (`tl.range(..., flatten=True)`) on the CPU: kernels compiled for sm_90a,
whose gir has the nest fused, run on the CPU emulator (`cpu_emulator`, the lowering's own code
for the fused loop) against the interpreter, which runs the nest as written (it runs no gir
passes), and NumPy. The shapes the pass fuses: the inner trip count 0, 1 or many, known or not
at compile time, other bounds and steps; carried values of both loops; an inner loop's init
computed in the prologue; prologue and epilogue ops with effects, run once an outer iteration.
Where it does not fuse (bounds varying with the outer loop) the nest stays and runs as before.
The pipelined matmul case is test_fused_loops_sm90's."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_emulator import compile_kernel, launch
from wgmma_emulator import WgmmaHostTargetInfo

import tilec
import tilec.language as tl
from tilec.dialects.scf import ForOp
from tilec.ir.parser import parse_module
from tilec.lowering import lower_module


@tilec.jit
def persistent(x_ptr, bias_ptr, out_ptr, count_ptr, T, K, BLOCK: tl.constexpr,
               NPROG: tl.constexpr, FLAT: tl.constexpr, BIAS: tl.constexpr):  # fmt: skip
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    seen = 0
    for t in tl.range(tl.program_id(0), T, NPROG, flatten=FLAT):
        offs = t * BLOCK + tl.arange(0, BLOCK)
        tl.store(count_ptr + t, tl.load(count_ptr + t) + 1)  # the prologue runs once a tile
        if BIAS:
            acc = tl.load(bias_ptr + offs)  # an inner init computed in the prologue
        else:
            acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for k in range(0, K):
            acc += tl.load(x_ptr + k * T * BLOCK + offs) * (k + 1)
        tl.store(out_ptr + offs, acc)
        total += acc
        seen += 1
    tl.store(out_ptr + T * BLOCK + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), total + seen)


PERSISTENT = {"x_ptr": "*fp32", "bias_ptr": "*fp32", "out_ptr": "*fp32", "count_ptr": "*i32",
              "T": "i32", "K": "i32"}  # fmt: skip


def _compile(kernel, signature, constants, backend="nvidia"):
    options = {"target": "sm_90a", "num_warps": 1} if backend == "nvidia" else {}
    return tilec.compile(kernel, signature, constants, backend=backend, **options)


def nested(gir: str) -> bool:
    """Whether `gir` has a loop inside a loop."""
    loops = [op for op in parse_module(gir, "k.gir").walk() if isinstance(op, ForOp)]
    return any(
        other is not loop and loop.is_ancestor_of(other) for loop in loops for other in loops
    )


def emulate(kernel, args: list, grid: tuple[int, ...]) -> None:
    module = parse_module(kernel.asm["gir"], "k.gir")
    lowered = lower_module(module, WgmmaHostTargetInfo(), kernel.metadata["kernel"])
    launch(compile_kernel(lowered.llvm_ir, lowered.name), lowered.params, args, grid,
           lowered.num_warps * 32)  # fmt: skip


def _reference(x, bias, tiles, k, block, nprog):
    out = np.zeros((tiles + nprog) * block, np.float32)
    parts = x[: max(k, 1) * tiles * block].reshape(max(k, 1), tiles, block)
    for t in range(tiles):
        acc = bias[t * block : (t + 1) * block].copy()
        for j in range(k):
            acc += parts[j, t] * (j + 1)
        out[t * block : (t + 1) * block] = acc
    for p in range(nprog):
        mine = range(p, tiles, nprog)
        rows = [out[t * block : (t + 1) * block] for t in mine]
        out[(tiles + p) * block : (tiles + p + 1) * block] = sum(rows, np.zeros(block)) + len(mine)
    return out


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize(("tiles", "k"), [(5, 3), (5, 1), (5, 0), (0, 3), (1, 4)])
def test_flattened_persistent_loop_matches_the_nest(tiles, k, bias):
    block, nprog = 32, 2
    rng = np.random.default_rng(tiles * 10 + k)
    x = rng.random(max(k, 1) * tiles * block + 1, dtype=np.float32)
    b = rng.random(tiles * block + 1, dtype=np.float32) * bias
    constants = dict(BLOCK=block, NPROG=nprog, FLAT=True, BIAS=bias)
    kernel = _compile(persistent, PERSISTENT, constants)
    assert not nested(kernel.asm["gir"])
    results = {}
    for side in ("interp", "nvidia"):
        out = np.zeros((tiles + nprog) * block, np.float32)
        count = np.zeros(tiles + 1, np.int32)
        args = [x, b, out, count, tiles, k]
        if side == "interp":
            persistent[(nprog,)](*args, **constants, backend="interp")
        else:
            emulate(kernel, args, (nprog,))
        np.testing.assert_array_equal(count[:tiles], 1)
        results[side] = out
    np.testing.assert_allclose(results["interp"], _reference(x, b, tiles, k, block, nprog),
                               rtol=1e-6)  # fmt: skip
    np.testing.assert_array_equal(results["nvidia"], results["interp"])


@tilec.jit
def fixed_inner(x_ptr, out_ptr, T, LB: tl.constexpr, UB: tl.constexpr, STEP: tl.constexpr):
    for t in tl.range(3, T, 2, flatten=True, num_stages=2):
        base = t * 100
        acc = 0
        for k in tl.range(LB, UB, STEP, num_stages=3):
            acc = acc * 3 + tl.load(x_ptr + base + k)
        tl.store(out_ptr + t, acc + t)


@pytest.mark.parametrize(("lb", "ub", "step"), [(0, 4, 1), (2, 11, 3), (5, 6, 1)])
def test_constant_inner_bounds_and_steps(lb, ub, step):
    tiles = 12
    x = np.arange(tiles * 100, dtype=np.int32) % 7
    signature = {"x_ptr": "*i32", "out_ptr": "*i32", "T": "i32"}
    kernel = _compile(fixed_inner, signature, dict(LB=lb, UB=ub, STEP=step))
    assert not nested(kernel.asm["gir"])
    if len(range(lb, ub, step)) > 1:  # one trip: canonicalize made it straight-line code
        assert "num_stages = 3" in kernel.asm["gir"]  # the larger of the two loops'
    out = np.zeros(tiles, np.int32)
    emulate(kernel, [x, out, tiles], (1,))
    expected = np.zeros(tiles, np.int32)
    for t in range(3, tiles, 2):
        acc = 0
        for k in range(lb, ub, step):
            acc = acc * 3 + int(x[t * 100 + k])
        expected[t] = acc + t
    np.testing.assert_array_equal(out, expected)


@tilec.jit
def triangle(out_ptr, T):
    for t in tl.range(0, T, flatten=True):
        acc = 0
        for k in range(0, t):  # a trip count that varies with t: not fused, as in Triton
            acc += k
        tl.store(out_ptr + t, acc)


def test_inner_bounds_varying_with_the_outer_loop_are_left_alone():
    kernel = _compile(triangle, {"out_ptr": "*i32", "T": "i32"}, {})
    assert nested(kernel.asm["gir"])
    out = np.zeros(6, np.int32)
    emulate(kernel, [out, 6], (1,))
    np.testing.assert_array_equal(out, [sum(range(t)) for t in range(6)])


@tilec.jit
def running_base(x_ptr, out_ptr, T, K, NPROG: tl.constexpr):
    base = tl.program_id(0) * 1000
    for t in tl.range(tl.program_id(0), T, NPROG, flatten=True):
        scale = base % 7 + 1  # the prologue reads the outer loop's carried value
        acc = 0.0
        for k in range(0, K):
            acc += tl.load(x_ptr + base + k) * scale  # so does the inner body
        tl.store(out_ptr + t, acc)
        base += K  # which the epilogue updates
    tl.store(out_ptr + T + tl.program_id(0), base)


@pytest.mark.parametrize("k", [0, 1, 5])
def test_an_outer_carried_value_read_in_the_prologue_and_the_body(k):
    tiles, nprog = 7, 2
    x = np.arange(2 * 1000 + tiles * 8, dtype=np.float32) % 13
    kernel = _compile(running_base, {"x_ptr": "*fp32", "out_ptr": "*fp32", "T": "i32", "K": "i32"},
                      dict(NPROG=nprog))  # fmt: skip
    assert not nested(kernel.asm["gir"])
    outs = {}
    for side in ("interp", "nvidia"):
        out = np.zeros(tiles + nprog, np.float32)
        if side == "interp":
            running_base[(nprog,)](x, out, tiles, k, NPROG=nprog, backend="interp")
        else:
            emulate(kernel, [x, out, tiles, k], (nprog,))
        outs[side] = out
    expected = np.zeros(tiles + nprog, np.float32)
    for p in range(nprog):
        base = p * 1000
        for t in range(p, tiles, nprog):
            expected[t] = sum(x[base + j] for j in range(k)) * (base % 7 + 1)
            base += k
        expected[tiles + p] = base
    np.testing.assert_array_equal(outs["interp"], expected)
    np.testing.assert_array_equal(outs["nvidia"], expected)
