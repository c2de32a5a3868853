"""`tilec_interp.waiting`: which while loops may wait for another program, on hand-written tir."""

import pytest
from tir_helpers import compile_tir

from tilec_interp.waiting import waiting_loops

# {load} is what the loop reads, {store} what the function writes after the loop.
KERNEL = """
func.func @k(%a: !tile.ptr<i32>, %b: !tile.ptr<i32>, %n: i64) {{
  %zero = arith.constant {{value = 0 : i32}} : i32
  %one = arith.constant {{value = 1 : i32}} : i32
  %r = scf.while %zero : i32 {{
  ^bb0(%seen: i32):
    %go = arith.cmpi %seen, %zero {{predicate = "eq"}} : i1
    scf.condition %go, %seen
  }} {{
  ^bb0(%last: i32):
    {load}
    scf.yield %v
  }}
  {store}
  tile.return
}}
"""
LOAD_A = "%v = tile.load %a : i32"
LOAD_A_OFFSET = "%p = tile.addptr %a, %one : !tile.ptr<i32>\n    %v = tile.load %p : i32"
LOAD_INT_PTR = "%p = tile.int_to_ptr %n : !tile.ptr<i32>\n    %v = tile.load %p : i32"
ATOMIC_B = '%v = tile.atomic_rmw %b, %zero {kind = "add", sem = "acq_rel", scope = "gpu"} : i32'
NO_MEMORY = "%v = arith.addi %last, %one : i32"
STORE_A = "tile.store %a, %one"
STORE_B = "tile.store %b, %one"


@pytest.mark.parametrize(
    ("load", "store", "waits"),
    [
        (LOAD_A, STORE_A, True),  # reads what the function writes (through the carried value)
        (LOAD_A_OFFSET, STORE_A, True),  # the same argument at another offset
        (LOAD_A, STORE_B, False),  # reads memory nothing writes
        (LOAD_A, "", False),  # writes nothing at all
        (LOAD_INT_PTR, STORE_B, True),  # a pointer whose argument cannot be told
        (ATOMIC_B, "", True),  # an atomic: other programs' atomics change what it reads
        (NO_MEMORY, STORE_A, False),  # the exit reads no memory
    ],
)
def test_loops_whose_exit_reads_written_memory_wait(load, store, waits):
    module = compile_tir(KERNEL.format(load=load, store=store))
    assert bool(waiting_loops(module)) is waits
