"""docs/ir-reference.md: its op tables are what `tilec.dialects.reference` generates from the op
classes, and every block of IR it shows parses, verifies and prints back to the same text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tilec.dialects  # noqa: F401  (fills OP_REGISTRY)
from tilec.dialects.reference import BEGIN, END, markdown_reference
from tilec.ir import OP_REGISTRY, parse_module, print_module, verify
from tilec.plugin.manager import load_ir_modules

load_ir_modules()  # the backends' layouts and ops (#gpu.mma, gpu.warp_group_dot) register as imported

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "ir-reference.md"
TEXT = REFERENCE.read_text()
BLOCKS = re.findall(r"```tir\n(.*?)```", TEXT, re.S)


def test_the_op_tables_are_generated_from_the_op_classes():
    start, end = TEXT.index(BEGIN), TEXT.index(END) + len(END) + 1
    assert TEXT[start:end] == markdown_reference(), (
        "docs/ir-reference.md's op tables are stale: replace the text between its markers with "
        "`python -c 'from tilec.dialects.reference import markdown_reference as m; print(m())'`"
    )


def test_every_registered_op_has_a_row_and_a_description():
    rows = {line.split("|")[1].strip(" `") for line in markdown_reference().splitlines()
            if line.startswith("| `")}  # fmt: skip
    assert rows == set(OP_REGISTRY)
    assert "(no description)" not in markdown_reference()


@pytest.mark.parametrize("text", BLOCKS, ids=lambda t: re.search(r"@(\w+)", t)[1])
def test_each_example_parses_verifies_and_prints_back(text):
    module = parse_module(text, "ir-reference.md")
    verify(module)
    assert print_module(module) == text


def test_the_page_shows_a_tir_and_a_gir_example():
    assert len(BLOCKS) >= 3
    assert any("#gpu.blocked" in block for block in BLOCKS)
