"""The `tilec` command: `opt` (run passes on textual IR), `passes` (the pipeline), `backends`,
`run` (a Python script on a chosen backend), `compile` (one kernel ahead of time, printed),
`cache` (the autotuning results and the compile cache: shown, cleared) and `fuzz` (random
kernels against the interpreter, a NumPy model and every backend's code generation).

User mistakes (a missing file, a parse or verify error, an unknown pass or backend, an ordering
cycle, any `tilec.TilecError`: a kernel's compile error, a launch's bad argument, grid or option,
also from a `tilec run` script, with the launch's line) print a message to stderr and return 1
(with `TILEC_DEBUG=1` a `TilecError` keeps its traceback); argument errors return 2 (argparse).
Anything else is a bug in tilec or a plugin and keeps its traceback.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import importlib.util
import os
import re
import runpy
import sys
import traceback
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

import tilec.dialects  # noqa: F401  (registers the ops the parser looks up)
from tilec import remote_cache, settings
from tilec.backend import GpuBackend
from tilec.errors import BackendError, OptionError, TilecError
from tilec.frontend import CompilationError
from tilec.ir import Diagnostic, ParseError, parse_module, print_module, verify
from tilec.ir.type_names import BY_SIGNATURE, is_signature_type
from tilec.layout.rules import GpuTarget, LayoutRules
from tilec.passes.base import STAGES, Pass
from tilec.passes.instrumentation import PassTiming, PrintIRAfter
from tilec.passes.manager import (
    PassManager,
    PassVerifyError,
    PipelineError,
    parse_pipeline,
    pass_origin,
    to_dot,
)
from tilec.pipeline import backend_stages, other_backend_origins
from tilec.pipeline.validation import ValidatePasses, ValidationError
from tilec.plugin import manager as plugin_host
from tilec.runtime import cache, check, compiler
from tilec.runtime.jit import JITFunction
from tilec.version import __version__

PROG = "tilec"


class UserError(Exception):
    """A mistake the user can fix; main() prints it without a traceback and returns 1."""


# Seams: the plugin host provides these; tests replace them. -------------------------------------


def load_pass_classes() -> list[type[Pass]]:
    """Core passes and those of every plugin that loaded."""
    return plugin_host.load_pass_classes()


def load_backends() -> dict[str, Any]:
    """Every discovered backend by name."""
    return plugin_host.load_backends()


def plugin_failures() -> list[tuple[str, str]]:
    """(plugin, reason) for each plugin that failed to load."""
    return plugin_host.plugin_failures()


def pass_plugin_failures() -> list[tuple[str, str]]:
    """(plugin, reason) for each plugin whose passes are left out of the pipeline."""
    return plugin_host.pass_plugin_failures()


# Commands -------------------------------------------------------------------------------------


def _pass_manager(verify_each: bool = True) -> PassManager:
    return PassManager.from_classes(load_pass_classes(), verify_each=verify_each)


def _read_input(path: str) -> tuple[str, str]:
    """The text of `path` (`-` is stdin) and the file name diagnostics use."""
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        with open(path, encoding="utf-8") as file:
            return file.read(), path
    except OSError as err:
        raise UserError(f"cannot read '{path}': {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise UserError(f"cannot read '{path}': not UTF-8 text ({err.reason})") from None


def _split_names(values: Sequence[str] | None) -> list[str]:
    return [name.strip() for value in values or () for name in value.split(",") if name.strip()]


def cmd_opt(args: argparse.Namespace) -> int:
    text, filename = _read_input(args.file)
    plugin_host.load_ir_modules()  # the plugins' layouts and ops, registered with the parser
    module = parse_module(text, filename)
    if args.verify:
        verify(module)

    entries = parse_pipeline(args.passes) if args.passes is not None else []
    print_after = _split_names(args.print_after)
    if args.validate and not entries:
        raise UserError("--validate needs --passes: the passes whose results it compares")
    if entries or print_after:
        manager = _pass_manager(verify_each=args.verify)
        names = [name for name, _ in entries]
        pipeline = [cls.name for cls in manager.pipeline(names)]
        for name in print_after:
            manager.check_known(name, "--print-after")
            if name not in pipeline:
                raise UserError(
                    f"--print-after: pass '{name}' is not in the pipeline ({', '.join(pipeline)})"
                )
        print_names = None if args.print_after_all else print_after
        instrumentations, timing = _instrumentations(args.timing, print_names, args.locations)
        validator = ValidatePasses(stages=("tir",)) if args.validate else None
        if validator is not None:
            instrumentations.insert(0, validator)
        options = {name: opts for name, opts in entries if opts}
        manager.run(
            module,
            names,
            options=options,
            instrumentations=instrumentations,
            target=_gpu_target(args),
        )
        if timing is not None:
            timing.print_report(sys.stderr)
        if validator is not None:
            _report_validation(validator)

    output = print_module(module, locations=args.locations)
    if args.output in (None, "-"):
        sys.stdout.write(output)
        sys.stdout.flush()
    else:
        try:
            with open(args.output, "w", encoding="utf-8") as file:
                file.write(output)
        except OSError as err:
            raise UserError(f"cannot write '{args.output}': {err.strerror or err}") from None
    return 0


def _report_validation(validator: ValidatePasses) -> None:
    """Say which functions --validate could not check, and fail where it checked none: a
    validation that silently checked nothing would pass any rewrite."""
    for name, reason in validator.skipped.items():
        print(f"tilec opt: warning: @{name} is not validated: {reason}", file=sys.stderr)
    if not validator.checked:
        raise UserError(
            "--validate checked no function: it runs kernels (pointer and scalar arguments, "
            "no results) on the interpreter; see the warnings above"
        )


def _select_backend(name: str, backends: dict[str, Any]) -> Any:
    if name in backends:
        return backends[name]
    known = sorted(backends)
    matches = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean '{matches[0]}'?" if matches else ""
    listing = ", ".join(known) if known else "none are installed"
    raise UserError(f"unknown backend '{name}' (known: {listing}){hint}")


def cmd_passes(args: argparse.Namespace) -> int:
    manager = _pass_manager()
    if args.all:
        classes = sorted(manager.registry.values(), key=lambda c: STAGES.index(c.stage))
        rows = [(c.name, c.stage, pass_origin(c), _pass_flags(c)) for c in classes]
        _print_rows(rows)
        return _report_plugin_failures()
    backends = load_backends()
    backend = _select_backend(args.backend, backends) if args.backend else None
    stages = backend_stages(backend) if backend is not None else ("tir",)
    graph = manager.graph(None, stages, skip_origins=other_backend_origins(backend, backends))
    order = manager.order(graph)
    if args.dot:
        sys.stdout.write(to_dot(graph))
        return 0
    _print_rows([(n, graph.nodes[n]["stage"], graph.nodes[n]["origin"], "") for n in order])
    return _report_plugin_failures()


def _report_plugin_failures() -> int:
    """Print each plugin left out of the pipeline and why (stderr); 1 if any, else 0: a pass
    author checking the order sees that their plugin was dropped, in the exit code too."""
    failures = pass_plugin_failures()
    for plugin, reason in failures:
        print(f"tilec: plugin '{plugin}' is left out: {reason}", file=sys.stderr)
    return 1 if failures else 0


def _pass_flags(cls: type[Pass]) -> str:
    flags = []
    if cls.is_analysis:
        flags.append("analysis")
    elif not cls.default_pipeline:
        flags.append("not in default pipeline")
    return f"({', '.join(flags)})" if flags else ""


def _print_rows(rows: list[tuple[str, ...]]) -> None:
    if not rows:
        return
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
        print("  ".join(cells).rstrip())


def cmd_backends(args: argparse.Namespace) -> int:
    backends = load_backends()
    width = max((len(name) for name in backends), default=0)
    for name in sorted(backends):
        availability = backends[name].is_available()
        status = "available" if availability.available else f"unavailable: {availability.reason}"
        print(f"{name.ljust(width)}  {status}")
    if not backends:
        print("no backends installed")
    for plugin, reason in plugin_failures():
        print(f"plugin '{plugin}' failed to load: {reason}")
    return 0


# run and compile ------------------------------------------------------------------------------


def _require_backend(name: str) -> None:
    """Select backend `name` for this process (and its children), or a UserError naming why not."""
    backend = _select_backend(name, load_backends())
    availability = backend.is_available()
    if not availability:
        raise UserError(f"backend '{name}' is not available: {availability.reason}")
    os.environ[settings.BACKEND.name] = name  # for child processes too
    compiler.set_backend(name)


def _first_gpu_backend() -> str:
    """The first available GPU backend by priority, or a UserError naming why each is not."""
    from tilec.fuzz.check import gpu_backends  # deferred: needed by `tilec fuzz` alone

    reasons = []
    for backend in gpu_backends():
        availability = backend.is_available()
        if availability:
            return backend.name
        reasons.append(f"{backend.name}: {availability.reason}")
    raise UserError(f"no GPU backend is available ({'; '.join(reasons) or 'none installed'})")


def cmd_run(args: argparse.Namespace) -> int:
    if not os.path.isfile(args.file):
        raise UserError(f"cannot read '{args.file}': no such file")
    if args.backend:
        _require_backend(args.backend)
    if args.check:
        os.environ[settings.CHECK.name] = "1"  # for child processes too
        check.enabled = True
    script_args = list(args.script_args or ())
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [args.file, *script_args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(args.file)))
    try:
        runpy.run_path(args.file, run_name="__main__")
    except TilecError as error:
        if settings.DEBUG.enabled() or isinstance(error, CompilationError):
            raise  # a compile error says where in the kernel; TILEC_DEBUG: the whole traceback
        raise UserError(f"{_call_site(error)}{error}") from None
    except check.CheckError as error:
        if settings.DEBUG.enabled():
            raise
        raise UserError(
            f"{_call_site(error)}--check: {error}. The backend computed something else than the "
            "interpreter, the reference: a bug in the backend or in tilec, not in your script; "
            f"report it with the kernel ({settings.DEBUG.name}=1 shows the traceback)"
        ) from None
    except SystemExit as exit_:
        if exit_.code is None or isinstance(exit_.code, int):
            return exit_.code or 0
        print(exit_.code, file=sys.stderr)
        return 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        _say_backends(args.backend)
    return 0


def _call_site(error: BaseException) -> str:
    """`file:line: ` of the launch that raised `error` (its `call_site`), else of the script's
    innermost frame in its traceback; nothing where no frame is the script's."""
    call_site = getattr(error, "call_site", None)
    if call_site is not None:
        return f"{call_site}: "
    internal = (os.path.dirname(os.path.abspath(__file__)), os.path.abspath(runpy.__file__))
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        path = os.path.abspath(frame.filename)
        if not path.startswith(internal) and not frame.filename.startswith("<"):
            return f"{frame.filename}:{frame.lineno}: "
    return ""


