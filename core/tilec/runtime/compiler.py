"""Backend selection and `tilec.compile`: kernel + signature -> `CompiledKernel`, through the cache.

Selection order: the `backend=` argument, then `tilec.set_backend(name)`, then the
`TILEC_BACKEND` environment variable, then the first available of the installed backends by the
priority each declares (`Backend.priority`: the GPU backends before the interpreter).

On a cache miss the frontend makes the kernel's tir (with its specialization facts) and the
compile pipeline (`tilec.pipeline.compile_module`) runs the stages.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import json
import linecache
import logging
import os
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from tilec import cache_files, remote_cache, remote_claims, settings
from tilec.backend import Backend, BackendOptions, GpuBackend
from tilec.errors import (
    ArgumentValueError,
    BackendUnavailableError,
    LaunchArgumentError,
    UnknownBackendError,
)
from tilec.frontend import CompilationError, tuple_params
from tilec.language import target_info
from tilec.language.target_info import GPUTarget
from tilec.runtime import cache
from tilec.runtime.entry import user_entry
from tilec.runtime.triton_kernel import TritonKernelAPI
from tilec.version import __version__

if TYPE_CHECKING:
    from tilec.ir import Operation
    from tilec.ir.verifier import KernelDiagnostic

_COMPILE_LOCK = threading.RLock()
"""One compile at a time in a process: threads that launch a new kernel at once compile it once
(the others wait and take the result), and CPython's `ast` is not safe to run in several threads
at once (`SystemError: AST constructor recursion depth mismatch` on 3.11)."""

log = logging.getLogger(__name__)
_chosen: str | None = None
_availability: dict[str, Any] = {}
used_backends: dict[str, str] = {}
"""The backends compiles and launches have used in this process, each with why it was chosen
(`tilec run` reports them)."""


def set_backend(name: str | None) -> None:
    """Make `name` the default backend of launches and compiles (None: back to automatic)."""
    global _chosen
    if name is not None:
        _backends(name)
    _chosen = name


def _backends(name: str | None = None) -> dict[str, Backend]:
    # deferred: plugin discovery (entry points, pluggy) waits for the first launch or compile
    from tilec.plugin.manager import load_backends

    backends = load_backends()
    if name is not None and name not in backends:
        raise UnknownBackendError(
            f"unknown backend '{name}'; known backends: {', '.join(sorted(backends))}"
        )
    return backends


def _available(backend: Backend) -> Any:
    if backend.name not in _availability:
        _availability[backend.name] = backend.is_available()
    return _availability[backend.name]


def requested_backend(name: str | None = None) -> str | None:
    """The backend name asked for (argument, `set_backend`, `TILEC_BACKEND`); None: automatic."""
    return name or _chosen or settings.backend()


def get_backend(name: str | None = None, *, require_available: bool = True) -> Backend:
    """The backend a launch or compile uses; errors name the known ones or the reason."""
    name = requested_backend(name)
    record = _launch_record()
    if name is None:
        return _automatic(record)
    backend = record.backend(name) if record is not None else None
    if backend is None:
        backend = _backends(name)[name]
    if require_available:
        try:
            availability = _available(backend)
        except (Exception, SystemExit):  # the manager guards a check that raises, and reports it
            if record is None:
                raise
            return _full_load_get_backend(name, require_available)
        if not availability:
            raise BackendUnavailableError(
                f"backend '{name}' is not available: {availability.reason}"
            )
    log.info("backend '%s': named by %s", name, _named_by(name))
    used_backends.setdefault(name, f"named by {_named_by(name)}")
    return backend


def _full_load_get_backend(name: str | None, require_available: bool) -> Backend:
    # deferred: plugin discovery (entry points, pluggy) waits for a launch that needs it
    from tilec.plugin.manager import load_backends

    load_backends()  # the manager is loaded now: `_launch_record` gives None
    _availability.clear()
    return get_backend(name, require_available=require_available)


def _automatic(record: Any) -> Backend:
    """The first available backend by priority: of the launch record where it holds (only the
    backends tried are imported), else of every loaded plugin."""
    if record is not None:
        names, pick = record.order(), record.backend
    else:
        order = {backend.name: backend for backend in automatic_order()}
        names, pick = list(order), order.get
    reasons = []
    for name in names:
        backend = pick(name)
        if backend is None:  # the record's plugin did not give it: load every plugin
            return _full_load_get_backend(None, True)
        try:
            availability = _available(backend)
        except (Exception, SystemExit):  # as above
            if record is None:
                raise
            return _full_load_get_backend(None, True)
        if availability:
            skipped = f" ({'; '.join(reasons)})" if reasons else ""
            log.info("backend '%s': the first available of %s%s", name, ", ".join(names), skipped)
            used_backends.setdefault(name, f"the first available{skipped}")
            return backend
        reasons.append(f"{name}: {availability.reason}")
    raise BackendUnavailableError(f"no backend is available ({'; '.join(reasons)})")


def _launch_record() -> Any:
    """The plugins' launch record (`tilec.plugin.launch_record`) where this process has not
    loaded the plugin manager and the record still holds: a launch from the disk cache then
    imports only the backends it tries, without pluggy. None: every plugin is loaded."""
    if "tilec.plugin.manager" in sys.modules:
        return None
    # deferred: the record waits for the first launch or compile, like the plugins
    from tilec.plugin import launch_record

    return launch_record.current(code_fingerprint("tilec"))


def plugin_fingerprint() -> str:
    """The plugins' part of the compile-cache key: the launch record's where it holds, which is
    the plugin manager's (`tilec.plugin.manager.fingerprint`) computed without loading it."""
    record = _launch_record()
    if record is not None:
        return record.fingerprint
    # deferred: loading the plugins waits for a compile or a launch without a launch record
    from tilec.plugin.manager import fingerprint

    return fingerprint()


