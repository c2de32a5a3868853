"""combine-dot-add: `d + dot(a, b, 0)` (either order, addf or addi) becomes `dot(a, b, d)` where
the add was; a dot with another use, a nonzero accumulator or a float8 `max_num_imprecise_acc`
stays apart, as in Triton 3.6's combine pass."""

from __future__ import annotations

from pass_runner import run_pass

import tilec
from tilec.passes.combine_dot_add import CombineDotAdd

HEADER = """
func.func @f(%a: tensor<16x16xf16>, %b: tensor<16x16xf16>, %p: !tile.ptr<f32>) -> tensor<16x16xf32> {
  %z = arith.constant {value = dense<0.0> : tensor<16x16xf32>} : tensor<16x16xf32>
  %d = tile.splat %p : tensor<16x16x!tile.ptr<f32>>
  %acc = tile.load %d : tensor<16x16xf32>
"""


def combine(body: str) -> tuple[str, bool]:
    return run_pass(CombineDotAdd, HEADER + body + "}\n")


def test_accumulator_plus_dot_becomes_one_dot_where_the_add_was():
    out, changed = combine(
        """
  %t = tile.dot %a, %b, %z : tensor<16x16xf32>
  %other = tile.load %d : tensor<16x16xf32>
  %s = arith.addf %other, %t : tensor<16x16xf32>
  tile.return %s
"""
    )
    assert changed
    body = out.split("%acc = tile.load %d : tensor<16x16xf32>\n")[1]
    # the dot moves to the add: %other is loaded after the old dot
    assert body.splitlines()[:3] == [
        "  %other = tile.load %d : tensor<16x16xf32>",
        "  %s = tile.dot %a, %b, %other : tensor<16x16xf32>",
        "  tile.return %s",
    ]


def test_dot_plus_accumulator_and_integer_dots_combine_too():
    out, changed = combine(
        """
  %t = tile.dot %a, %b, %z {input_precision = "tf32"} : tensor<16x16xf32>
  %s = arith.addf %t, %acc : tensor<16x16xf32>
  tile.return %s
"""
    )
    assert changed
    assert '%s = tile.dot %a, %b, %acc {input_precision = "tf32"} : tensor<16x16xf32>' in out
    assert "arith.addf" not in out
    text = """
func.func @g(%a: tensor<16x32xi8>, %b: tensor<32x16xi8>, %acc: tensor<16x16xi32>) -> tensor<16x16xi32> {
  %z = arith.constant {value = dense<0> : tensor<16x16xi32>} : tensor<16x16xi32>
  %t = tile.dot %a, %b, %z : tensor<16x16xi32>
  %s = arith.addi %acc, %t : tensor<16x16xi32>
  tile.return %s
}
"""
    out, changed = run_pass(CombineDotAdd, text)
    assert changed
    assert "%s = tile.dot %a, %b, %acc : tensor<16x16xi32>" in out


def test_dots_that_must_stay_apart():
    cases = [
        # the dot's result has another use
        """
  %t = tile.dot %a, %b, %z : tensor<16x16xf32>
  %s = arith.addf %acc, %t : tensor<16x16xf32>
  %u = arith.addf %s, %t : tensor<16x16xf32>
  tile.return %u
""",
        # the accumulator is not zero
        """
  %t = tile.dot %a, %b, %acc : tensor<16x16xf32>
  %s = arith.addf %acc, %t : tensor<16x16xf32>
  tile.return %s
""",
        # a float8 dot that may sum in reduced precision
        """
  %t = tile.dot %a, %b, %z {max_num_imprecise_acc = 32 : i32} : tensor<16x16xf32>
  %s = arith.addf %acc, %t : tensor<16x16xf32>
  tile.return %s
""",
    ]
    for body in cases:
        out, changed = combine(body)
        assert not changed, body
        assert "arith.addf %" in out


def test_a_kernel_accumulating_with_plus_equals_compiles_to_one_dot_a_step():
    @tilec.jit
    def kernel(A, B, C, BLOCK: tilec.language.constexpr):
        tl = tilec.language
        r = tl.arange(0, BLOCK)
        acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
        for i in range(2):
            a = tl.load(A + i * BLOCK * BLOCK + r[:, None] * BLOCK + r[None, :])
            b = tl.load(B + r[:, None] * BLOCK + r[None, :])
            acc += tl.dot(a, b)
        tl.store(C + r[:, None] * BLOCK + r[None, :], acc)

    compiled = tilec.compile(
        kernel, {"A": "*fp16", "B": "*fp16", "C": "*fp32"}, {"BLOCK": 16}, backend="interp"
    )
    tir = compiled.asm["tir"]
    assert tir.count("tile.dot") == 1 and "arith.addf" not in tir, tir
