"""A kernel's source as the frontend compiles it: `KernelFunction`.

It holds the Python function, its dedented source and where it sits in its file, its parameters
(names, which are `tl.constexpr`, defaults) and the source part of the compile cache's key. The
runtime's `JITFunction` (`@tilec.jit`) adds launching on top.

`KernelFunction.cache_key` is what the compile cache keys a kernel by, as Triton does: a hash of the
kernel's source, the tilec version and, recursively, of what the frontend folds into the kernel
by name: the sources of the `@jit` functions it calls and the values of the constexpr-like globals
(ints, floats, bools, strings, `tl.dtype`, `tl.constexpr`, tuples of those) it reads, looked up in
the function's closure (then globals), and through attribute chains as the frontend follows them:
of modules (`helpers.BLOCK`), classes (`Cfg.S`, inherited attributes too) and other objects. The key is
cached with the objects it was computed from; every read checks them by identity (cheap) and
recomputes the key when one changed, so a rebound global or callee never reuses a stale entry.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import linecache
import textwrap
import types
from collections.abc import Callable
from typing import Any

from tilec.errors import KernelCallError
from tilec.frontend import exec_sources
from tilec.language import constexpr, dtype
from tilec.version import __version__

exec_sources.install()

_MISSING = object()
_SCALARS = (bool, int, float, str, bytes, type(None))


def _constexpr_like(value: Any) -> bool:
    if isinstance(value, (*_SCALARS, dtype, constexpr)):
        return True
    return isinstance(value, tuple) and all(_constexpr_like(v) for v in value)


def _annotated_constexpr(annotation: Any) -> bool:
    """Whether an annotation is `tl.constexpr` (also as a string, under postponed annotations)."""
    if isinstance(annotation, str):
        return annotation.split(".")[-1] == "constexpr"
    return annotation is constexpr or isinstance(annotation, constexpr)


def _source_lines(fn: Callable[..., Any]) -> tuple[list[str], int, str]:
    """The function's source lines, first line number and file, read as Triton does: through
    `inspect`, which reads files and `linecache` entries; for a function made by `exec()` of a
    string (no file), from the text Python's `compile` audit event carried
    (`tilec.frontend.exec_sources`)."""
    try:
        lines, first = inspect.getsourcelines(fn)
        return lines, first, inspect.getsourcefile(fn) or fn.__code__.co_filename
    except (OSError, TypeError):
        found = exec_sources.find(fn)
        if found is not None:
            return found
        code = getattr(fn, "__code__", None)
        where = f"file {code.co_filename!r}, line {code.co_firstlineno}" if code else "no code"
        raise SourceNotFoundError(
            f"cannot read the source of kernel '{getattr(fn, '__qualname__', fn)}' ({where}): "
            "tilec compiles a kernel from its source, and this text was compiled before tilec "
            "was imported (a script from stdin or python -c, an exec() before import tilec) or "
            "from a tree. Put the kernel in a file, import tilec before the exec(), or compile "
            "the source with a file name and register it: linecache.cache[name] = (len(src), "
            "None, src.splitlines(True), name)"
        ) from None


def _lines_before_def(src: str) -> int:
    """How many lines of a function's source come before its `def` (its decorators)."""
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return 0
    first = tree.body[0] if tree.body else None
    return first.lineno - 1 if isinstance(first, ast.FunctionDef) else 0


_SOURCE_UPDATES = [0]
"""How many `_unsafe_update_src` calls this process has seen: a kernel's cache key computed
before the last one is computed again (the updated kernel may be inlined into it)."""


class SourceNotFoundError(OSError):
    """A `@tilec.jit` function whose source text cannot be read (neither a file nor linecache)."""


