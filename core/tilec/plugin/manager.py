"""The plugin manager: built-in plugins first, then the `tilec` entry-point group.

Plain pluggy lets one broken plugin break every command. Here loading is wrapped, as numba does:
a plugin whose import or registration raises, or whose hook raises or returns garbage, produces
one `TilecPluginWarning` naming the plugin and its distribution, and is skipped; the others still
load. `plugin_failures()` lists what failed, so `tilec backends` can show it.

Set `TILEC_DISABLE_PLUGIN_AUTOLOAD=1` to skip entry points (built-in plugins still load).
"""

from __future__ import annotations

import contextlib
import importlib
import re
import sys
import traceback
import warnings
from typing import TYPE_CHECKING, Any, NamedTuple

import attrs
import pluggy

from tilec import settings
from tilec.backend import Backend
from tilec.driver import Availability
from tilec.plugin import entry_point_index, hookspecs, launch_record

if TYPE_CHECKING:
    from tilec.passes.base import Pass

ENTRY_POINT_GROUP = "tilec"
DISABLE_AUTOLOAD_ENV = settings.DISABLE_PLUGIN_AUTOLOAD.name
BUILTIN_PLUGINS = ("tilec.builtin_passes",)
"""Core modules registered as ordinary plugins, before any entry point."""


_PLUGIN_ERRORS = (Exception, SystemExit)
"""What a plugin's code may raise that disables the plugin: any error, and `sys.exit()` (which
would otherwise end every tilec command silently). KeyboardInterrupt still stops tilec."""


class TilecPluginWarning(UserWarning):
    """A plugin failed to load, or one of its hooks failed; that plugin (or hook) is skipped."""


class PluginFailure(NamedTuple):
    plugin: str
    """The plugin and where it comes from, e.g. `broken (tilec-broken 0.1)`."""
    error: str
    """What failed and why, e.g. `import failed: ZeroDivisionError: division by zero (at x.py:3)`."""


@attrs.define
class _State:
    manager: pluggy.PluginManager
    labels: dict[str, str] = attrs.Factory(dict)
    names: dict[str, str] = attrs.Factory(dict)
    """Plugin label -> the name it was registered under (an entry point's name)."""
    failures: list[PluginFailure] = attrs.Factory(list)
    backends: dict[str, Backend] | None = None
    pass_classes: list[type[Pass]] | None = None
    pass_failures: list[PluginFailure] = attrs.Factory(list)
    """The failures that left passes out of the pipeline (a subset of `failures`)."""
    fingerprint: str | None = None
    ir_loaded: bool = False
    """Whether the plugins' IR modules (`tilec_ir_modules`) were imported."""
    values: dict[str, str] = attrs.Factory(dict)
    """Registered name -> what loads the plugin (an entry point's value, a built-in's module)."""
    imported: set[str] = attrs.Factory(set)
    """The module files that loading the plugins imported (`launch_record`)."""
    registered_later: bool = False
    """Whether `register_plugin` added a plugin (then no launch record is written)."""


_state: _State | None = None
_generation = 0


