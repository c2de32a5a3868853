"""The launch fast path: a guard function generated per kernel, specialization and call shape.

After a launch has gone through the launcher's general path (`Launcher._launch`: bind, key,
look-up, runner), `make_fast_launch` writes a Python function that launches the same way again
for a call like it, checking inline only what the key held: the number of positional arguments
and which keywords came, each constexpr and launch option's value, each runtime argument's type
and specialization (a torch tensor's dtype, device and 16-byte alignment; an int's `== 1`,
multiple of 16 and 32-bit range; another type's `spec_token`), the backend the launch picks, the
kernel's cache key and the cache's generation, and that `check=` is off. A tensor descriptor
argument is guarded by its `spec_token` and passes its parts (`d.base`, `d.shape[i]`,
`d.strides[i]`). Any guard that fails
(or raises) returns `MISS`, and the launcher takes the general path, which reports errors with
their location as before. A fast launch never compiles, allocates or synchronizes.

Where the backend's runner has a `run_values` entry (the nvidia runner for torch tensors) and
every pointer argument is a torch tensor, the function passes the addresses it has read for the
alignment guard, so `data_ptr()` is called once a tensor.
"""

from __future__ import annotations

import contextlib
import logging
import operator
import os
import textwrap
import threading
from collections.abc import Callable, Sequence
from typing import Any

from tilec import settings
from tilec.driver import InlineLaunch, grid_sizes
from tilec.errors import GridTypeError, GridValueError
from tilec.frontend.kernel import identity_check
from tilec.frontend.tuple_params import SEPARATOR
from tilec.runtime import cache, compiler, native_shape
from tilec.runtime import check as checking
from tilec.runtime.specialization import I32, I64, _tensor_token, _token_function, spec_token
from tilec.tools.tensor_descriptor import TensorDescriptor

log = logging.getLogger(__name__)

MISS = object()
"""What a fast launch returns when its guards do not hold: take the general path."""

RESERVED = ("backend", "check", "stream")

MAX_FAST = 4
"""Fast launches kept per kernel (tried newest first before the general path)."""

FastLaunch = Callable[[Any, tuple, dict], Any]
"""`fast(grid, args, meta)`: the compiled kernel it launched, or MISS."""


def launch_grid(
    grid: Any, names: Sequence[str], defaults: dict, args: tuple, meta: dict, kernel_name: str
) -> tuple:
    """The grid of a launch as a tuple of 1 to 3 non-negative ints: `grid` itself, or a
    callable's result for the bound arguments and meta-parameters (the reserved launch options
    left out). Anything else is an error naming the kernel."""
    made_by = ""
    if callable(grid):
        bound = {**defaults, **dict(zip(names, args, strict=False))}
        bound.update((k, v) for k, v in meta.items() if k not in RESERVED)
        grid = grid(bound)
        made_by = " (returned by the grid function)"
    if type(grid) is tuple and 1 <= len(grid) <= 3 and all(type(d) is int and d >= 0 for d in grid):
        return grid
    return _checked_grid(grid, kernel_name, made_by)


def _checked_grid(grid: Any, kernel_name: str, made_by: str) -> tuple[int, ...]:
    what = f"the grid of kernel '{kernel_name}'{made_by}"
    dims = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
    checked = []
    for d in dims:
        size = None
        if not isinstance(d, bool):
            with contextlib.suppress(TypeError):
                size = operator.index(d)  # int, NumPy integers
        if size is None:
            hint = "; for a size computed by division, use tilec.cdiv(n, BLOCK)"
            raise GridTypeError(
                f"{what} must be an int or a tuple of 1 to 3 ints, got {grid!r}"
                + (hint if isinstance(d, float) else "")
            )
        checked.append(size)
    if not 1 <= len(checked) <= 3:
        raise GridValueError(f"{what} must have 1 to 3 dimensions, got {grid!r}")
    if min(checked) < 0:
        raise GridValueError(f"{what} has a negative size: {grid!r}")
    return tuple(checked)


