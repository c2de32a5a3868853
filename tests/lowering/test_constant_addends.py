"""An integer add keeps a register's constant addend outermost (`elementwise.add_constant_last`):
`offs = start + tl.arange(0, BLOCK)` is `(start + thread's first element) + constant` a register,
so LLVM moves the constant through `offs * 128` and NVPTX into the load's immediate offset, as in
Triton's PTX: the attention backward's preprocess kernel (benchmarks/sweep_attention.py) loads a
thread's 8 rows of Out and dO from one base address each (`[%rd+2048]`, ...), where it computed
a 64-bit address a load before (440 -> 360 SASS instructions at d128, Triton 336). Addition
wraps, so the reassociated sum is the same; the example backend (the core's LLVM lowering on the
host) gives the interpreter's results where the sums overflow."""

from __future__ import annotations

import re

import numpy as np
import pytest
from llvmlite import ir

import tilec
import tilec.language as tl
from tilec.lowering.elementwise import add_constant_last
from tilec.plugin.manager import load_backends


@tilec.jit
def row_sums_kernel(x_ptr, y_ptr, out_ptr, N, BLOCK_M: tl.constexpr, D: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    head = tl.program_id(1).to(tl.int64)
    place = head * N * D + rows[:, None] * D + tl.arange(0, D)[None, :]
    x = tl.load(x_ptr + place).to(tl.float32)
    y = tl.load(y_ptr + place).to(tl.float32)
    tl.store(out_ptr + head * N + rows, tl.sum(x * y, axis=1))


def _ptx() -> str:
    signature = {"x_ptr": "*fp16", "y_ptr": "*fp16", "out_ptr": "*fp32", "N": "i32"}
    compiled = tilec.compile(row_sums_kernel, signature, {"BLOCK_M": 64, "D": 128},
                             backend="nvidia", target="sm_90a", num_warps=4,
                             divisibility=list(signature))  # fmt: skip
    return compiled.asm["ptx"]


def test_a_threads_rows_load_from_one_address_at_immediate_offsets():
    # 64 x 128 fp16 over 128 threads, 16 bytes a register: 8 rows a thread, 8 rows apart
    loads = re.findall(r"ld\.global\.v4\.b32\s+\{[^}]*\},\s*\[(%rd\d+)(?:\+(\d+))?\]", _ptx())
    assert len(loads) == 16
    bases = {base for base, _ in loads}
    assert len(bases) == 2, loads  # one address per tensor
    assert sorted(int(offset or 0) for _, offset in loads) == sorted(
        2 * [2048 * k for k in range(8)]
    )


def _function() -> tuple[ir.IRBuilder, list[ir.Argument]]:
    module = ir.Module()
    i32 = ir.IntType(32)
    fn = ir.Function(module, ir.FunctionType(i32, [i32, i32]), "f")
    return ir.IRBuilder(fn.append_basic_block()), list(fn.args)


@pytest.mark.parametrize("swap", [False, True])
def test_the_constant_of_either_operand_is_added_last(swap):
    b, (x, z) = _function()
    inner = b.add(z, ir.Constant(z.type, 8))
    total = add_constant_last(b, *((inner, x) if swap else (x, inner)))
    assert total.opname == "add" and total.operands[1].constant == 8
    first = total.operands[0]
    assert first.opname == "add" and {id(v) for v in first.operands} == {id(x), id(z)}


def test_other_sums_are_one_add():
    b, (x, z) = _function()
    flagged = b.add(z, ir.Constant(z.type, 8), flags=("nsw",))  # keeps its own flags: left alone
    for left, right in ((x, z), (x, flagged), (ir.Constant(x.type, 3), b.add(z, z))):
        total = add_constant_last(b, left, right)
        assert total.opname == "add" and [id(v) for v in total.operands] == [id(left), id(right)]


@tilec.jit
def wrapping_kernel(out_ptr, start, BLOCK: tl.constexpr):
    offs = start + (tl.arange(0, BLOCK) + 1000)
    tl.store(out_ptr + tl.arange(0, BLOCK), offs * 7)


@pytest.mark.parametrize("start", [0, 2**31 - 1100, -(2**31) + 5])
def test_reassociated_sums_wrap_as_the_interpreters(start):
    backend = load_backends().get("hostcpu")
    if backend is None or not backend.is_available():
        pytest.skip("the example backend (examples/plugins/tilec-hostcpu) is not available")
    results = {}
    for name in ("hostcpu", "interp"):
        out = np.zeros(256, np.int32)
        wrapping_kernel[(1,)](out, start, BLOCK=256, backend=name, num_warps=2)
        results[name] = out
    want = ((start + 1000 + np.arange(256, dtype=np.int64)) * 7 + 2**31) % 2**32 - 2**31
    np.testing.assert_array_equal(results["interp"], want.astype(np.int32))
    np.testing.assert_array_equal(results["hostcpu"], results["interp"])


def test_a_phi_keeps_its_sum():
    """A loop's induction variable plus a register's index stays `first + (z + c)`."""
    b, (x, z) = _function()
    loop = b.append_basic_block("loop")
    b.branch(loop)
    b.position_at_end(loop)
    first = b.phi(x.type)
    first.add_incoming(x, b.function.entry_basic_block)
    inner = b.add(z, ir.Constant(z.type, 8))
    for left, right in ((first, inner), (inner, first)):
        total = add_constant_last(b, left, right)
        assert total.opname == "add" and [id(v) for v in total.operands] == [id(left), id(right)]


@tilec.jit
def cross_entropy_kernel(logits_ptr, target_ptr, loss_ptr, stride, V, BLOCK: tl.constexpr):
    # benchmarks/sweep_kernels.py's sweep_cross_entropy
    row = tl.program_id(0).to(tl.int64)
    start = logits_ptr + row * stride
    cols = tl.arange(0, BLOCK)
    lane_max = tl.full([BLOCK], -1.0e30, dtype=tl.float32)
    lane_sum = tl.zeros([BLOCK], dtype=tl.float32)
    for first in range(0, V, BLOCK):
        x = tl.load(start + first + cols, mask=first + cols < V, other=-float("inf"))
        x = x.to(tl.float32)
        new_max = tl.maximum(lane_max, x)
        lane_sum = lane_sum * tl.exp(lane_max - new_max) + tl.exp(x - new_max)
        lane_max = new_max
    top = tl.max(lane_max, axis=0)
    total = tl.sum(lane_sum * tl.exp(lane_max - top), axis=0)
    picked = tl.load(start + tl.load(target_ptr + row)).to(tl.float32)
    tl.store(loss_ptr + row, tl.log(total) + top - picked)


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_a_loops_loads_add_the_threads_offset_in_the_loop(dtype):
    """The sweep's cross-entropy loop (4096 columns, 8 warps) addresses its 16-byte loads as
    Triton's PTX does, `(row base + first * size) + thread offset`, the offset computed once
    before the loop. With `first + arange` reassociated, LLVM hoisted `row base + thread offset`
    instead; on that form ptxas put a loop-carried maximum in the second load's destination
    registers on sm_90a, so the second load waited for the first one's data (0.93x Triton)."""
    signature = {"logits_ptr": f"*{dtype}", "target_ptr": "*i64", "loss_ptr": "*fp32",
                 "stride": "i32", "V": "i32"}  # fmt: skip
    ptx = tilec.compile(cross_entropy_kernel, signature, {"BLOCK": 4096}, backend="nvidia",
                        target="sm_90a", num_warps=8,
                        divisibility=list(signature)).asm["ptx"]  # fmt: skip
    lines = ptx.splitlines()
    back = next(i for i, t in enumerate(lines) if re.search(r"bra\s+\$L__BB\d+_\d+;", t)
                and any(t.split()[-1].rstrip(";") + ":" == s.strip() for s in lines[:i]))  # fmt: skip
    label = lines[back].split()[-1].rstrip(";") + ":"
    head = next(i for i, t in enumerate(lines) if t.strip() == label)
    defined = {}
    for i, text in enumerate(lines):
        m = re.match(r"\s*(\S+)\s+(%rd\d+),", text)
        if m:
            defined[m.group(2)] = (head < i < back, m.group(1))
    address = next(
        m.group(1)
        for t in lines[head:back]
        if (m := re.search(r"ld\.global\.v4\.b32\s+\{[^}]*\},\s*\[(%rd\d+)\]", t))
    )
    inside, opcode = defined[address]
    assert inside and opcode == "add.s64", (address, opcode)
    adds = [t for t in lines[head:back] if re.match(rf"\s*add\.s64\s+{address},", t)]
    operands = re.findall(r"%rd\d+", adds[0])[1:]
    invariant = [r for r in operands if not defined[r][0]]
    assert len(invariant) == 1, adds
    assert not defined[invariant[0]][1].startswith("add"), (adds, defined[invariant[0]])
