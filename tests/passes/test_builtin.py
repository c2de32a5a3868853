"""The built-in plugin (`tilec.builtin_passes`): its passes, and the default order their declared
relations give."""

from __future__ import annotations

import textwrap

import tilec.dialects  # noqa: F401  (registers the ops the parser needs)
from tilec.builtin_passes import tilec_passes
from tilec.ir import parse_module, print_module
from tilec.passes.manager import PassManager


def test_default_pipeline_order_comes_from_declared_relations():
    manager = PassManager.from_classes(tilec_passes())
    assert [cls.name for cls in manager.pipeline(stages=("tir",))] == [
        "inline",
        "canonicalize",
        "combine-dot-add",
        "licm",
        "cse",
        "dce",
    ]
    assert [cls.name for cls in manager.pipeline(stages=("gir",))] == [
        "assign-layouts",
        "accelerate-matmul",
        "remove-layout-conversions",
        "fuse-nested-loops",
        "pipeline-loops",
        "warp-specialize",
    ]
    assert [cls.name for cls in manager.pipeline(["dce", "cse", "canonicalize"])] == [
        "canonicalize",
        "cse",
        "dce",
    ]


def test_default_pipeline_cleans_up_a_kernel():
    module = parse_module(
        textwrap.dedent(
            """\
            func.func @scale(%v: f32, %k: f32) -> f32 attributes {private = unit} {
              %m = arith.mulf %v, %k : f32
              tile.return %m
            }

            func.func @kernel(%p: !tile.ptr<f32>, %lb: i32, %ub: i32) {
              %one = arith.constant {value = 1 : i32} : i32
              %x = tile.load %p : f32
              scf.for %lb, %ub, %one {
              ^bb0(%i: i32):
                %two = arith.constant {value = 2.0 : f32} : f32
                %s = tile.call %x, %two {callee = @scale} : f32
                %unused = tile.call %s, %two {callee = @scale} : f32
                tile.store %p, %s
                scf.yield
              }
              tile.return
            }
            """
        )
    )
    PassManager.from_classes(tilec_passes()).run(module, stages=("tir",))
    assert print_module(module) == textwrap.dedent(
        """\
        func.func @kernel(%p: !tile.ptr<f32>, %lb: i32, %ub: i32) {
          %one = arith.constant {value = 1 : i32} : i32
          %two = arith.constant {value = 2.0 : f32} : f32
          %x = tile.load %p : f32
          %m = arith.mulf %x, %two : f32
          scf.for %lb, %ub, %one {
          ^bb0(%i: i32):
            tile.store %p, %m
            scf.yield
          }
          tile.return
        }
        """
    )