def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide plugin manager, created and loaded on first use."""
    return _load_state().manager


def reset_plugin_manager() -> None:
    """Forget the plugin manager and everything loaded through it (for tests)."""
    global _state, _generation
    _state = None
    _generation += 1


def generation() -> int:
    """A number that changes whenever what the plugins provide may have changed (a plugin
    registered, the manager reset), so that what is built from it can be built again."""
    return _generation


def register_plugin(plugin: object, name: str | None = None) -> None:
    """Register `plugin` (a module or object with `@hookimpl` functions) after loading.

    Failures warn like an entry point's would. Cached backends and passes are recomputed.
    """
    global _generation
    state = _load_state()
    label = name or getattr(plugin, "__name__", None) or repr(plugin)
    _register(state, plugin, name, label)
    state.registered_later = True
    state.backends = state.pass_classes = state.fingerprint = None
    state.pass_failures = []
    state.ir_loaded = False
    _generation += 1


def fingerprint() -> str:
    """A digest of the loaded plugins for the compile cache key: each plugin's label (entry point,
    distribution and version) and its module file's path, size and modification time (with a
    remote tier, its contents alone: `tilec.remote_cache.stamp`), so that
    installing, upgrading, editing or removing a plugin (its passes change what a compile makes)
    never reuses an entry made without it."""
    state = _load_state()
    if state.fingerprint is None:
        state.fingerprint = launch_record.fingerprint_of(_plugin_files(state))
    return state.fingerprint


def _plugin_files(state: _State) -> list[tuple[str, str, Any]]:
    """(registered name, label, module file) of each registered plugin."""
    return [
        (name, state.labels.get(name, name), getattr(plugin, "__file__", None))
        for name, plugin in state.manager.list_name_plugin()
    ]


def plugin_failures() -> list[PluginFailure]:
    """The plugins (or hooks) that failed so far, as (plugin, error text) pairs."""
    return list(_load_state().failures)


def load_backends() -> dict[str, Backend]:
    """Every backend the loaded plugins provide, by name. A name claimed twice is refused, with a
    warning naming both plugins: the plugin whose entry point carries the backend's name keeps
    it (so a distribution cannot take over `interp`), else the first loaded."""
    state = _load_state()
    if state.backends is not None:
        return dict(state.backends)
    claims: dict[str, list[tuple[str, Backend]]] = {}
    for label, backend in _call_hook(state, "tilec_backends"):
        if not isinstance(backend, Backend) or not backend.name:
            _fail(
                state,
                label,
                f"tilec_backends() returned {backend!r}, not a named tilec.backend.Backend",
            )
            continue
        claims.setdefault(backend.name, []).append((label, backend))
    backends: dict[str, Backend] = {}
    for name, claimants in claims.items():
        owner = [c for c in claimants if state.names.get(c[0]) == name] or claimants
        label, backend = owner[0]
        for other_label, _ in claimants:
            if other_label != label:
                _fail(
                    state,
                    other_label,
                    f"backend '{name}' is refused: plugin '{label}' already provides it",
                )
        _guard_availability(state, label, backend)
        backends[name] = backend
    state.backends = backends
    _write_launch_record(state, backends, claims)
    return dict(backends)


def _write_launch_record(
    state: _State, backends: dict[str, Backend], claims: dict[str, list[tuple[str, Backend]]]
) -> None:
    """Remember this load for a launch from the disk cache in a later process
    (`launch_record`), where it is the whole of what every plugin gives: none failed, none was
    registered by `register_plugin`, entry points were loaded."""
    if state.failures or state.registered_later or _autoload_disabled():
        return
    hooks = {}
    for impl in state.manager.hook.tilec_backends.get_hookimpls():
        name = getattr(impl.function, "__name__", "")
        if getattr(impl.plugin, name, None) is impl.function:
            hooks[impl.plugin_name] = name
    plugins = [
        {"name": name, "label": label, "path": path, "value": state.values.get(name),
         "hook": hooks.get(name) if state.values.get(name) else None}
        for name, label, path in _plugin_files(state)
    ]  # fmt: skip
    owners = {b.name: state.names[label] for n, c in claims.items() for label, b in c[:1]}
    records = [(n, type(b).priority, owners[n]) for n, b in backends.items()]
    files = set(state.imported)
    for backend in backends.values():
        for cls in type(backend).__mro__[:-1]:
            files.add(getattr(sys.modules.get(cls.__module__), "__file__", None) or "")
    launch_record.write(plugins, records, files)


def _guard_availability(state: _State, label: str, backend: Backend) -> None:
    """Make `backend.is_available()` report, never raise: a plugin whose check raises (or
    exits) warns once, naming it, and its backend reads as unavailable."""

    def is_available() -> Availability:
        try:
            return type(backend).is_available(backend)  # the class's, looked up at each call
        except _PLUGIN_ERRORS as error:
            reason = f"is_available() of backend '{backend.name}' raised"
            _fail(state, label, reason, error, once=True)
            return Availability(False, f"{reason} ({_describe(error)}); plugin '{label}'")

    with contextlib.suppress(AttributeError):  # a backend with __slots__ keeps its own
        backend.is_available = is_available  # type: ignore[method-assign]


def load_pass_classes() -> list[type[Pass]]:
    """Every pass class the loaded plugins contribute, core first, one per pass name.

    The same class offered twice is kept once; two different classes claiming one name warn,
    naming both plugins, and the first is kept.
    """
    state = _load_state()
    if state.pass_classes is not None:
        return list(state.pass_classes)
    # deferred: the pass classes (and the IR they import) wait for a compile; a launch from
    # the disk cache loads the backends alone
    from tilec.passes.base import Pass
    from tilec.plugin.pass_checks import invalid_plugins

    known_failures = len(state.failures)
    _load_ir_modules(state)  # the passes build and match the plugins' layouts and ops
    by_name: dict[str, tuple[type[Pass], str]] = {}
    for label, cls in _call_hook(state, "tilec_passes"):
        if not (isinstance(cls, type) and issubclass(cls, Pass) and cls.name):
            _fail(state, label, f"tilec_passes() returned {cls!r}, not a named tilec Pass subclass")
            continue
        previous = by_name.get(cls.name)
        if previous is None:
            by_name[cls.name] = (cls, label)
            continue
        previous_cls, previous_label = previous
        if previous_cls is not cls:
            _fail(
                state,
                label,
                f"pass '{cls.name}' ({_qualname(cls)}) is ignored: plugin '{previous_label}' already "
                f"registers a pass of that name ({_qualname(previous_cls)})",
            )
    builtins = frozenset(f"{name} (built-in)" for name in BUILTIN_PLUGINS)
    invalid = invalid_plugins(list(by_name.values()), builtins)
    for label, reason in invalid.items():
        _fail(state, label, f"{reason}; its passes are left out")
    state.pass_classes = [cls for cls, label in by_name.values() if label not in invalid]
    state.pass_failures = state.failures[known_failures:]
    return list(state.pass_classes)


def load_ir_modules() -> None:
    """Import the modules that define the plugins' IR (`tilec_ir_modules`), once."""
    _load_ir_modules(_load_state())


