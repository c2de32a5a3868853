"""The frontend compiles real kernels to tile IR that verifies, with the expected ops and locations."""

import inspect
from pathlib import Path

from frontend_kernels import (
    add_kernel,
    branchy_kernel,
    builtins_kernel,
    matmul_kernel,
    softmax_kernel,
    while_kernel,
)

from tilec.frontend import compile_to_tir
from tilec.ir import FileLineColLoc, verify
from tilec.ir.printer import print_module

KERNELS_FILE = inspect.getsourcefile(add_kernel.fn)
KERNEL_LINES = Path(KERNELS_FILE).read_text().splitlines()


def line_of(text: str) -> int:
    """The 1-based line of the kernels file holding `text` (which must occur once)."""
    hits = [i + 1 for i, line in enumerate(KERNEL_LINES) if text in line]
    assert len(hits) == 1, hits
    return hits[0]


def op_names(module) -> list[str]:
    return [op.name for op in module.walk()]


def compile_vector_add():
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}
    return compile_to_tir(add_kernel, signature, {"BLOCK_SIZE": 1024})


VECTOR_ADD_TIR = """\
func.func @add_kernel(%x_ptr: !tile.ptr<f32>, %y_ptr: !tile.ptr<f32>, %output_ptr: !tile.ptr<f32>, %n_elements: i32) {
  %pid = tile.program_id {axis = 0 : i32} : i32
  %0 = arith.constant {value = 1024 : i32} : i32
  %block_start = arith.muli %pid, %0 : i32
  %1 = tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
  %2 = tile.splat %block_start : tensor<1024xi32>
  %offsets = arith.addi %2, %1 : tensor<1024xi32>
  %3 = tile.splat %n_elements : tensor<1024xi32>
  %mask = arith.cmpi %offsets, %3 {predicate = "slt"} : tensor<1024xi1>
  %4 = tile.splat %x_ptr : tensor<1024x!tile.ptr<f32>>
  %5 = tile.addptr %4, %offsets : tensor<1024x!tile.ptr<f32>>
  %x = tile.load %5, %mask : tensor<1024xf32>
  %6 = tile.splat %y_ptr : tensor<1024x!tile.ptr<f32>>
  %7 = tile.addptr %6, %offsets : tensor<1024x!tile.ptr<f32>>
  %y = tile.load %7, %mask : tensor<1024xf32>
  %output = arith.addf %x, %y : tensor<1024xf32>
  %8 = tile.splat %output_ptr : tensor<1024x!tile.ptr<f32>>
  %9 = tile.addptr %8, %offsets : tensor<1024x!tile.ptr<f32>>
  tile.store %9, %output, %mask
  tile.return
}
"""


def test_vector_add_prints_the_expected_tir():
    module = compile_vector_add()
    verify(module)
    assert str(module) == VECTOR_ADD_TIR


def test_vector_add_ops_carry_the_kernels_file_and_line():
    module = compile_vector_add()
    locations = {op.name: op.location for op in module.walk() if op.name != "builtin.module"}
    assert locations["tile.program_id"] == FileLineColLoc(
        KERNELS_FILE, line_of("pid = tl.program_id(axis=0)"), 11
    )
    assert locations["tile.make_range"] == FileLineColLoc(
        KERNELS_FILE, line_of("offsets = block_start + tl.arange"), 29
    )
    assert locations["tile.store"].line == line_of("tl.store(output_ptr + offsets")
    assert locations["func.func"].line == line_of("def add_kernel(")
    assert all(
        isinstance(op.location, FileLineColLoc)
        for op in module.walk()
        if op.name != "builtin.module"
    )
    assert f'loc("{KERNELS_FILE}":{line_of("output = x + y")}:14)' in print_module(
        module, locations=True
    )


def test_softmax_reduces_with_combiners():
    signature = {
        "out_ptr": "*fp32",
        "in_ptr": "*fp32",
        "in_row_stride": "i32",
        "out_row_stride": "i32",
        "n_cols": "i32",
    }
    module = compile_to_tir(softmax_kernel, signature, {"BLOCK": 1024})
    verify(module)
    names = op_names(module)
    reduces = [i for i, n in enumerate(names) if n == "tile.reduce"]
    assert len(reduces) == 2
    assert names[reduces[0] + 1 : reduces[0] + 3] == ["arith.maxnumf", "tile.reduce.return"]
    assert names[reduces[1] + 1 : reduces[1] + 3] == ["arith.addf", "tile.reduce.return"]
    text = str(module)
    assert "%x = tile.load %4, %mask, %6 : tensor<1024xf32>" in text
    assert "%5 = arith.constant {value = -inf : f32} : f32" in text
    assert "%num = math.exp %x_1 : tensor<1024xf32>" in text
    assert "arith.divf %num, %" in text


