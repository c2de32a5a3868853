"""Triton's `extern_libs` option: `{"libdevice": "/path/libdevice.10.bc"}` names LLVM bitcode
libraries to link into a kernel.

As Triton does, a library is linked (`tilec.lowering.extern_libs`, at the `llir` stage of a GPU
backend) only where the kernel declares functions it defines. tilec computes the functions of
`tl.extra.libdevice` with its own ops, so a kernel made of `tl` functions declares none and
leaves the library out; the option still names real bitcode files: a path that does not exist
or is not LLVM bitcode is refused when the option is given, naming it. The option's value holds
each file's content digest, so that the compile cache keys on the libraries' contents, as
Triton's does.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from typing import Any

BITCODE_MAGICS = (b"BC\xc0\xde", b"\xde\xc0\x17\x0b")
"""LLVM's raw bitcode magic and its wrapper's (little-endian 0x0B17C0DE)."""

ExternLibs = tuple[tuple[str, str, str], ...]
"""(name, path, content digest) of each library, sorted by name."""


def extern_libs(value: Any) -> ExternLibs:
    """The option's value from a `{name: path}` mapping (or None, or the pairs or triples of an
    earlier value); a missing file's digest is empty (`check_extern_libs` refuses it)."""
    if value is None:
        return ()
    if isinstance(value, Mapping):
        items: Iterable[Any] = value.items()
    elif isinstance(value, (tuple, list)):
        items = value
    else:
        raise ValueError(
            f"option 'extern_libs' must be a dict of library names to bitcode paths, "
            f"e.g. {{'libdevice': '/path/libdevice.10.bc'}}; got {value!r}"
        )
    libraries = []
    for item in items:
        if not isinstance(item, (tuple, list)) or len(item) not in (2, 3):
            raise ValueError(f"option 'extern_libs': expected name: path entries, got {item!r}")
        name, path = item[0], item[1]
        if not isinstance(name, str) or not isinstance(path, (str, os.PathLike)):
            raise ValueError(
                f"option 'extern_libs': library names and paths are strings, got {name!r}: {path!r}"
            )
        path = os.fspath(path)
        libraries.append((name, path, _digest(path)))
    return tuple(sorted(libraries))


def check_extern_libs(instance: Any, attribute: Any, value: ExternLibs) -> None:
    """Each library is a readable LLVM bitcode file."""
    for name, path, _ in value:
        try:
            with open(path, "rb") as f:
                magic = f.read(4)
        except OSError as error:
            raise ValueError(
                f"option 'extern_libs': library '{name}' at {path!r} cannot be read "
                f"({error.strerror or error})"
            ) from None
        if magic not in BITCODE_MAGICS:
            raise ValueError(
                f"option 'extern_libs': library '{name}' at {path!r} is not LLVM bitcode "
                "(a .bc file such as CUDA's libdevice.10.bc)"
            )


def _digest(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()[:16]
    except OSError:
        return ""


__all__ = ["ExternLibs", "check_extern_libs", "extern_libs"]