class KernelFunction:
    """A kernel: the Python function, its dedented source, its file and the source's first line."""

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        lines, first_line, self.file = _source_lines(fn)
        raw = "".join(lines)
        src = textwrap.dedent(raw)
        self.indent = len(raw.splitlines()[0]) - len(src.splitlines()[0])
        decorators = _lines_before_def(src)
        self._src = "".join(src.splitlines(True)[decorators:])
        self.first_line = first_line + decorators
        """The file's line of the source's first line (the `def`)."""
        self._source_updates = _SOURCE_UPDATES[0]
        self._updated = False
        self.arg_names = list(inspect.signature(fn).parameters)
        self._key: str | None = None
        self._used: tuple[tuple[Any, str, Any], ...] = ()
        self._names: tuple[tuple[str, ...], ...] | None = None
        self._unchanged_fast: Callable[[], bool] = lambda: False
        self.repr_function: Callable[[Any], str] | None = None
        """Triton's `@jit(repr=...)`: names the compiled kernel (`frontend/kernel_names.py`)."""

    @property
    def src(self) -> str:
        """The kernel's source text from its `def` (decorators left out, dedented), as Triton's
        `JITFunction.src`: what the frontend compiles and the cache key hashes."""
        return self._src

    @src.setter
    def src(self, _value: str) -> None:
        raise AttributeError(
            "Cannot set attribute 'src' directly. Use '_unsafe_update_src()' and manually clear "
            "`.hash` of all callers instead."
        )

    def _unsafe_update_src(self, new_src: str) -> None:
        """Triton's: compile `new_src` (the function's text from its `def`, as `src` gives it)
        from now on, in place of the source (Triton's tests make kernel variants this way:
        `kernel._unsafe_update_src(kernel.src.replace(...))`). Unlike Triton, the callers'
        keys need no clearing: every kernel's cache key is computed again (it may inline this
        one). Locations stay those of the original source's lines in its file; error messages
        show the updated lines (`line_text`)."""
        if not isinstance(new_src, str):
            raise TypeError(f"{self.__name__}._unsafe_update_src takes the source text (a str)")
        self._src = new_src
        self._updated = True
        self._key = None
        self._names = None
        self._used = ()
        self._unchanged_fast = lambda: False
        _SOURCE_UPDATES[0] += 1

    def line_text(self, line: int) -> str:
        """The text of line `line` of the kernel's file as the frontend compiles it, for error
        messages: the file's line, or after `_unsafe_update_src` the updated source's."""
        if not self._updated:
            return linecache.getline(self.file, line).rstrip()
        lines = self._src.splitlines()
        index = line - self.first_line
        return (" " * self.indent + lines[index]).rstrip() if 0 <= index < len(lines) else ""

    def is_constexpr(self, param: str) -> bool:
        """Whether parameter `param` is annotated `tl.constexpr`."""
        return _annotated_constexpr(self.fn.__annotations__.get(param))

    @functools.cached_property
    def constexpr_flags(self) -> tuple[bool, ...]:
        """For each parameter in order, whether it is annotated `tl.constexpr` (read on first use:
        annotations may name what is defined after the kernel)."""
        return tuple(self.is_constexpr(p) for p in self.arg_names)

    @functools.cached_property
    def defaults(self) -> dict[str, Any]:
        """The parameters' default values, by name (parameters without one are absent)."""
        params = inspect.signature(self.fn).parameters
        return {p: v.default for p, v in params.items() if v.default is not inspect.Parameter.empty}

    @property
    def globals(self) -> dict[str, Any]:
        return self.fn.__globals__

    def closure_cells(self) -> dict[str, Any]:
        """The function's closure cells by name (the enclosing function's variables it reads)."""
        return dict(zip(self.fn.__code__.co_freevars, self.fn.__closure__ or (), strict=True))

    def captured(self, name: str, default: Any = None) -> Any:
        """What `name` is bound to where the function was defined, as Python (and Triton) reads
        it: the enclosing function's variable of that name (its closure), else the global."""
        cell = self.closure_cells().get(name)
        if cell is not None:
            return _CellView(cell).get(name, default)
        return self.fn.__globals__.get(name, default)

    @property
    def cache_key(self) -> str:
        """The hash of this kernel and what it depends on by name (see the module docstring)."""
        key = self._key
        fresh = self._source_updates == _SOURCE_UPDATES[0]
        if key is not None and fresh and (self._unchanged_fast() or self._unchanged()):
            return key
        self._source_updates = _SOURCE_UPDATES[0]
        used: list[tuple[Any, str, Any]] = []
        parts: list[str] = []
        self._collect(parts, used, set())
        parts.append(f"tilec={__version__}")
        self._key = hashlib.sha256("\x00".join(parts).encode()).hexdigest()
        self._used = tuple({(id(ns), name): (ns, name, v) for ns, name, v in used}.values())
        self._unchanged_fast = _identity_check(self._used)
        return self._key

    @property
    def key_reads(self) -> tuple[tuple[Any, str, Any], ...]:
        """What `cache_key` was computed from: (namespace, name, value) of each name read."""
        return self._used

    def _unchanged(self) -> bool:
        """Whether every name the key was computed from still gives its value (`_same`)."""
        return all(_same(ns.get(name, _MISSING), value) for ns, name, value in self._used)

    def referenced_names(self) -> tuple[tuple[str, ...], ...]:
        """The dotted names (`BLOCK`, `helpers.BLOCK`) the source loads but does not bind."""
        if self._names is None:
            self._names = _free_name_chains(ast.parse(self.src))
        return self._names

    def _collect(self, parts: list[str], used: list, seen: set[int]) -> None:
        """Append this function's source and its dependencies' parts; record what was read."""
        seen.add(id(self))
        parts.append(self.src)
        if self.repr_function is not None:  # it names the compiled kernel
            code = getattr(self.repr_function, "__code__", None)
            parts.append(
                f"repr={getattr(self.repr_function, '__qualname__', '')}:{code and code.co_code!r}"
            )
        closure = self.closure_cells()
        for chain in self.referenced_names():
            head = chain[0]
            if head in closure:
                namespace: Any = _CellView(closure[head])
            elif head in self.fn.__globals__:
                namespace = self.fn.__globals__
            else:
                continue
            value = namespace.get(head, _MISSING)
            used.append((namespace, head, value))
            path = head
            for attr in chain[1:]:
                if value is _MISSING or isinstance(value, KernelFunction) or _is_tilec(value):
                    break
                namespace = vars(value) if isinstance(value, types.ModuleType) else _AttrView(value)
                value = namespace.get(attr, _MISSING)
                used.append((namespace, attr, value))
                path += "." + attr
            if isinstance(value, KernelFunction):
                if id(value) in seen:
                    parts.append(f"{path}=<jit {value.__name__}, cycle>")
                else:
                    parts.append(f"{path}=<jit>")
                    value._collect(parts, used, seen)
            elif _constexpr_like(value):
                parts.append(f"{path}={type(value).__qualname__}:{value!r}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise KernelCallError(
            f"{self.__name__} is a @tilec.jit kernel: launch it as {self.__name__}[grid](...) "
            "or call it from another kernel"
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.fn.__module__}:{self.__name__})"