def automatic_order() -> list[Backend]:
    """The installed backends in the order the automatic choice tries them: by the priority
    each plugin declares (`Backend.priority`, highest first), then by name."""
    return sorted(_backends().values(), key=lambda backend: (-backend.priority, backend.name))


def _named_by(name: str) -> str:
    """Where a backend name came from, for the log (the launcher resolves `backend=` first, so
    a name equal to `set_backend`'s or `TILEC_BACKEND`'s is credited to those)."""
    if _chosen == name:
        return "set_backend()"
    if _chosen is None and settings.backend() == name:
        return settings.BACKEND.name
    return "the backend= argument"


@attrs.define(eq=False)
class CompiledKernel(TritonKernelAPI):
    """A kernel compiled for one backend and specialization.

    `asm` maps each stage to its output: text (`tir`, `gir`, `llir`, `ptx`, ...) or bytes for
    binaries (`cubin`, `hsaco`). `metadata` holds what the driver needs (for GPU backends:
    `num_warps`, `threads_per_warp`, `shared_bytes`, `params`, `written`). `module` is the tir
    module (what the interp backend executes). Backends keep per-kernel driver state (a loaded
    module, an argument packer) in `runtime`. `kernel[grid](...)` returns the CompiledKernel it
    launched, as Triton does; GPU backends add what the loaded kernel uses to `metadata` at its
    first launch (`num_regs`, `n_spills`, `shared`).
    """

    name: str
    asm: dict[str, str | bytes]
    module: Any
    backend: Backend
    options: BackendOptions
    signature: dict[str, str]
    constexprs: dict[str, Any]
    key: str
    metadata: dict[str, Any] = attrs.field(factory=dict, converter=lambda d: Metadata(d))
    runtime: dict[str, Any] = attrs.field(factory=dict)
    arg_names: tuple[str, ...] = ()
    """Every parameter of the kernel, constexprs included, in order (for `compiled[grid]`)."""

    @property
    def runtime_params(self) -> list[str]:
        """The parameters the compiled function takes, in order."""
        return list(self.signature)

    @property
    def run(self) -> Any:
        """`run(grid, args, stream=None)`: launch on `grid` with the runtime `args` on `stream`
        (see `tilec.driver`). With an int first, Triton's launcher call `run(gridX, gridY,
        gridZ, stream, function, packed_metadata, launch_metadata, launch_enter_hook,
        launch_exit_hook, *args)` with every argument (`tilec.runtime.triton_kernel`). A
        property, as Triton's: a restored pickle's `run` entry does not hide it."""
        return self._run

    def _run(self, grid: tuple[int, ...] | int, *args: Any) -> None:
        if not isinstance(grid, (tuple, list)):
            self.run_triton(grid, *args)
            return
        if not 1 <= len(args) <= 2:
            raise LaunchArgumentError(
                f"{self.name}.run(grid, args, stream=None) takes the grid, the runtime arguments "
                f"and a stream; got {1 + len(args)} arguments"
            )
        self.backend.driver.run(self, grid, *args)

    def __getitem__(self, grid: Any) -> Any:
        """Triton's `compiled[grid](*args, stream=None)`: a launch with every argument of the
        kernel in order, constexprs included; a constexpr must have the value compiled in. A
        user's mistake is raised as `kernel[grid]`'s is (`tilec.runtime.entry.user_entry`)."""
        grid = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)

        @user_entry
        def launch(*args: Any, stream: Any = None) -> CompiledKernel:
            self.launch_all(grid, args, stream)
            return self

        return launch

    def launch_all(self, grid: tuple[int, ...], args: Sequence[Any], stream: Any) -> None:
        """Launch with every argument of the kernel in order, constexprs included (each must
        have the value compiled in)."""
        if len(args) != len(self.arg_names):
            raise LaunchArgumentError(
                f"{self.name}[grid]() takes the kernel's {len(self.arg_names)} arguments "
                f"({', '.join(self.arg_names)}), got {len(args)}"
            )
        bound = dict(zip(self.arg_names, args, strict=True))
        roots = {tuple_params.root(n) for n in [*self.signature, *self.constexprs]}
        for name in [*self.constexprs, *(n for n in self.arg_names if n not in roots)]:
            value = self._element(bound, name)
            if self.constexprs.get(name) != value:
                raise ArgumentValueError(
                    f"{self.name} was compiled with {name}={self.constexprs.get(name)!r}, "
                    f"got {value!r}: compile it again (kernel.warmup) for another value"
                )
        runtime = [self._element(bound, name) for name in self.signature]
        self._launch(grid, runtime, stream)

    def _restore(self, kept: dict[str, Any]) -> None:
        """The fields of a kernel restored from Inductor's pickle (`TritonKernelAPI`): the
        backend by name, no driver state, a host backend's tir module parsed again (from the
        disk cache's entry, which keeps source locations, where it is there)."""
        backend = get_backend(kept["backend"], require_available=False)
        for field, value in {**kept, "backend": backend, "runtime": {}}.items():
            object.__setattr__(self, field, value)
        object.__setattr__(self, "metadata", Metadata(kept["metadata"]))
        module = None
        if "gir" not in self.asm:  # a host backend runs the tir module
            entry = _read_entry(cache.read(self.key), self.key, backend)
            module = _parse_tir(entry[2] if entry is not None else self.asm["tir"])
        object.__setattr__(self, "module", module)

    def _element(self, bound: dict[str, Any], name: str) -> Any:
        """Argument `name` (an element `p.0` of a tuple argument `p`) of a launch."""
        try:
            return tuple_params.element(bound, name)
        except (IndexError, TypeError):
            raise ArgumentValueError(
                f"{self.name} was compiled with a tuple for '{tuple_params.root(name)}' that has "
                f"an element {name}; got {bound[tuple_params.root(name)]!r}"
            ) from None

    def _init_handles(self) -> None:
        """Triton's: load the kernel where it will run, so that `n_regs`, `n_spills` and
        `metadata.shared` are known before a launch. A backend that runs kernels on the host
        (interp) loads nothing, and its kernels use no registers or shared memory (0)."""
        if self.backend.driver.load(self) is None:
            for name in ("num_regs", "n_spills", "shared"):
                self.metadata.setdefault(name, 0)

    @property
    def n_regs(self) -> int:
        """Registers a thread of the loaded kernel uses (Triton's `n_regs`)."""
        self._init_handles()
        return self.metadata["num_regs"]

    @property
    def n_spills(self) -> int:
        """Registers the loaded kernel spills (Triton's `n_spills`)."""
        self._init_handles()
        return self.metadata["n_spills"]