def _load_ir_modules(state: _State) -> None:
    if state.ir_loaded:
        return
    state.ir_loaded = True
    for label, module_name in _call_hook(state, "tilec_ir_modules"):
        if not isinstance(module_name, str):
            _fail(state, label, f"tilec_ir_modules() returned {module_name!r}, not a module name")
            continue
        try:
            importlib.import_module(module_name)
        except _PLUGIN_ERRORS as error:
            _fail(state, label, f"import of its IR module '{module_name}' failed", error)


def pass_plugin_failures() -> list[PluginFailure]:
    """The plugins (or hooks) whose passes were left out of the pipeline, and why."""
    load_pass_classes()
    return list(_load_state().pass_failures)


# Loading ---------------------------------------------------------------------------------------


def _load_state() -> _State:
    global _state
    if _state is None:
        manager = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        manager.add_hookspecs(hookspecs)
        state = _State(manager)
        before = set(sys.modules)
        _load_builtins(state)
        if not _autoload_disabled():
            _load_entry_points(state)
        for module_name in set(sys.modules) - before:
            path = getattr(sys.modules[module_name], "__file__", None)
            if isinstance(path, str):
                state.imported.add(path)
        _state = state
    return _state


def _autoload_disabled() -> bool:
    return settings.DISABLE_PLUGIN_AUTOLOAD.enabled()


def _load_builtins(state: _State) -> None:
    for module_name in BUILTIN_PLUGINS:
        label = f"{module_name} (built-in)"
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name == module_name:
                continue  # not part of this build of tilec
            _fail(state, label, "import failed", error)
            continue
        except _PLUGIN_ERRORS as error:
            _fail(state, label, "import failed", error)
            continue
        _register(state, module, module_name, label)
        state.values[module_name] = module_name


def _load_entry_points(state: _State) -> None:
    """Load entry points sorted by name and distribution, so the order (which decides who wins a
    duplicate name) does not depend on the order of `sys.path` or of a folder listing."""
    found = entry_point_index.entry_points(ENTRY_POINT_GROUP)  # remembered between processes
    for entry_point in sorted(found, key=lambda ep: (ep.name, _entry_point_label(ep))):
        label = _entry_point_label(entry_point)
        try:
            plugin = entry_point.load()
        except _PLUGIN_ERRORS as error:
            _fail(state, label, f"import of '{entry_point.value}' failed", error)
            continue
        _register(state, plugin, entry_point.name, label)
        state.values[entry_point.name] = entry_point.value


def _entry_point_label(entry_point: entry_point_index.IndexedEntryPoint) -> str:
    dist = entry_point.distribution
    origin = f"{dist} {entry_point.version}" if dist is not None else "unknown distribution"
    return f"{entry_point.name} ({origin})"


