"""The one way the per-pass tests run a pass: parse, verify, run, verify again, print."""

from __future__ import annotations

import textwrap

import tilec.dialects  # noqa: F401  (registers the ops the parser needs)
from tilec.ir import parse_module, print_module, verify
from tilec.passes.base import Pass, PassContext


def run_pass(pass_class: type[Pass], text: str, **options: object) -> tuple[str, bool]:
    """The printed module after `pass_class` ran on `text`, and whether the pass reported a change."""
    module = parse_module(textwrap.dedent(text), "test.tir")
    verify(module)
    changed = pass_class(options).run(module, PassContext())
    verify(module)
    return print_module(module), changed
