"""Vector add, masks, `other`, and out-of-bounds errors."""

from pathlib import Path

import numpy as np
import pytest
from tir_helpers import compile_tir

from tilec_interp.interpreter import InterpreterError, execute

EXAMPLE = Path(__file__).parents[2] / "examples" / "ir" / "vector_add.tir"


def test_vector_add_example(rng):
    module = compile_tir(EXAMPLE.read_text(), str(EXAMPLE))
    n = 98432
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    execute(module, "add_kernel", ((n + 1023) // 1024,), [x, y, out, n])
    np.testing.assert_array_equal(out, x + y)


def test_vector_add_in_small_chunks(rng, monkeypatch):
    import tilec_interp.interpreter as interp

    monkeypatch.setattr(interp, "MAX_CHUNK_ELEMENTS", 3 * 1024)
    module = compile_tir(EXAMPLE.read_text(), str(EXAMPLE))
    n = 10000
    x, y = rng.standard_normal((2, n)).astype(np.float32)
    out = np.zeros(n, np.float32)
    execute(module, "add_kernel", (10,), [x, y, out, n])
    np.testing.assert_array_equal(out, x + y)


UNMASKED = """\
func.func @copy(%x_ptr: !tile.ptr<f32>, %out_ptr: !tile.ptr<f32>) {
  %pid = tile.program_id {axis = 0 : i32} : i32
  %block = arith.constant {value = 128 : i32} : i32
  %start = arith.muli %pid, %block : i32
  %range = tile.make_range {start = 0 : i32, end = 128 : i32} : tensor<128xi32>
  %s = tile.splat %start : tensor<128xi32>
  %offs = arith.addi %s, %range : tensor<128xi32>
  %xb = tile.splat %x_ptr : tensor<128x!tile.ptr<f32>>
  %xp = tile.addptr %xb, %offs : tensor<128x!tile.ptr<f32>>
  %x = tile.load %xp : tensor<128xf32>
  %ob = tile.splat %out_ptr : tensor<128x!tile.ptr<f32>>
  %op = tile.addptr %ob, %offs : tensor<128x!tile.ptr<f32>>
  tile.store %op, %x
  tile.return
}
"""


def test_out_of_bounds_load_names_location_program_and_offset(rng):
    module = compile_tir(UNMASKED, "copy.tir")
    x = rng.standard_normal(300).astype(np.float32)
    out = np.zeros(384, np.float32)
    with pytest.raises(InterpreterError) as info:
        execute(module, "copy", (3,), [x, out])
    message = str(info.value)
    assert "copy.tir:10:" in message
    assert "tile.load" in message
    assert "program (2,)" in message
    assert "element (44,)" in message
    assert "element offset 300 " in message
    assert "300 elements" in message


def test_out_of_bounds_store(rng):
    module = compile_tir(UNMASKED, "copy.tir")
    x = rng.standard_normal(384).astype(np.float32)
    out = np.zeros(200, np.float32)
    with pytest.raises(
        InterpreterError, match=r"copy.tir:13:.*tile.store.*program \(1,\).*offset 200 "
    ):
        execute(module, "copy", (3,), [x, out])


MASKED_OTHER = """\
func.func @load_other(%x_ptr: !tile.ptr<f32>, %out_ptr: !tile.ptr<f32>, %n: i32, %fill: f32) {
  %pid = tile.program_id {axis = 0 : i32} : i32
  %block = arith.constant {value = 64 : i32} : i32
  %start = arith.muli %pid, %block : i32
  %range = tile.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
  %s = tile.splat %start : tensor<64xi32>
  %offs = arith.addi %s, %range : tensor<64xi32>
  %ns = tile.splat %n : tensor<64xi32>
  %mask = arith.cmpi %offs, %ns {predicate = "slt"} : tensor<64xi1>
  %other = tile.splat %fill : tensor<64xf32>
  %xb = tile.splat %x_ptr : tensor<64x!tile.ptr<f32>>
  %xp = tile.addptr %xb, %offs : tensor<64x!tile.ptr<f32>>
  %x = tile.load %xp, %mask, %other : tensor<64xf32>
  %ob = tile.splat %out_ptr : tensor<64x!tile.ptr<f32>>
  %op = tile.addptr %ob, %offs : tensor<64x!tile.ptr<f32>>
  tile.store %op, %x
  tile.return
}
"""


def test_masked_load_takes_other(rng):
    module = compile_tir(MASKED_OTHER)
    n = 150
    x = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(192, np.float32)
    fill = float(rng.uniform(1, 2))
    execute(module, "load_other", (3,), [x, out, n, fill])
    np.testing.assert_array_equal(out[:n], x)
    np.testing.assert_array_equal(out[n:], np.float32(fill))


def test_wrong_argument_count():
    module = compile_tir(MASKED_OTHER)
    with pytest.raises(TypeError, match="takes 4 arguments"):
        execute(module, "load_other", (1,), [np.zeros(4, np.float32)])


def test_backend_executes_tir(rng):
    from tilec_interp.backend import InterpBackend

    module = compile_tir(EXAMPLE.read_text(), str(EXAMPLE))
    n = 3000
    x, y = rng.standard_normal((2, n)).astype(np.float32)
    out = np.zeros(n, np.float32)
    InterpBackend().execute(module, "add_kernel", (3,), [x, y, out, n])
    np.testing.assert_array_equal(out, x + y)


def test_non_contiguous_buffer_is_addressed_in_place(rng):
    """A strided view's pointer is its first element's address, as on a GPU (Triton's rule):
    the kernel's offsets address the memory the view spans, not a compacted copy."""
    module = compile_tir(EXAMPLE.read_text(), str(EXAMPLE))
    n = 1500
    x, y = rng.standard_normal((2, n)).astype(np.float32)
    storage = np.zeros(2 * n, np.float32)
    out = storage[::2]  # spans 2n - 1 elements; add_kernel writes the first n contiguously
    execute(module, "add_kernel", (2,), [x, y, out, n])
    np.testing.assert_array_equal(storage[:n], x + y)
    assert not storage[n:].any()