def _register(state: _State, plugin: object, name: str | None, label: str) -> None:
    manager = state.manager
    try:
        registered_name = manager.register(plugin, name=name)
    except _PLUGIN_ERRORS as error:
        _fail(state, label, "registration failed", error)
        return
    if registered_name is None:
        return  # blocked
    state.labels[registered_name] = label
    state.names[label] = registered_name
    try:
        manager.check_pending()  # a misspelled hook (`tilec_backend`) is an error, not silence
    except _PLUGIN_ERRORS as error:
        manager.unregister(name=registered_name)
        _fail(state, label, f"registration failed{_hook_advice(error)}", error)


def _hook_advice(error: BaseException) -> str:
    """For an unknown hook: the hooks there are, and the nearest to the name written."""
    if not isinstance(error, pluggy.PluginValidationError):
        return ""
    names = sorted(n for n in dir(hookspecs) if n.startswith(f"{hookspecs.PROJECT_NAME}_"))
    written = re.search(r"unknown hook '([^']+)'", str(error))
    import difflib  # deferred: only a misspelled hook's message needs it (1-2 ms to import)

    near = difflib.get_close_matches(written[1], names, n=1) if written else []
    hint = f"did you mean '{near[0]}'? " if near else ""
    return f" ({hint}tilec's hooks are {', '.join(names)}; see tilec.plugin.hookspecs)"


def _call_hook(state: _State, hook_name: str) -> list[tuple[str, Any]]:
    """Call each implementation of `hook_name` on its own, in registration order (tryfirst first,
    trylast last), so one that raises is skipped with a warning; returns (plugin label, item)."""
    implementations = [
        impl
        for impl in getattr(state.manager.hook, hook_name).get_hookimpls()
        if not (impl.hookwrapper or impl.wrapper)
    ]
    implementations.sort(key=lambda impl: 0 if impl.tryfirst else 2 if impl.trylast else 1)
    items: list[tuple[str, Any]] = []
    for impl in implementations:
        label = state.labels.get(impl.plugin_name, impl.plugin_name)
        try:
            result = impl.function()
        except _PLUGIN_ERRORS as error:
            _fail(state, label, f"{hook_name}() raised", error)
            continue
        if result is None:
            continue
        if not isinstance(result, (list, tuple)):
            _fail(state, label, f"{hook_name}() returned {type(result).__name__}, not a list")
            continue
        items.extend((label, item) for item in result)
    return items


def _fail(
    state: _State, label: str, what: str, error: BaseException | None = None, once: bool = False
) -> None:
    text = what if error is None else f"{what}: {_describe(error)}"
    if once and PluginFailure(label, text) in state.failures:
        return
    state.failures.append(PluginFailure(label, text))
    warnings.warn(
        f"tilec plugin '{label}': {text}; it is skipped", TilecPluginWarning, stacklevel=4
    )


def _describe(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}"
    frames = traceback.extract_tb(error.__traceback__)
    if frames:
        text += f" (at {frames[-1].filename}:{frames[-1].lineno})"
    return text


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


_resolving = False


def load_for_unknown_ir_name(name: str) -> str | None:
    """For the parser (`tilec.ir.parser.UNKNOWN_NAME_HOOKS`, through `tilec.dialects`): a
    backend's layouts and ops (`#gpu.mma`, `gpu.warp_group_dot`) are registered by its plugin
    as the plugin loads, so the plugins are loaded (once) before the parser gives up on
    `name`. Where `name` is still unknown, the note says why no plugin defined it: autoloading
    is off, or plugins failed to load (which)."""
    global _resolving
    if _resolving:  # a plugin that parses IR while it loads
        return None
    _resolving = True
    try:
        state = _load_state()
        _load_ir_modules(state)
    finally:
        _resolving = False
    if _autoload_disabled():
        return (
            f"{DISABLE_AUTOLOAD_ENV} is set, so no backend plugin is loaded, and a backend's "
            "layouts and ops are defined by its plugin"
        )
    if state.failures:
        failed = "; ".join(f"'{f.plugin}': {f.error}" for f in state.failures)
        return (
            "a backend's layouts and ops are defined by its plugin, and these plugins failed "
            f"to load: {failed}"
        )
    return None