def make_fast_launch(
    kernel: Any,
    info: Any,
    args: tuple,
    meta: dict,
    backend_name: str | None,
    compiled: Any,
    runner: Callable[..., None],
    grid: Any = None,
) -> tuple[FastLaunch, ...]:
    """The fast launch for calls like `kernel[grid](*args, **meta)` that compiled to `compiled`
    (`meta` as the user gave it, reserved options included), tried in order: the native form
    first where it can be made (`tilec.runtime.native_launch`), then the Python function; none
    where the call shape has none (check=True, more arguments than parameters, a runtime
    argument's own default).
    Where the runner offers its launch for inlining (`tilec.driver.InlineLaunch`), its
    statements become the function's tail, and `grid` (the launch's grid), where it is a tuple
    inside the device's limits, is one whose checks they skip when it comes again."""
    options = {k: v for k, v in meta.items() if k not in RESERVED}
    if meta.get("check") is not None or len(args) > len(info.names):
        return ()
    namespace: dict[str, Any] = {
        "MISS": MISS, "cache": cache, "compiler": compiler, "checking": checking,
        "backend_setting": settings.backend, "BACKEND": backend_name, "GENERATION": cache.generation,
        "kernel": kernel, "compiled": compiled, "runner": runner,
        "spec_token": spec_token, "launch_grid": launch_grid, "names": info.names,
        "defaults": info.defaults,
    }  # fmt: skip
    guards: list[str] = []
    body = [f"if len(args) != {len(args)}:", "    return MISS"]
    if args:
        body.append(", ".join(f"a{i}" for i in range(len(args))) + ", = args")
    expressions: dict[str, str] = {}
    descriptors: dict[str, str] = {}
    addresses: dict[str, str] = {}
    aligned: dict[str, bool] = {}
    for i, (param, cx) in enumerate(zip(info.names, info.constexpr, strict=True)):
        if i < len(args):
            expression, value = f"a{i}", args[i]
        elif param in options:
            expression, value = f"k{i}", options[param]
            body.append(f"k{i} = meta[{param!r}]")
        elif param in info.defaults and (cx or info.defaults[param] is None):
            continue  # a constexpr (or None) left at its default: the keyword count guards it
        else:
            return ()  # a runtime argument's default: the general path
        if value is None:  # a compile-time None, as in Triton: that very object again
            guards.append(f"{expression} is not None")
            continue
        if cx:
            namespace[f"c{i}"] = value
            guards.append(f"{expression} != c{i}")
            continue
        expressions[param] = expression
        if isinstance(value, TensorDescriptor):
            descriptors[param] = expression
        guards.append(" or ".join(_runtime_guards(namespace, i, expression, value)))
        if _token_function(type(value)) is _tensor_token:
            addresses[param] = f"p{i}"
            aligned[f"p{i} := {expression}.data_ptr()"] = value.data_ptr() & 15 == 0
    guards += _address_guards(aligned)
    for j, (key, value) in enumerate(options.items()):
        if key not in info.names:
            namespace[f"o{j}"] = value
            guards.append(f"meta.get({key!r}, MISS) != o{j}")
    params = compiled.runtime_params
    for param in params:
        if param not in expressions:  # a descriptor's part, read from the descriptor
            part = _descriptor_part(descriptors, param)
            if part is None:
                return ()
            expressions[param] = part
    pointer_params = [p for p in params if compiled.signature[p].startswith("*")]
    run_values = getattr(runner, "run_values", None)
    inline = None
    if run_values is not None and all(p in addresses for p in pointer_params):
        namespace["runner"] = run_values  # addresses already read: pass them
        expressions.update(addresses)
        inline = _inline(namespace, getattr(runner, "inline", None), grid)
    values = ", ".join(expressions[p] for p in params) + ("," if len(params) == 1 else "")
    launch = f"runner(grid, ({values}), stream)"
    if inline is not None:
        launch = textwrap.indent(inline.body(f"({values})", "compiled"), "    ").strip()
    key = kernel.cache_key
    unchanged = identity_check(kernel.key_reads, namespace) or "kernel.cache_key == KEY"
    namespace["KEY"] = key
    source = _FAST.format(
        unchanged=unchanged,
        options=len(options),
        body=textwrap.indent("\n".join(body), "        "),
        guards="\n".join(f"        if {g}:\n            return MISS" for g in guards),
        launch=launch,
    )
    exec(compile(source, f"<tilec fast launch {kernel.__name__}>", "exec"), namespace)
    fast = namespace["fast"]
    native = None
    if inline is not None and inline.native is not None and not meta.keys() & {"backend", "check"}:
        native = _native_fast(kernel, info, args, options, compiled, inline, grid)
    return (native, fast) if native is not None else (fast,)


def replace_fast(info: Any, old: FastLaunch, new: FastLaunch | None) -> None:
    """Put `new` where `old` is among the kernel's fast launches (`info.fast` and those of each
    call shape, in the same place); None: drop `old`."""
    kept = (old,) if new is None else ()
    with info.lock:
        for shape, launches in info.fast_shapes.items():
            if old in launches:
                info.fast_shapes[shape] = tuple(
                    new if f is old else f for f in launches if f not in kept
                )
        info.fast = tuple(new if f is old else f for f in info.fast if f not in kept)