def _is_tilec(value: Any) -> bool:
    """Whether `value` is one of tilec's modules (`tl`, `tl.math`): what a kernel reads from them
    (`tl.load`, `tl.float32`) is tilec's language, fixed by the version in the key, so it is
    neither hashed nor checked again on every launch."""
    if not isinstance(value, types.ModuleType):
        return False
    name = value.__name__
    return name == "tilec" or name.startswith("tilec.")


def _free_name_chains(tree: ast.Module) -> tuple[tuple[str, ...], ...]:
    """The dotted names a function's tree loads but does not bind, in order of appearance."""
    bound: set[str] = set()
    chains: list[tuple[str, ...]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
    outer = tree.body[0] if tree.body else None
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            chain: list[str] = []
            base: ast.expr = node
            while isinstance(base, ast.Attribute):
                chain.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name):
                chains.append((base.id, *reversed(chain)))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            chains.append((node.id,))
    if isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef)):
        bound.discard(outer.name)  # a recursive reference still resolves globally
    return tuple(dict.fromkeys(c for c in chains if c[0] not in bound))


def identity_check(
    used: tuple[tuple[Any, str, Any], ...], namespace: dict[str, Any], prefix: str = "_"
) -> str | None:
    """A Python expression that is true while every name in `used` (a kernel's `key_reads`)
    still gives the very object recorded: one dict subscript and `is` a name, for generated code
    on the launch hot path (it raises KeyError where a name is gone). The namespaces and values
    it reads are added to `namespace` (names starting with `prefix`). None where it cannot tell
    (a missing name, a view that is not a dict): ask `cache_key` then."""
    if any(type(ns) is not dict or value is _MISSING for ns, _, value in used):
        return None
    terms = []
    for i, (ns, name, value) in enumerate(used):
        namespace[f"{prefix}n{i}"], namespace[f"{prefix}v{i}"] = ns, value
        terms.append(f"{prefix}n{i}[{name!r}] is {prefix}v{i}")
    return " and ".join(terms) or "True"


def _identity_check(used: tuple[tuple[Any, str, Any], ...]) -> Callable[[], bool]:
    """`identity_check` as a function (False where it cannot tell, or an equal but new bound
    method is read: `_unchanged` decides then)."""
    namespace: dict[str, Any] = {}
    expression = identity_check(used, namespace)
    if expression is None:
        return lambda: False
    source = (
        f"def unchanged():\n    try:\n        return {expression}\n"
        "    except KeyError:\n        return False\n"
    )
    exec(compile(source, "<tilec cache-key check>", "exec"), namespace)
    return namespace["unchanged"]


def _same(current: Any, recorded: Any) -> bool:
    """Whether a name still gives the value the key was computed from: the same object, or an
    equal bound method (`obj.method` makes a new one on every read)."""
    if current is recorded:
        return True
    return isinstance(current, types.MethodType) and current == recorded


class _AttrView:
    """An object's attributes read like a namespace dict, for `cache_key`: `Cfg.S` (a class
    attribute, inherited ones too) or `config.BLOCK` (an instance's), as the frontend reads them
    with `getattr`."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any):
        self.obj = obj

    def get(self, name: str, default: Any) -> Any:
        try:
            return getattr(self.obj, name, default)
        except Exception:  # a property that raises: the frontend reports it when it reads it
            return default


class _CellView:
    """A closure cell read like a namespace dict (`get(name, default)`), for `cache_key`."""

    __slots__ = ("cell",)

    def __init__(self, cell: Any):
        self.cell = cell

    def get(self, name: str, default: Any) -> Any:
        try:
            return self.cell.cell_contents
        except ValueError:
            return default
