"""inline: calls are replaced by the callee's body with arguments mapped, callees first; private
functions left uncalled go, public ones stay; recursion is an error naming the cycle."""

from __future__ import annotations

import textwrap

import pytest
from pass_runner import run_pass

import tilec.dialects  # noqa: F401  (registers the ops the parser needs)
from tilec.ir import parse_module
from tilec.passes.base import PassContext
from tilec.passes.inline import Inline, InlineError


def inline(text: str) -> tuple[str, bool]:
    return run_pass(Inline, text)


def test_arguments_are_remapped_and_returned_values_replace_results():
    out, changed = inline(
        """
        func.func @sub_and_add(%a: i32, %b: i32) -> (i32, i32) attributes {private = unit} {
          %d = arith.subi %a, %b : i32
          %s = arith.addi %a, %b : i32
          tile.return %d, %s
        }

        func.func @kernel(%x: i32, %y: i32, %p: !tile.ptr<i32>) {
          %r0, %r1 = tile.call %y, %x {callee = @sub_and_add} : i32, i32
          %m = arith.muli %r0, %r1 : i32
          tile.store %p, %m
          tile.return
        }
        """
    )
    assert changed
    assert out == textwrap.dedent(
        """\
        func.func @kernel(%x: i32, %y: i32, %p: !tile.ptr<i32>) {
          %d = arith.subi %y, %x : i32
          %s = arith.addi %y, %x : i32
          %m = arith.muli %d, %s : i32
          tile.store %p, %m
          tile.return
        }
        """
    )


def test_nested_calls_are_inlined_and_only_private_functions_are_removed():
    out, _ = inline(
        """
        func.func @square(%v: i32) -> i32 attributes {private = unit} {
          %sq = arith.muli %v, %v : i32
          tile.return %sq
        }

        func.func @helper(%a: i32) -> i32 {
          %h = tile.call %a {callee = @square} : i32
          %h1 = arith.addi %h, %a : i32
          tile.return %h1
        }

        func.func @kernel(%x: i32, %c: i1) -> i32 {
          %r = scf.if %c : i32 {
            %in_branch = tile.call %x {callee = @helper} : i32
            scf.yield %in_branch
          } {
            scf.yield %x
          }
          tile.return %r
        }
        """
    )
    assert out == textwrap.dedent(
        """\
        func.func @helper(%a: i32) -> i32 {
          %sq = arith.muli %a, %a : i32
          %h1 = arith.addi %sq, %a : i32
          tile.return %h1
        }

        func.func @kernel(%x: i32, %c: i1) -> i32 {
          %r = scf.if %c : i32 {
            %sq = arith.muli %x, %x : i32
            %h1 = arith.addi %sq, %x : i32
            scf.yield %h1
          } {
            scf.yield %x
          }
          tile.return %r
        }
        """
    )


def test_uncalled_private_functions_go_even_without_calls():
    out, changed = inline(
        """
        func.func @unused(%v: i32) -> i32 attributes {private = unit} {
          tile.return %v
        }

        func.func @kernel(%x: i32) -> i32 {
          tile.return %x
        }
        """
    )
    assert changed
    assert "@unused" not in out
    assert "@kernel" in out


def test_module_without_calls_is_unchanged():
    text = """\
        func.func @kernel(%x: i32) -> i32 {
          tile.return %x
        }
        """
    out, changed = inline(text)
    assert not changed
    assert out == textwrap.dedent(text)


def test_recursion_is_an_error_that_names_the_cycle():
    module = parse_module(
        textwrap.dedent(
            """\
            func.func @even(%v: i32) -> i32 attributes {private = unit} {
              %r = tile.call %v {callee = @odd} : i32
              tile.return %r
            }

            func.func @odd(%v: i32) -> i32 attributes {private = unit} {
              %r = tile.call %v {callee = @even} : i32
              tile.return %r
            }

            func.func @kernel(%x: i32) -> i32 {
              %r = tile.call %x {callee = @odd} : i32
              tile.return %r
            }
            """
        ),
        "test.tir",
    )
    with pytest.raises(InlineError) as info:
        Inline().run(module, PassContext())
    message = str(info.value)
    assert "@even -> @odd -> @even" in message
    assert message.startswith("test.tir:7:8: error: 'tile.call' op cannot inline recursive calls")


def test_self_recursion_is_an_error():
    module = parse_module(
        "func.func @f(%v: i32) -> i32 {\n"
        "  %r = tile.call %v {callee = @f} : i32\n"
        "  tile.return %r\n"
        "}\n"
    )
    with pytest.raises(InlineError, match="recursive calls: @f -> @f"):
        Inline().run(module, PassContext())