def _native_fast(
    kernel: Any,
    info: Any,
    args: tuple,
    options: dict,
    compiled: Any,
    inline: InlineLaunch,
    grid: Any,
) -> FastLaunch | None:
    """The native form of the fast launch (`tilec.runtime.native_launch`), tried first: for
    calls with every runtime argument given by position and no `backend=`. What it checks is
    recorded now (`native_shape.CallShape`); its code is built by the next launch that tries it
    (`_BuiltLater`)."""
    params = compiled.runtime_params
    names = info.names[: len(args)]
    if any(p not in names for p in params):
        return None
    positional: list[tuple] = []
    for i, value in enumerate(args):
        if value is None:  # a compile-time None (`bind_launch`): that very object again
            positional.append(("is", None))
            continue
        if info.constexpr[i]:
            positional.append(("constexpr", value))
            continue
        name = names[i]
        kind = native_shape.kind(value, compiled.signature[name])
        positional.append(("runtime", kind, params.index(name)))
    state = {
        "attributes": [
            (cache, "generation", cache.generation),
            (compiler, "_chosen", compiler._chosen),
        ],
        "false": [(checking, "enabled")],
        "env": (settings.BACKEND.name, native_shape.environment(settings.BACKEND.name)),
    }
    shape = native_shape.CallShape(positional, len(params), options, grid, kernel.key_reads, state)
    return _BuiltLater(info, inline.native, shape, compiled)


native_in_background = True
"""Whether a shape's native fast launch is built on a thread of its own (True), the launch that
starts the build going on through the Python fast launch, or by that launch itself (False)."""

_builds: list[threading.Thread] = []
_builds_lock = threading.Lock()
_building_at_fork = False
"""Whether a build was running at the last fork."""
_no_builds = False
"""Whether this process builds no native launches (a child forked during a build)."""


def _before_fork() -> None:
    global _building_at_fork
    _building_at_fork = any(thread.is_alive() for thread in _builds)


def _after_fork_in_child() -> None:
    """A build that was running in the parent is no thread here, and may have held the JIT's
    locks: a child forked during one builds no native launches (its launches take the Python
    fast launch, as they do in any case until a build is done)."""
    global _builds_lock, _no_builds
    _builds_lock = threading.Lock()
    _builds.clear()
    _no_builds = _no_builds or _building_at_fork


os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)


def wait_for_native_launches(timeout: float | None = None) -> None:
    """Wait until the native fast launches being built on their threads are in place (a
    benchmark's warm-up, a test)."""
    with _builds_lock:
        pending = list(_builds)
    for thread in pending:
        thread.join(timeout)


class _BuiltLater:
    """A stand-in for the native fast launch of `shape`: the first launch that tries it (the
    second launch of the shape, or a later one) has the native code built (llvmlite's JIT: its
    import, the IR and the machine code, 50-60 ms on the H200 host, which neither a program's
    first launch from the disk cache nor its second waits for): on a thread of its own
    (`native_in_background`), that launch going on to the Python fast launch, else by that
    launch itself. The code is put in the stand-in's place (`replace_fast`; the stand-in is
    dropped where none can be made or the build fails) and launches from then on find it
    first. The shape and the state it guards were recorded at the first launch; a launch the
    native code does not take goes on to the next fast launch, as any MISS does. Launches that
    come while it builds go on to the Python fast launch.

    The thread is no daemon: a program that ends during a build waits for it (tens of
    milliseconds) rather than leave LLVM's work half done."""

    __slots__ = ("building", "compiled", "info", "native", "shape")

    def __init__(self, info: Any, native: Any, shape: Any, compiled: Any):
        self.info, self.native, self.shape, self.compiled = info, native, shape, compiled
        self.building = threading.Lock()

    def __call__(self, grid: Any, args: tuple, meta: dict) -> Any:
        if not self.building.acquire(blocking=False):
            return MISS
        if _no_builds:
            replace_fast(self.info, self, None)
            return MISS
        if not native_in_background:
            built = self._build()
            return MISS if built is None else built(grid, args, meta)
        thread = threading.Thread(target=self._build, name="tilec-native-launch")
        with _builds_lock:  # listed before it starts (a fork sees it), started when a wait does
            _builds[:] = [t for t in _builds if t.is_alive()]
            _builds.append(thread)
            try:
                thread.start()
                started = True
            except RuntimeError:  # no new threads (the interpreter shutting down)
                _builds.remove(thread)
                started = False
        if not started:  # the Python fast launch stays
            replace_fast(self.info, self, None)
        return MISS

    def _build(self) -> FastLaunch | None:
        """The native code in the stand-in's place (None where none is made, the stand-in
        dropped)."""
        built = None
        try:
            from tilec.runtime import native_launch  # deferred: llvmlite's JIT, a 2nd launch's

            built = native_launch.build(self.native, self.shape, miss=MISS, compiled=self.compiled)
        except Exception:  # the Python fast launch stays: it launches the same way
            log.warning("tilec: the native fast launch was not built", exc_info=True)
        replace_fast(self.info, self, built)
        self.info = self.native = self.shape = self.compiled = None  # nothing kept alive
        return built