def test_matmul_carries_the_accumulator_through_the_k_loop():
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32"}
    signature["K"] = "i32"
    module = compile_to_tir(matmul_kernel, signature, {"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 16})
    verify(module)
    text = str(module)
    assert "%acc = arith.constant {value = dense<0.0> : tensor<32x64xf32>}" in text
    assert "%acc_1 = scf.for %8, %K, %9, %acc : tensor<32x64xf32> {" in text
    assert "^bb0(%k: i32, %acc_2: tensor<32x64xf32>):" in text
    assert "%a = tile.load %" in text and ": tensor<32x16xf16>" in text
    assert "%acc_3 = tile.dot %a, %b, %acc_2 : tensor<32x64xf32>" in text
    assert "scf.yield %acc_3" in text
    assert "%c = arith.truncf %acc_1 : tensor<32x64xf16>" in text
    names = op_names(module)
    assert names.index("scf.for") < names.index("tile.dot") < names.index("scf.yield")
    assert names.count("tile.expand_dims") == 8


def test_runtime_if_loop_carried_sum_inlined_call_and_static_range():
    signature = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "flag": "i32"}
    module = compile_to_tir(branchy_kernel, signature, {"BLOCK": 128, "USE_SCALE": True})
    verify(module)
    text = str(module)
    assert "%total_1 = scf.for %0, %n, %1, %total : tensor<128xf32> {" in text
    assert "%total_3 = arith.addf %total_2, %" in text
    assert "arith.cmpi %flag, %" in text and '{predicate = "sgt"} : i1' in text
    assert "%total_4 = scf.if %" in text
    assert "%total_6 = arith.negf %total_1 : tensor<128xf32>" in text
    # scale() is inlined, and the static_range loop unrolls into two adds.
    assert "tile.call" not in text
    assert "%total_7 = arith.mulf %total_4, %" in text
    assert text.count("arith.addf %total_") == 3
    if_op = next(op for op in module.walk() if op.name == "scf.if")
    assert if_op.location.line == line_of("if flag > 0:")


def test_constexpr_if_compiles_only_the_taken_branch():
    signature = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "flag": "i32"}
    with_scale = compile_to_tir(branchy_kernel, signature, {"BLOCK": 128, "USE_SCALE": True})
    without = compile_to_tir(branchy_kernel, signature, {"BLOCK": 128, "USE_SCALE": False})
    verify(without)
    assert op_names(with_scale).count("arith.mulf") == 2
    assert op_names(without).count("arith.mulf") == 1


WHILE_TIR = """\
func.func @while_kernel(%x_ptr: !tile.ptr<f32>, %n: i32) {
  %0 = arith.constant {value = 0.0 : f32} : f32
  %1 = arith.constant {value = 0 : i32} : i32
  %total, %i = scf.while %0, %1 : f32, i32 {
  ^bb0(%total_1: f32, %i_1: i32):
    %2 = arith.cmpi %i_1, %n {predicate = "slt"} : i1
    scf.condition %2, %total_1, %i_1
  } {
  ^bb0(%total_2: f32, %i_2: i32):
    %3 = tile.addptr %x_ptr, %i_2 : !tile.ptr<f32>
    %4 = tile.load %3 : f32
    %total_3 = arith.addf %total_2, %4 : f32
    %5 = arith.constant {value = 1 : i32} : i32
    %i_3 = arith.addi %i_2, %5 : i32
    scf.yield %total_3, %i_3
  }
  tile.store %x_ptr, %total
  tile.return
}
"""


def test_while_loop_becomes_scf_while_with_carried_values():
    module = compile_to_tir(while_kernel, {"x_ptr": "*fp32", "n": "i32"}, {})
    verify(module)
    assert str(module) == WHILE_TIR


def test_language_builtins_compile_and_verify():
    signature = {"x_ptr": "*fp32", "u_ptr": "*u32", "i_ptr": "*i32", "n": "i32"}
    module = compile_to_tir(builtins_kernel, signature, {"BLOCK": 64})
    verify(module)
    names = set(op_names(module))
    expected = {
        "arith.select", "math.exp", "math.sqrt", "math.absf", "math.fma", "math.log",
        "math.log2", "math.exp2", "math.rsqrt", "math.sin", "math.cos", "math.erf",
        "arith.minnumf", "arith.maxnumf", "arith.shrui", "arith.divui", "arith.remui",
        "arith.shli", "arith.xori", "arith.andi", "arith.ori", "arith.subi", "arith.truncf",
        "arith.sitofp", "arith.uitofp", "arith.divf", "tile.broadcast", "tile.reshape",
        "tile.trans", "tile.reduce", "tile.num_programs", "arith.divsi", "tile.atomic_rmw",
        "tile.print", "tile.barrier", "arith.extf",
    }  # fmt: skip
    assert expected - names == set()


def test_every_kernels_tir_round_trips_through_the_parser():
    from tilec.ir import parse_module

    softmax_signature = {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_row_stride": "i32"}
    softmax_signature |= {"out_row_stride": "i32", "n_cols": "i32"}
    matmul_signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16"}
    matmul_signature |= {"M": "i32", "N": "i32", "K": "i32"}
    modules = [
        compile_vector_add(),
        compile_to_tir(softmax_kernel, softmax_signature, {"BLOCK": 256}),
        compile_to_tir(
            matmul_kernel, matmul_signature, {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16}
        ),
        compile_to_tir(
            branchy_kernel,
            {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "flag": "i32"},
            {"BLOCK": 128, "USE_SCALE": True},
        ),
        compile_to_tir(while_kernel, {"x_ptr": "*fp32", "n": "i32"}, {}),
        compile_to_tir(
            builtins_kernel,
            {"x_ptr": "*fp32", "u_ptr": "*u32", "i_ptr": "*i32", "n": "i32"},
            {"BLOCK": 64},
        ),
    ]
    for module in modules:
        text = str(module)
        reparsed = parse_module(text)
        verify(reparsed)
        assert str(reparsed) == text
