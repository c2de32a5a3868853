"""Every name of Triton 3.6's `tl.__all__` exists in `tilec.language` or has a row in
docs/triton-names.md saying why it is absent; the table and its count cannot go stale."""

import re
from pathlib import Path

import tilec.language as tl
from tilec.language.extra import libdevice

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "docs" / "triton-names.md"
TRITON_ALL = Path(__file__).with_name("triton_3_6_language_all.txt")


def triton_names() -> list[str]:
    lines = TRITON_ALL.read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def absent_rows() -> dict[str, str]:
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \|", TABLE.read_text(), re.MULTILINE)
    return {name: reason.strip() for name, reason in rows}


def test_the_copy_of_triton_all_is_complete():
    names = triton_names()
    assert len(names) == len(set(names)) == 140
    assert {"load", "dot", "randint4x", "make_block_ptr", "PropagateNan"} <= set(names)


def test_every_triton_name_exists_or_has_a_row():
    rows = absent_rows()
    missing = [n for n in triton_names() if not hasattr(tl, n) and n not in rows]
    assert not missing, f"add these to tilec.language or to {TABLE.name}: {missing}"


def test_no_row_names_a_name_that_exists():
    stale = [n for n in absent_rows() if hasattr(tl, n)]
    assert not stale, f"remove these rows from {TABLE.name}, the names exist now: {stale}"
    assert set(absent_rows()) <= set(triton_names())
    assert all(reason for reason in absent_rows().values())


def test_the_count_in_the_table_is_current():
    present = sum(hasattr(tl, n) for n in triton_names())
    match = re.search(r"\*\*(\d+) of the (\d+)\*\*", TABLE.read_text())
    assert match, "the table states how many names exist"
    assert (int(match[1]), int(match[2])) == (present, len(triton_names()))


def test_the_libdevice_count_in_the_table_is_current():
    match = re.search(r"provide (\d+) libdevice functions", TABLE.read_text())
    assert match, "the table states how many libdevice functions exist"
    assert int(match[1]) == len(libdevice.NAMES)
    assert "asin" in libdevice.NAMES and "_asin_small" not in libdevice.NAMES