def _descriptor_part(descriptors: dict[str, str], name: str) -> str | None:
    """The expression of element `name` (`d.0`, `d.1.0`, `d.2.0`: `tuple_params.flatten`) of a
    descriptor argument `d`: its base, a size or a stride; None for an element of no descriptor.
    The descriptor's `spec_token` guards what the kernel was compiled for."""
    root, *path = name.split(SEPARATOR)
    if root not in descriptors or not 1 <= len(path) <= 2 or path[0] not in ("0", "1", "2"):
        return None
    field = ("base", "shape", "strides")[int(path[0])]
    index = f"[{int(path[1])}]" if len(path) == 2 else ""
    return f"{descriptors[root]}.{field}{index}"


def _inline(namespace: dict, inline: InlineLaunch | None, grid: Any) -> InlineLaunch | None:
    """`inline` with its names added to `namespace` (None where a name would collide), and
    `GRID`/`XYZ` set where `grid` is a tuple of 1 to 3 positive sizes inside its limits."""
    if inline is None or namespace.keys() & inline.namespace.keys() - {"GRID", "XYZ"}:
        return None
    namespace.update(inline.namespace)
    sizes = grid_sizes(grid, inline.max_grid)
    if sizes is not None:
        namespace["GRID"], namespace["XYZ"] = grid, sizes
    return inline


def _runtime_guards(namespace: dict, i: int, expression: str, value: Any) -> list[str]:
    """The guards that hold exactly where `expression` has `value`'s specialization token (a
    torch tensor's address is kept in `p{i}`)."""
    kind = type(value)
    namespace[f"T{i}"] = kind
    if kind is int:
        guards = [f"type({expression}) is not int"]
        if value == 1:
            return [*guards, f"{expression} != 1"]
        if value & 15 == 0:  # a multiple of 16 is no 1
            guards.append(f"{expression} & 15")
        else:
            guards += [f"{expression} == 1", f"not {expression} & 15"]
        in_i32 = f"{I32[0]} <= {expression} <= {I32[1]}"
        if I32[0] <= value <= I32[1]:
            return [*guards, f"not {in_i32}"]
        if I64[0] <= value <= I64[1]:  # i64: neither i32 nor u64 (nor beyond 64 bits)
            return [*guards, in_i32, f"not {I64[0]} <= {expression} <= {I64[1]}"]
        return [*guards, f"not {I64[1]} < {expression} < {2**64}"]  # u64
    if kind in (float, bool):
        return [f"type({expression}) is not T{i}"]
    if _token_function(kind) is _tensor_token:  # its address: `_address_guards`
        namespace[f"D{i}"] = value.dtype
        return [
            f"type({expression}) is not T{i}",
            f"{expression}.dtype is not D{i}",
            f"{expression}.get_device() != {int(value.get_device())}",
        ]
    namespace[f"K{i}"] = spec_token(value)
    return [f"type({expression}) is not T{i}", f"spec_token({expression}) != K{i}"]


def _address_guards(aligned: dict[str, bool]) -> list[str]:
    """Guards that read each tensor's address once (`p{i} := ...data_ptr()`) and hold where
    those that were 16-byte aligned still are (one test for all) and the others still are not."""
    together = " | ".join(f"({read})" for read, yes in aligned.items() if yes)
    guards = [f"({together}) & 15"] if together else []
    return guards + [f"not ({read}) & 15" for read, yes in aligned.items() if not yes]


_FAST = """
def fast(grid, args, meta):
    try:
        if len(meta) == {options}:
            stream = backend = None
        else:
            stream = meta.get("stream")
            backend = meta.get("backend")
            if len(meta) != {options} + ("stream" in meta) + ("backend" in meta):
                return MISS
        if (backend or compiler._chosen or backend_setting()) != BACKEND:
            return MISS
        if cache.generation != GENERATION or checking.enabled or not ({unchanged}):
            return MISS
{body}
{guards}
    except Exception:
        return MISS
    if type(grid) is not tuple:
        grid = launch_grid(grid, names, defaults, args, meta, kernel.__name__)
    {launch}
    return compiled
"""
