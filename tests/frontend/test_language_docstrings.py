"""Every public callable of `tilec.language` has a docstring; the markers' first line is the
call with Triton 3.6's parameter names (issue 14)."""

from __future__ import annotations

import inspect
import pydoc
from types import ModuleType

import pytest

import tilec
import tilec.language as tl
from tilec.language.docs import DOCS
from tilec.language.extra import libdevice
from tilec.language.extra.cuda import libdevice as cuda_libdevice


def _public_callables(module: ModuleType) -> list[str]:
    return sorted(
        name
        for name in dir(module)
        if not name.startswith("_")
        and callable(getattr(module, name))
        and not inspect.isclass(getattr(module, name))
    )


MODULES = [tl, tl.math, libdevice, cuda_libdevice]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_every_public_callable_has_a_docstring(module: ModuleType) -> None:
    missing = [
        n for n in _public_callables(module) if not (getattr(module, n).__doc__ or "").strip()
    ]
    assert missing == []


def test_every_marker_has_docs() -> None:
    assert sorted(set(tl.BUILTIN_NAMES) - set(DOCS)) == []
    assert sorted(set(DOCS) - set(tl.BUILTIN_NAMES)) == []


def test_marker_docstrings_are_short_and_shaped() -> None:
    """The call, a blank line, then at most 4 lines of at most 100 characters after it."""
    for name, doc in DOCS.items():
        lines = doc.splitlines()
        assert len(lines) >= 3 and lines[1] == "" and len(lines) <= 6, name
        assert all(len(line) <= 100 for line in lines[2:]), name


def test_marker_docstrings_start_with_the_call() -> None:
    markers = [n for n in tl.BUILTIN_NAMES if not inspect.isclass(getattr(tl, n))]
    assert "load" in markers and "dot" in markers
    for name in markers:
        first = getattr(tl, name).__doc__.splitlines()[0]
        assert first.startswith(f"{name}("), (name, first)
        assert first.endswith(")"), (name, first)


def _parameters(name: str) -> str:
    first = getattr(tl, name).__doc__.splitlines()[0]
    return first[len(name) + 1 : -1]


def test_load_names_triton_parameters() -> None:
    params = [p.split("=")[0].strip() for p in _parameters("load").split(",")]
    assert params[:3] == ["pointer", "mask", "other"]
    assert "volatile" in params


def test_dot_names_triton_parameters() -> None:
    params = [p.split("=")[0].strip() for p in _parameters("dot").split(",")]
    assert params == [
        "input",
        "other",
        "acc",
        "input_precision",
        "allow_tf32",
        "max_num_imprecise_acc",
        "out_dtype",
    ]


def test_markers_still_reject_python_calls() -> None:
    with pytest.raises(RuntimeError, match=r"tl\.load"):
        tl.load(None)


def test_help_of_jit_is_not_empty() -> None:
    doc = inspect.getdoc(tilec.jit)
    assert doc and doc.splitlines()[0] == "jit(fn) or jit(**keywords)(fn)"
    text = pydoc.render_doc(tilec.jit, renderer=pydoc.plaintext)
    assert "kernel[grid]" in text