def _say_backends(option: str | None) -> None:
    """Which backend(s) `tilec run`'s script ran on, and why (on stderr)."""
    used = compiler.used_backends
    for name, why in used.items():
        if name == option:
            why = "named by --backend"
        elif name == "interp" and check.enabled and len(used) > 1:
            why = "the --check reference"
        print(f"tilec run: backend '{name}' ({why})", file=sys.stderr)


def parse_assignments(text: str, option: str) -> dict[str, str]:
    """`a=x,b=y` -> {'a': 'x', 'b': 'y'}; anything else is a UserError naming `option`."""
    result: dict[str, str] = {}
    for item in text.split(","):
        name, sep, value = (part.strip() for part in item.partition("="))
        if not sep or not name.isidentifier() or not value:
            raise UserError(
                f"{option}: expected NAME=VALUE pairs separated by commas "
                f"(e.g. 'x_ptr=*fp32,n=i32'), got '{item.strip()}'"
            )
        if name in result:
            raise UserError(f"{option}: '{name}' is given twice")
        result[name] = value
    return result


def _check_type(name: str, type_: str) -> None:
    if type_ != "constexpr" and not is_signature_type(type_):
        known = ", ".join(sorted(BY_SIGNATURE))
        raise UserError(
            f"--signature: unknown type '{type_}' for '{name}' "
            f"(types: {known}; '*T' a pointer to T; constexpr)"
        )