class Metadata(dict):
    """A compiled kernel's metadata: a dict (JSON in the cache) whose keys also read as
    attributes, as Triton's `compiled.metadata.shared` does."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(
                f"the kernel's metadata has no '{name}' (it has {', '.join(sorted(self))}"
                + (
                    "; a GPU kernel's resource use is known once loaded: call _init_handles()"
                    if name in ("shared", "num_regs", "n_spills")
                    else ""
                )
                + ")"
            ) from None


@user_entry
def compile(
    kernel: Any,
    signature: Mapping[str, str],
    constexprs: Mapping[str, Any] | None = None,
    backend: str | Backend | None = None,
    target: Any = None,
    divisibility: Iterable[str] = (),
    instrumentations: Sequence[Any] = (),
    equal_to_1: Iterable[str] = (),
    **options: Any,
) -> CompiledKernel:
    """Compile `kernel` ahead of time (no launch). `divisibility` names the arguments known to
    be multiples of 16 (or 16-byte aligned pointers), `equal_to_1` the integer arguments known to
    be 1 (compiled in as constants). The backend need not be available here; `target` (e.g.
    `"sm_90"`) is the architecture to compile for where the backend has several.
    With `instrumentations` (pass timing, IR printing) the passes always run, skipping the cache
    lookup, so that there is something to print and time; the result is still cached. A
    user's mistake is raised as a launch's is (`tilec.runtime.entry.user_entry`)."""
    if getattr(kernel, "arg_names", None) is None:
        raise LaunchArgumentError(
            f"tilec.compile takes a @tilec.jit kernel; got {kernel!r} (decorate it with @tilec.jit)"
        )
    if not isinstance(signature, Mapping):
        raise LaunchArgumentError(
            f"{kernel.__name__}: tilec.compile takes the signature as a dict of parameter "
            f"types ({{'x_ptr': '*fp32', 'n': 'i32'}}); got {type(signature).__name__}"
        )
    signature, constexprs = dict(signature), dict(constexprs or {})
    tuple_params.expand_descriptors(signature, constexprs)  # tensordesc<fp16[64, 64]>
    if not isinstance(backend, Backend):
        backend = get_backend(backend, require_available=False)
    if target is not None and "target" in attrs.fields_dict(backend.options_class):
        options.setdefault("target", target)
    return compile_cached(
        kernel, signature, constexprs, tuple(divisibility), backend,
        backend.parse_options(**options), target, instrumentations, tuple(equal_to_1),
    )  # fmt: skip


def compile_cached(
    kernel: Any,
    signature: dict[str, str],
    constexprs: dict[str, Any],
    divisible: tuple[str, ...],
    backend: Backend,
    options: BackendOptions,
    target: Any = None,
    instrumentations: Sequence[Any] = (),
    equal_to_1: tuple[str, ...] = (),
) -> CompiledKernel:
    """Memory cache, then disk cache (a bad entry is recompiled and rewritten), then the remote
    tier where one is configured (`tilec.remote_claims`), then compile."""
    unknown = sorted({tuple_params.root(p) for p in signature} - set(kernel.arg_names))
    if unknown:
        raise LaunchArgumentError(f"{kernel.__name__} has no parameter '{unknown[0]}'")
    signature = {  # in parameter order, a tuple's elements in its place
        p: signature[p]
        for p in tuple_params.expand(kernel.arg_names, signature)
        if p not in constexprs and signature[p] != "constexpr"
    }
    spec = (
        sorted(signature.items()),
        sorted(constexprs.items(), key=repr),
        sorted(divisible),
        sorted(equal_to_1),
    )
    key = cache.make_key(
        kernel.cache_key, spec, repr(options), backend.hash(options), __version__, target,
        settings.F32_DEFAULT.get(),  # the frontend's default tl.dot precision
        code_fingerprint("tilec"), code_fingerprint(type(backend).__module__.split(".")[0]),
        plugin_fingerprint(),
    )  # fmt: skip
    hit = None if instrumentations else cache.memory.get(key)
    if hit is not None:
        log.debug("%s: memory cache hit (%s)", kernel.__name__, key[:16])
        return hit
    with _COMPILE_LOCK:
        hit = None if instrumentations else cache.memory.get(key)
        if hit is not None:  # another thread compiled it while this one waited
            return hit
        entry = None if instrumentations else _read_entry(cache.read(key), key, backend)
        if entry is None:
            spec_facts = (divisible, equal_to_1)
            compile_args = (signature, constexprs, spec_facts, backend, options, target)
            asm, metadata, located = _shared_or_compiled(
                kernel, key, compile_args, instrumentations
            )
        else:
            log.info("%s: disk cache hit (%s)", kernel.__name__, key[:16])
            asm, metadata, located = entry
        # The interp executes the tir: parsed from the text that keeps the kernel's source
        # locations (for its error messages). GPU backends run their binaries.
        module = _parse_tir(located) if "gir" not in asm else None
        compiled = CompiledKernel(
            metadata.get("name") or kernel.__name__, asm, module, backend, options, signature,
            constexprs, key, metadata,
            arg_names=tuple(kernel.arg_names),
        )  # fmt: skip
        cache.memory[key] = compiled
    return compiled


def _shared_or_compiled(kernel: Any, key: str, compile_args: tuple, instrumentations) -> Any:
    """The entry `key` from the remote tier (written to the disk cache too), or compiled here,
    written to the disk cache and published (see `tilec.remote_claims`: many processes missing
    it at once wait for one's compile). An instrumented compile skips the remote tier."""
    backend = compile_args[3]
    if instrumentations:
        claim = contextlib.nullcontext(None)
    else:
        claim = remote_claims.shared("compile", key, lambda text: _read_entry(text, key, backend))
    with claim as shared:
        if shared is not None and shared.value is not None:
            log.info("%s: remote cache hit (%s)", kernel.__name__, key[:16])
            cache.write(key, shared.text)
            return shared.value
        log.info("%s: cache miss (%s), compiling for %s", kernel.__name__, key[:16], backend.name)
        start = time.perf_counter()
        asm, metadata, located = _compile_trimmed(kernel, *compile_args, instrumentations)
        log.info("%s: compiled in %.3f s", kernel.__name__, time.perf_counter() - start)
        text = _entry_text(asm, metadata, located)
        cache.write(key, text)
        if shared is not None:
            shared.publish(text)
        return asm, metadata, located


@functools.cache
def code_fingerprint(package: str) -> str:
    """A digest of the compiler's own code: each module file of `package` (tilec, or a backend
    plugin) by path, size and modification time (with a remote tier, its contents: hosts share
    entries however they installed the same code; `tilec.remote_cache.stamp`), so that an
    edited or upgraded compiler never reuses a cache entry another version wrote, as Triton keys
    its cache by its own sources. Computed once per process; the files are listed with
    `os.scandir` (a few ms for tilec's 250 files, where `Path.rglob` and `relative_to` took 20)."""
    module = sys.modules.get(package)
    if module is None or getattr(module, "__file__", None) is None:
        return package
    digest = hashlib.sha256(package.encode())
    contents = remote_cache.enabled()
    for relative, path in _module_files(os.path.dirname(module.__file__), ""):
        with contextlib.suppress(OSError):
            digest.update(f"{relative}:{remote_cache.stamp(path, contents)}\n".encode())
    return digest.hexdigest()


def _module_files(folder: str, prefix: str) -> list[tuple[str, str]]:
    """The `*.py` files below `folder` as (path relative to the package root, path), sorted by
    the relative path. `__pycache__` folders hold no sources: not listed (their `.pyc` files
    were a third of a first launch's listing)."""
    found: list[tuple[str, str]] = []
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            name = entry.name
            if name.endswith(".py"):
                found.append((f"{prefix}{name}", entry.path))
            elif name != "__pycache__" and entry.is_dir(follow_symlinks=False):
                found += _module_files(entry.path, f"{prefix}{name}/")
    return sorted(found, key=lambda item: item[0])


def _entry_text(asm: dict[str, str | bytes], metadata: dict[str, Any], located: str) -> str:
    stages = {
        name: {"base64": base64.b64encode(v).decode()} if isinstance(v, bytes) else {"text": v}
        for name, v in asm.items()
    }
    return json.dumps({"asm": stages, "metadata": metadata, "located": located}, sort_keys=True)


def _read_entry(
    text: str | None, key: str, backend: Backend
) -> tuple[dict[str, str | bytes], dict[str, Any], str] | None:
    """The stages and metadata of cache entry `key`; None for an absent or unusable one, which is
    recompiled, never trusted. An authentic entry without a stage or metadata that `backend`
    loads and launches from (`Backend.launch_stages`, `launch_metadata`) is a miss too, with a
    warning: it was not written by this compiler's complete compile."""
    if text is None:
        return None
    try:
        data = json.loads(text)
        asm: dict[str, str | bytes] = {}
        for name, stage in data["asm"].items():
            asm[name] = base64.b64decode(stage["base64"]) if "base64" in stage else stage["text"]
        located = data["located"]
        metadata = dict(data["metadata"])
        if not isinstance(asm.get("tir"), str) or not isinstance(located, str):
            return None
        lacking = [s for s in backend.launch_stages if not isinstance(asm.get(s), (str, bytes))]
        lacking += [f"metadata {k}" for k in backend.launch_metadata if k not in metadata]
        if lacking:
            cache_files.warn_once(
                cache.cache_dir() / f"{key}{cache.SUFFIX}",
                f"the cache entry lacks what backend '{backend.name}' launches from "
                f"({', '.join(lacking)})",
            )
            return None
        if "gir" not in asm:
            _parse_tir(located)  # the interp runs the tir: it must parse
        return asm, metadata, located
    except Exception:
        return None


def _parse_tir(text: str) -> Operation:
    """The tir module of `text` (for the interp, which runs it), with the core's dialects
    registered: a launch from the disk cache may be the process's first use of the IR (a plugin
    importing them on load had hidden that every such interp launch missed)."""
    # deferred: GPU launches never parse IR
    import tilec.dialects  # noqa: F401
    from tilec.ir.parser import parse_module  # deferred: GPU launches never parse IR

    return parse_module(text)


def _compile_trimmed(*args: Any) -> Any:
    """`_compile`, with a kernel's compile error raised from here: the frames inside tilec
    (the frontend's visitor, the passes) are trimmed from its traceback unless `TILEC_DEBUG` is
    on, so that the user sees their own frames and the error's location."""
    try:
        return _compile(*args)
    except CompilationError as error:
        if settings.DEBUG.enabled():
            raise
        raise error.with_traceback(None) from error.__cause__  # Triton's tests read the cause


def _compile(kernel, signature, constexprs, spec_facts, backend, options, target, instrumentations):
    """The kernel's tir from the frontend, then every stage of the compile pipeline."""
    from tilec.frontend.kernel_names import symbol_name  # deferred: compiles only
    from tilec.ir.attributes import StringAttr  # deferred: compiles only
    from tilec.ir.verifier import KernelDiagnostic  # deferred: compiles only

    features = backend.frontend_features(options)
    with target_info.compiling_for(compile_target(backend, options), options.num_warps, features):
        module = _tir_module(kernel, signature, constexprs, spec_facts)
    name = symbol_name(kernel, signature, constexprs, spec_facts[1])  # @jit(repr=...)
    if name != kernel.__name__:
        _kernel_func(module, kernel.__name__).attributes["sym_name"] = StringAttr(name)
    # deferred: the pass pipeline (passes, layouts, lowering) loads on a cache miss only
    from tilec.pipeline import compile_module

    try:
        compiled = compile_module(
            module,
            backend,
            options,
            name=name,
            target=target,
            instrumentations=instrumentations,
        )
    except KernelDiagnostic as diagnostic:  # a limit the kernel passes, found by a pass
        raise _located(diagnostic) from None
    return compiled.asm, compiled.metadata, compiled.located


def _located(diagnostic: KernelDiagnostic) -> Exception:
    """`diagnostic` as a CompilationError at its op's line of the kernel."""
    from tilec.ir.attributes import FileLineColLoc  # deferred: compiles only

    loc = diagnostic.op.location if diagnostic.op is not None else None
    if not isinstance(loc, FileLineColLoc):
        return diagnostic
    source = linecache.getline(loc.file, loc.line).rstrip()
    return CompilationError(
        diagnostic.message, loc.file, loc.line, loc.col, source, diagnostic.hint
    )


def compile_target(backend: Backend, options: BackendOptions) -> GPUTarget | None:
    """Triton's `GPUTarget` of what `backend` compiles for with `options`, which
    `tl.target_info` answers for inside kernels (None: a GPU backend with neither a `target`
    option nor a device, which the pipeline then refuses itself)."""
    if not isinstance(backend, GpuBackend):
        return GPUTarget(backend.triton_name or backend.name, backend.name, 1)
    try:
        target = backend.resolve_target(options)
    except BackendUnavailableError:
        return None
    arch: int | str = target
    capability = getattr(backend.archs.check(target), "capability", None)
    if capability is not None:  # Triton's CUDA arch: the compute capability as an int
        arch = capability[0] * 10 + capability[1]
    return GPUTarget(backend.triton_name or backend.name, arch, backend.lanes(target))


def compile_to_tir(kernel: Any, signature: dict[str, str], constexprs: dict[str, Any]) -> Operation:
    """The frontend's tir of `kernel` (`tilec.frontend.generator.compile_to_tir`)."""
    from tilec.frontend import generator  # deferred: the code generator loads on the first compile

    return generator.compile_to_tir(kernel, signature, constexprs)


def _kernel_func(module: Operation, name: str) -> Any:
    """The kernel's `func.func` named `name` in the tir `module`."""
    from tilec.dialects.func import FuncOp  # deferred: the dialects load on the first compile

    return next(op for op in module.walk() if isinstance(op, FuncOp) and op.name_str == name)


def _tir_module(kernel, signature, constexprs, spec_facts) -> Operation:
    """The frontend's tir of `kernel`, with the specialization facts on its arguments: the
    divisible ones get `tile.divisibility = 16`, those equal to 1 are compiled in."""
    # deferred: the dialects load on the first compile
    from tilec.dialects.arith import ConstantOp
    from tilec.ir.attributes import IntegerAttr

    divisible, equal_to_1 = spec_facts
    module = compile_to_tir(kernel, signature, constexprs)
    runtime = [p for p in tuple_params.expand(kernel.arg_names, signature) if p not in constexprs]
    func = _kernel_func(module, kernel.__name__)
    for index, param in enumerate(runtime):
        if param in divisible:
            func.set_argument_attribute(index, "tile.divisibility", IntegerAttr(16))
        if param in equal_to_1:
            # The argument stays in the signature (the launch passes it) but is compiled in.
            argument = func.body.block.args[index]
            one = ConstantOp(IntegerAttr(1, argument.type))
            func.body.block.insert_before(one, func.body.block.first_op)
            argument.replace_all_uses_with(one.result)
            func.set_argument_attribute(index, "tile.equal_to", IntegerAttr(1, argument.type))
    return module
