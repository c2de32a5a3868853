"""The source of functions made by `exec()` or `compile()` of a string, which `inspect` cannot
read (their file is `<string>` or another name that is no file, unless the caller registered the
text in `linecache`). Triton's interpreter runs such kernels, and Triton's tests make kernels so
(`exec(src, globals(), namespace)` of a rewritten kernel's text).

Python raises the audit event `compile` with the source text and file name of every `exec`,
`eval` and `compile` of a string. An audit hook, installed once when tilec's frontend is
imported, keeps the last few texts compiled under a name that is no file and that define a
function (`def `): a bounded list, so memory stays bounded. `find` looks a function up in
them by file name, first line, name and parameters, and registers the text it found in
`linecache` under a name of its own, so that errors show the kernel's lines. Only functions
made after `import tilec` can be found.
"""

from __future__ import annotations

import ast
import collections
import contextlib
import inspect
import itertools
import linecache
import os
import sys
import textwrap
import threading
from typing import Any

KEPT = 64
"""How many recent source texts the hook keeps."""

_recent: collections.deque[tuple[str, bytes | str]] = collections.deque(maxlen=KEPT)
_names = itertools.count(1)
_installed = False
_lock = threading.Lock()


def _hook(event: str, args: tuple) -> None:
    if event != "compile" or len(args) < 2:
        return
    source, filename = args[0], args[1]
    if not isinstance(filename, str) or not isinstance(source, (bytes, str)):
        return
    if filename == "<unknown>" or filename.startswith("<tilec "):
        return  # ast.parse's default name; tilec's own generated code
    if ("def " not in source) if isinstance(source, str) else (b"def " not in source):
        return
    if not filename.startswith("<") and os.path.isfile(filename):
        return  # a module's file: inspect reads it
    _recent.append((filename, source))


def install() -> None:
    """Install the audit hook (once; a process whose hooks refuse new ones keeps none)."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
        with contextlib.suppress(RuntimeError):  # another audit hook refused it
            sys.addaudithook(_hook)


def find(fn: Any) -> tuple[list[str], int, str] | None:
    """The source lines of `fn` (a function made by exec/compile of a string), its first line
    number and the name its text is registered under in `linecache`; None if not kept."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    for filename, source in reversed(list(_recent)):
        if filename != code.co_filename:
            continue
        text = source.decode("utf-8", "replace") if isinstance(source, bytes) else source
        lines = text.splitlines(True)
        first = code.co_firstlineno
        if not 1 <= first <= len(lines):
            continue
        block = inspect.getblock(lines[first - 1 :])
        if _defines(block, fn.__name__, code):
            return block, first, _register(filename, block, first)
    return None


def _defines(block: list[str], name: str, code: Any) -> bool:
    """Whether `block` is the definition of function `name` with `code`'s parameters."""
    try:
        tree = ast.parse(textwrap.dedent("".join(block)))
    except SyntaxError:
        return False
    node = tree.body[0] if tree.body else None
    if not isinstance(node, ast.FunctionDef) or node.name != name:
        return False
    params = [a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)]
    count = code.co_argcount + code.co_kwonlyargcount
    return params == list(code.co_varnames[:count])


def _register(filename: str, block: list[str], first: int) -> str:
    """Register the function's lines in `linecache` under a name of their own (`<string#3>`):
    several functions made by exec share one file name."""
    stem = filename[:-1] if filename.startswith("<") and filename.endswith(">") else filename
    name = f"{stem}#{next(_names)}" + (">" if stem != filename else "")
    lines = ["\n"] * (first - 1) + block
    linecache.cache[name] = (sum(map(len, lines)), None, lines, name)
    return name