def _constexpr_value(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _load_kernel(spec: str) -> Any:
    path, sep, name = spec.rpartition(":")
    if not sep or not path or not name:
        raise UserError(f"expected FILE.py:KERNEL, got '{spec}'")
    if not os.path.isfile(path):
        raise UserError(f"cannot read '{path}': no such file")
    module_name = os.path.splitext(os.path.basename(path))[0]
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    if module_spec is None or module_spec.loader is None:
        raise UserError(f"cannot import '{path}' (not a Python file?)")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules.setdefault(module_name, module)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    module_spec.loader.exec_module(module)
    kernel = getattr(module, name, None)
    if not isinstance(kernel, JITFunction):
        kernels = sorted(k for k, v in vars(module).items() if isinstance(v, JITFunction))
        what = "has no" if kernel is None else "has no @tilec.jit kernel"
        raise UserError(f"'{path}' {what} '{name}' (kernels: {', '.join(kernels) or 'none'})")
    return kernel


def cmd_compile(args: argparse.Namespace) -> int:
    kernel = _load_kernel(args.kernel)
    signature = parse_assignments(args.signature, "--signature")
    for name, type_ in signature.items():
        _check_type(name, type_)
    constexprs: dict[str, Any] = {}
    for text in args.constexpr or ():
        constexprs.update(
            {k: _constexpr_value(v) for k, v in parse_assignments(text, "--constexpr").items()}
        )
    for name in [*signature, *constexprs]:
        if name not in kernel.arg_names:
            raise UserError(
                f"{kernel.__name__} has no parameter '{name}' "
                f"(parameters: {', '.join(kernel.arg_names)})"
            )
    if args.backend:
        backend = _select_backend(args.backend, load_backends())
    else:
        try:
            backend = compiler.get_backend(require_available=False)
        except (RuntimeError, ValueError) as err:
            raise UserError(str(err)) from None
    instrumentations, timing = _instrumentations(args.timing, None if args.print_after_all else [])
    divisible = _split_names(args.divisibility)
    for name in divisible:
        if name not in signature:
            raise UserError(f"--divisibility: '{name}' is not in --signature")
    options: dict[str, Any] = {}
    if args.num_warps is not None:
        options["num_warps"] = args.num_warps
    try:  # a missing constexpr value or argument type is a TypeError of the frontend
        compiled = compiler.compile(
            kernel, signature, constexprs, backend=backend, target=args.target,
            divisibility=divisible, instrumentations=instrumentations, **options,
        )  # fmt: skip
    except (OptionError, BackendError) as err:  # a bad option value; no target and no device
        raise UserError(re.sub(r"pass target='(\w+)'", r"pass --target \1", str(err))) from None
    except TypeError as err:
        raise UserError(f"{err} (give it with --signature or --constexpr)") from None
    except ValueError as err:  # a bad option value or target, named by the backend
        raise UserError(str(err)) from None
    except RuntimeError as err:  # no target and no device; a code generator's diagnostic
        raise UserError(re.sub(r"pass target='(\w+)'", r"pass --target \1", str(err))) from None
    if timing is not None:
        timing.print_report(sys.stderr)
    if args.emit not in compiled.asm:
        stages = ", ".join(compiled.asm)
        raise UserError(f"--emit: backend '{backend.name}' has no stage '{args.emit}' ({stages})")
    output = compiled.asm[args.emit]
    if args.output:
        mode = "wb" if isinstance(output, bytes) else "w"
        with open(args.output, mode) as file:
            file.write(output)
    elif isinstance(output, bytes):
        raise UserError(f"--emit {args.emit} is binary: write it to a file with -o FILE")
    else:
        sys.stdout.write(output)
        sys.stdout.flush()
    return 0


def _gpu_target(args: argparse.Namespace) -> Any:
    """The `GpuTarget` the gir passes of `tilec opt` get: the defaults (32 lanes, 4 warps)
    unless --threads-per-warp, --num-warps or --arch say otherwise."""
    for flag, value in (
        ("--threads-per-warp", args.threads_per_warp),
        ("--num-warps", args.num_warps),
    ):
        if value is not None and (value < 1 or value & (value - 1)):
            raise UserError(f"{flag} must be a power of two, got {value}")
    rules = LayoutRules(threads_per_warp=args.threads_per_warp or 32)
    if args.arch and not args.backend:
        raise UserError("--arch needs --backend: the backend whose layout rules the arch selects")
    if args.backend:
        if not args.arch:
            raise UserError("--backend needs --arch: the architecture whose layout rules to use")
        backend = _select_backend(args.backend, load_backends())
        try:
            rules = backend.layout_rules(args.arch)
        except ValueError as err:
            raise UserError(str(err)) from None
        if args.threads_per_warp is not None:
            rules = attrs.evolve(rules, threads_per_warp=args.threads_per_warp)
    return GpuTarget(rules, arch=args.arch or "", num_warps=args.num_warps or 4)


def _instrumentations(
    timing: bool, print_after: list[str] | None, locations: bool = False
) -> tuple[list[Any], Any]:
    """The pass instrumentations the flags ask for, and the timing one (or None) to report.

    `print_after` names the passes to print after; None means all, an empty list none.
    """
    instrumentations: list[Any] = []
    pass_timing = PassTiming() if timing else None
    if pass_timing is not None:
        instrumentations.append(pass_timing)
    if print_after is None or print_after:
        instrumentations.append(PrintIRAfter(sys.stderr, print_after, locations=locations))
    return instrumentations, pass_timing


def cmd_cache(args: argparse.Namespace) -> int:
    # deferred: the autotuner's store is needed by this command alone
    from tilec.runtime.autotune import store

    if args.action == "clear" and args.clear:
        raise UserError("give what to clear once: `tilec cache clear WHAT` or `--clear WHAT`")
    if args.action != "clear" and args.what is not None:
        raise UserError(f"`tilec cache {args.action or 'info'}` takes no '{args.what}'")
    if args.action == "clear":
        args.clear = args.what or "all"
    if args.remote:
        return _clear_remote(args.clear)
    root = settings.cache_dir()
    compiled = cache.entries()  # tilec's own entries: a shared folder's other files stay
    results = store.entries()
    if args.clear in ("autotune", "all"):
        for path, _ in results:
            path.unlink(missing_ok=True)
        print(f"removed {len(results)} autotuning results from {store.folder()}")
    if args.clear in ("compile", "all"):
        for path in compiled:
            path.unlink(missing_ok=True)
        print(f"removed {len(compiled)} compiled kernels from {root}")
    if args.clear:
        return 0
    size = sum(path.stat().st_size for path in compiled)
    bound = settings.cache_max_bytes() / 1e6
    print(
        f"compile cache: {root}: {len(compiled)} kernels, {size / 1e6:.2f} MB "
        f"(bound {bound:.0f} MB, {settings.CACHE_MAX_MB.name})"
    )
    print(f"autotuning results: {store.folder()}: {len(results)}")
    for path, about in results:
        if about is None:
            print(f"  {path.name}: corrupt (re-tuned at its next use)")
            continue
        timings = about.get("timings", {})
        best = min(timings, key=lambda k: timings[k][0]) if timings else "none"
        print(f"  {about.get('kernel')} {about.get('key')} on {about.get('device')}: "
              f"{len(timings)} configs timed, best {best}")  # fmt: skip
    for line in remote_cache.describe():
        print(line)
    return 0


def _clear_remote(what: str | None) -> int:
    """`tilec cache clear [WHAT] --remote`: tilec's keys on the remote tier, the local caches
    left as they are."""
    if what is None:
        raise UserError("--remote goes with `tilec cache clear [WHAT]`")
    if settings.remote_cache() is None:
        raise UserError(
            f"--remote: there is no remote tier ({settings.REMOTE_CACHE.name} is unset)"
        )
    kinds = {"autotune": ("autotune",), "compile": ("compile", "pipelines")}.get(what)
    deleted = remote_cache.clear(kinds or remote_cache.KINDS)
    where = remote_cache.address(settings.remote_cache() or "")
    if deleted is None:
        raise UserError(f"the remote cache {where} cannot be reached: nothing was removed")
    print(f"removed {deleted} entries from {where} (prefix {settings.remote_cache_prefix()!r})")
    return 0


def cmd_fuzz(args: argparse.Namespace) -> int:
    from tilec.fuzz.campaign import run_campaign  # deferred: needed by this command alone

    if args.count is None and args.time is None:
        raise UserError("give --count N, --time SECONDS, or both")
    if (args.count is not None and args.count < 1) or (args.time is not None and args.time <= 0):
        raise UserError("--count and --time must be positive")
    if args.jobs < 1:
        raise UserError("--jobs must be at least 1")
    if args.mode == "device":
        _require_backend(args.backend or _first_gpu_backend())
    out = Path(args.out) if args.out else None
    summary = run_campaign(
        args.mode, args.seed, args.count, args.time,
        jobs=args.jobs, shrink_findings=args.shrink, shrink_seconds=args.shrink_time, out_dir=out,
        log=lambda line: print(line, flush=True), timeout=args.timeout,
    )  # fmt: skip
    print(summary.line())
    return 1 if summary.results else 0


# Argument parsing -----------------------------------------------------------------------------


class _HelpFormatter(argparse.HelpFormatter):
    """Help whose `{backends}`, `{example_targets}` and `{check_targets}` are the installed
    backends' (`_backend_examples`), read only when help is printed."""

    def _format_text(self, text: str) -> str:
        return super()._format_text(_backend_examples(text))

    def _expand_help(self, action: argparse.Action) -> str:
        return _backend_examples(super()._expand_help(action))


class _Parser(argparse.ArgumentParser):
    """An argument parser (and its subcommands' parsers) with `_HelpFormatter`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


_EXAMPLE_FIELDS = ("{backends}", "{example_targets}", "{check_targets}")


def _backend_examples(text: str) -> str:
    """`text` with the installed backends' names (by priority), example targets and check
    targets in place of `{backends}`, `{example_targets}` and `{check_targets}`."""
    if not any(field in text for field in _EXAMPLE_FIELDS):
        return text
    backends = compiler.automatic_order()
    gpus = [b for b in backends if isinstance(b, GpuBackend)]
    facts = {
        "{backends}": ", ".join(b.name for b in backends) or "none installed",
        "{example_targets}": ", ".join(f"{b.example_target} for {b.name}" for b in gpus)
        or "none installed",
        "{check_targets}": ", ".join(
            f"{b.name} {' and '.join(b.check_targets)}" for b in gpus if b.check_targets
        )
        or "none installed",
    }
    for field, value in facts.items():
        text = text.replace(field, value)
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="The tilec tile-level GPU kernel compiler.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    opt = commands.add_parser(
        "opt",
        help="parse textual IR, run passes, print the result",
        description="Parse textual IR, verify it, run passes and print the result. "
        "Without --passes it round-trips the IR (parse, verify, print).",
    )
    opt.add_argument("file", metavar="FILE", help="input IR file ('-' reads stdin)")
    opt.add_argument(
        "--passes",
        metavar="PIPELINE",
        help="comma-separated pass names, each optionally with options: 'licm{max-depth=2},cse'",
    )
    opt.add_argument(
        "--print-after-all", action="store_true", help="print the IR after every pass (to stderr)"
    )
    opt.add_argument(
        "--print-after",
        action="append",
        metavar="NAME",
        help="print the IR after pass NAME (to stderr); repeatable or comma-separated",
    )
    opt.add_argument(
        "--timing", action="store_true", help="print the wall time of each pass (to stderr)"
    )
    opt.add_argument(
        "--no-verify",
        dest="verify",
        action="store_false",
        help="verify neither the input nor the IR after each pass",
    )
    opt.add_argument(
        "--threads-per-warp",
        type=int,
        metavar="N",
        help="lanes of a warp for the gir passes (default: --arch's with --backend, else 32)",
    )
    opt.add_argument(
        "--num-warps", type=int, metavar="N", help="warps of a block for the gir passes (default 4)"
    )
    opt.add_argument("--arch", metavar="NAME", help="the GPU architecture the gir passes target")
    opt.add_argument(
        "--backend",
        metavar="NAME",
        help="take the gir passes' layout rules (tensor cores, ...) for --arch from backend NAME",
    )
    opt.add_argument(
        "--validate",
        action="store_true",
        help="translation validation: run each function on the interpreter with random inputs "
        "before the passes and after every tir pass that rewrote it; name the first pass whose "
        "results differ, with the IR before and after it",
    )
    opt.add_argument("--locations", action="store_true", help="print source locations")
    opt.add_argument("-o", dest="output", metavar="OUT", help="write the result to OUT")
    opt.set_defaults(handler=cmd_opt)

    passes = commands.add_parser(
        "passes",
        help="print the resolved default pass pipeline",
        description="Print the default pipeline in the order it runs, one pass a line with its "
        "stage and origin (the package that provides it). With --backend, the pipeline of that "
        "backend's stages without other backends' passes; without it, the target-neutral tir "
        "pipeline.",
    )
    passes.add_argument("--backend", metavar="NAME", help="the pipeline of backend NAME's stages")
    passes.add_argument("--dot", action="store_true", help="print the pipeline graph in DOT")
    passes.add_argument(
        "--all", action="store_true", help="list every registered pass and analysis instead"
    )
    passes.set_defaults(handler=cmd_passes)

    backends = commands.add_parser("backends", help="list backends and whether they are available")
    backends.set_defaults(handler=cmd_backends)

    run = commands.add_parser(
        "run",
        help="run a Python script with a backend selected",
        usage=f"{PROG} run [-h] [--backend NAME] [--check] FILE [-- ARGS ...]",
        description="Run FILE as __main__ with --backend selected (TILEC_BACKEND and "
        "tilec.set_backend); sys.argv is FILE and the ARGS after '--'.",
    )
    run.add_argument("file", metavar="FILE", help="the Python script")
    run.add_argument("--backend", metavar="NAME", help="the backend: {backends}")
    run.add_argument(
        "--check",
        action="store_true",
        help="also run every launch on the interpreter and compare the results",
    )
    run.set_defaults(handler=cmd_run)

    compile_ = commands.add_parser(
        "compile",
        help="compile one kernel ahead of time and print a stage",
        description="Compile KERNEL of FILE.py for a signature and print one stage's text.",
    )
    compile_.add_argument("kernel", metavar="FILE.py:KERNEL", help="the file and kernel name")
    compile_.add_argument(
        "--signature",
        required=True,
        metavar="SIG",
        help="argument types: 'x_ptr=*fp32,n=i32' (a pointer is '*' and its element type)",
    )
    compile_.add_argument(
        "--constexpr",
        action="append",
        metavar="NAME=VALUE",
        help="constexpr values, e.g. BLOCK=1024; repeatable or comma-separated",
    )
    compile_.add_argument("--backend", metavar="NAME", help="the backend (need not be available)")
    compile_.add_argument("--emit", default="tir", metavar="STAGE", help="the stage to print")
    compile_.add_argument(
        "--target",
        metavar="ARCH",
        help="the architecture (e.g. {example_targets}) when there is no device",
    )
    compile_.add_argument("--num-warps", type=int, metavar="N", help="warps per program")
    compile_.add_argument(
        "--divisibility",
        action="append",
        metavar="NAMES",
        help="comma-separated arguments known to be multiples of 16 (16-byte aligned pointers)",
    )
    compile_.add_argument("-o", "--output", metavar="FILE", help="write the stage to FILE")
    compile_.add_argument(
        "--print-after-all", action="store_true", help="print the IR after every pass (to stderr)"
    )
    compile_.add_argument(
        "--timing", action="store_true", help="print the wall time of each pass (to stderr)"
    )
    compile_.set_defaults(handler=cmd_compile)

    cache_ = commands.add_parser(
        "cache",
        help="show or clear the autotuning results and the compile cache",
        description="Show the compile cache's size and the stored autotuning results (under "
        "TILEC_CACHE_DIR): `tilec cache info`; or clear them: `tilec cache clear "
        "[autotune|compile|all]`.",
    )
    cache_.add_argument(
        "action",
        nargs="?",
        choices=("info", "clear"),
        help="info (the default): what the caches hold; clear: remove it",
    )
    cache_.add_argument(
        "what",
        nargs="?",
        choices=("autotune", "compile", "all"),
        help="what `clear` removes: the autotuning results, the compiled kernels, or both "
        "(the default)",
    )
    cache_.add_argument(
        "--clear",
        choices=("autotune", "compile", "all"),
        help="the same as `tilec cache clear WHAT`",
    )
    cache_.add_argument(
        "--remote",
        action="store_true",
        help="clear tilec's keys on the remote tier (TILEC_REMOTE_CACHE) instead of the local "
        "caches",
    )
    cache_.set_defaults(handler=cmd_cache)

    fuzz = commands.add_parser(
        "fuzz",
        help="run random kernels and report compiler bugs",
        description="Generate random kernels from consecutive seeds and check each: 'interp' "
        "against a NumPy model of the same program, 'codegen' through every GPU backend's code "
        "generation on the CPU (each plugin's check targets: {check_targets}), "
        "'device' on a GPU backend's device (--backend, else the first available) against "
        "the interpreter. Kernels run in a child "
        "process, so an LLVM abort or a hang is reported too. Each new finding is shrunk to a "
        "small kernel (written under --out). Exits 1 when there are findings.",
    )
    fuzz.add_argument("--mode", choices=("interp", "codegen", "device"), default="interp")
    fuzz.add_argument(
        "--backend", metavar="NAME", help="the GPU backend of --mode device (default: the first "
        "available by priority)",
    )  # fmt: skip
    fuzz.add_argument("--seed", type=int, default=0, help="the first seed (default 0)")
    fuzz.add_argument("--count", type=int, metavar="N", help="stop after N kernels")
    fuzz.add_argument("--time", type=float, metavar="SECONDS", help="stop after SECONDS")
    fuzz.add_argument(
        "--jobs", type=int, default=1, metavar="N", help="child processes at once (default 1)"
    )
    fuzz.add_argument("--out", metavar="DIR", help="write a reproducer of each finding to DIR")
    fuzz.add_argument(
        "--no-shrink", dest="shrink", action="store_false", help="report findings unshrunk"
    )
    fuzz.add_argument(
        "--shrink-time", type=float, default=120.0, metavar="SECONDS",
        help="time spent shrinking each new finding (default 120)",
    )  # fmt: skip
    fuzz.add_argument(
        "--timeout", type=float, default=300.0, metavar="SECONDS",
        help="a kernel that takes longer is a finding (default 300)",
    )  # fmt: skip
    fuzz.set_defaults(handler=cmd_fuzz)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Plugin warnings as one line a user reads, not a source excerpt."""
    text = f"{PROG}: warning: {message}\n"
    if not category.__name__.startswith("Tilec"):
        text = warnings.formatwarning(message, category, filename, lineno, line)
    (file or sys.stderr).write(text)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `tilec` command; returns the exit status."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    script_args: list[str] = []
    if argv[:1] == ["run"] and "--" in argv:  # `tilec run FILE [--backend B] -- script args`
        split = argv.index("--")
        argv, script_args = argv[:split], argv[split + 1 :]
    try:
        args = parser.parse_args(argv)
        if args.command == "run":
            args.script_args = script_args
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 2
    if args.command is None:
        parser.print_usage(sys.stderr)
        print(
            f"{PROG}: error: a command is required (opt, passes, backends, run, compile, cache, fuzz)",
            file=sys.stderr,
        )
        return 2
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return args.handler(args)
    except (ParseError, Diagnostic, CompilationError) as err:  # located: file:line:col: error
        print(err, file=sys.stderr)
    except TilecError as err:
        if settings.DEBUG.enabled():
            raise
        print(f"{PROG} {args.command}: error: {err}", file=sys.stderr)
    except (UserError, PipelineError, PassVerifyError, ValidationError) as err:
        print(f"{PROG} {args.command}: error: {err}", file=sys.stderr)
    except BrokenPipeError:
        # The reader (`tilec opt ... | head`) went away; stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 1
