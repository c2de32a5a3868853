"""Every `TILEC_*` environment variable, read through a `Setting` here (`os.environ.get`) and
nowhere else.

Each variable is a `Setting` with its default and what it does; `SETTINGS` lists the core's by
name, as README.md's table shows them (a test checks that the table is `markdown_table()` of
every setting). A variable set to the empty string counts as unset. Values are read when asked for, so a change to `os.environ`
takes effect at the next read: `TILEC_BACKEND` at the next launch, `TILEC_CACHE_DIR` at the next
cache access. `TILEC_CHECK` is read once, when `tilec.runtime.check` is imported (set
`tilec.runtime.check.enabled` to change it later).

A backend's own variables (the paths of its vendor's tools: the nvidia backend's `TILEC_PTXAS`,
the amd backend's `TILEC_LLD`, read when the tool is first looked for) are `Setting`s its plugin
defines and declares in `Backend.settings`; `tilec.plugin.settings.all_settings()` lists them
with these, and README.md's table shows them all (`tilec.plugin.settings.markdown_table()`).

This module imports nothing else of tilec but `tilec.errors` (which imports nothing of tilec),
so every layer may use it. A value tilec refuses is an `OptionValueError` naming the variable.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import attrs

from tilec.errors import OptionValueError

_FALSE = ("", "0", "false", "no")


@attrs.frozen
class Setting:
    """One `TILEC_*` variable: its name, its default as documented, and what it does."""

    name: str
    default: str
    doc: str

    def get(self) -> str | None:
        """The variable's value, or None when it is unset or empty."""
        return os.environ.get(self.name) or None

    def enabled(self) -> bool:
        """The variable as a flag: set to anything but `0`, `false`, `no` (any case) or empty."""
        return os.environ.get(self.name, "").strip().lower() not in _FALSE


AS_TRITON = Setting(
    "TILEC_AS_TRITON",
    "off",
    "When on, `import triton` (and `triton.language`, `triton.runtime`, ...) resolves to tilec "
    "(`tilec.as_triton`) in environments where `python -m tilec.as_triton --install-hook` was "
    "run once; read when a program first imports `triton`. `python -m tilec.as_triton` sets it "
    "for the processes it starts.",
)
AS_TRITON_INDUCTOR = Setting(
    "TILEC_AS_TRITON_INDUCTOR",
    "on",
    "Under `tilec.as_triton`: when on, torch's Inductor generates Triton kernels that compile "
    "and run on tilec (launched through `CompiledKernel.run`, not torch's static launcher); `0` "
    "makes the alias step aside, telling Inductor there is no Triton "
    "(`TORCHINDUCTOR_TRITON_DISABLE_DEVICE_DETECTION=1`). Read when the alias is activated.",
)
BACKEND = Setting(
    "TILEC_BACKEND",
    "the first available installed backend, by the priority each declares (GPU backends before interp)",
    "The backend a launch or `tilec.compile` uses when neither the `backend=` option nor "
    "`tilec.set_backend` names one. Read on every launch.",
)
CACHE_DIR = Setting(
    "TILEC_CACHE_DIR",
    "`$XDG_CACHE_HOME/tilec`, else `~/.cache/tilec`",
    "The on-disk compile cache (and, under `pipelines/`, the resolved pass orders; under "
    "`plugins/`, the installed plugins' entry points; under `tools/`, the tool paths a backend "
    "found, each checked against what it depends on before it is used). Created "
    "0700; refused, with a warning, and nothing made in it, when it is not the user's or others "
    "may write it, or when a folder on the way to it (through symbolic links) is neither the "
    "user's nor root's, or others may write it without its sticky bit being set (as ssh checks).",
)
CACHE_KEY_FILE = Setting(
    "TILEC_CACHE_KEY_FILE",
    "`$XDG_STATE_HOME/tilec/cache-key`, else `~/.local/state/tilec/cache-key`",
    "The per-user key (created 0600 on first use, kept outside the cache folder) that every "
    "cache entry is authenticated with; an entry that fails is recompiled.",
)
CACHE_MAX_MB = Setting(
    "TILEC_CACHE_MAX_MB",
    "1024",
    "The size bound of the on-disk compile cache, in MiB: after a write, the least recently "
    "used entries are removed until the cache fits. Only tilec's entries (told by name and "
    "header) count and are removed: other files in the folder are never touched.",
)
CHECK = Setting(
    "TILEC_CHECK",
    "off",
    "When on, every launch also runs on the interpreter and the results are compared "
    "(`check=True`); `tilec run --check` sets it. Read when `tilec.runtime.check` is imported.",
)
DEBUG = Setting(
    "TILEC_DEBUG",
    "off",
    "When on, a `tilec.TilecError` (a kernel's compile error, a launch's bad argument, grid or "
    "option) keeps its full traceback, tilec's internal frames included (by default they are "
    "trimmed, leaving the user's frames and the error's location), also in the `tilec` command.",
)
DISABLE_PLUGIN_AUTOLOAD = Setting(
    "TILEC_DISABLE_PLUGIN_AUTOLOAD",
    "off",
    "When on, plugins installed through the `tilec` entry-point group are not loaded; the "
    "built-in plugins still are.",
)
F32_DEFAULT = Setting(
    "TILEC_F32_DEFAULT",
    "tf32",
    "The `input_precision` of a `tl.dot` of f32 inputs that gives neither `input_precision` nor "
    "`allow_tf32`, as Triton's `TRITON_F32_DEFAULT`: `tf32` (inputs cut to 10 mantissa bits, as "
    "the tensor cores read f32), `tf32x3` (three tf32 products, about f32 accuracy), `ieee` "
    "(f32 arithmetic), `bf16x3` or `bf16x6` (three or six products of the inputs' bf16 parts). "
    "Read when a kernel is compiled (it enters the compile-cache key); a kernel already "
    "launched in the process keeps the precision it was compiled with.",
)
INTERP_HANG_TIMEOUT = Setting(
    "TILEC_INTERP_HANG_TIMEOUT",
    "60",
    "Seconds the interp backend lets a `while` loop run with no program leaving it (where "
    "programs wait on each other: with no program starting, finishing or leaving a waiting "
    "loop) before it stops the launch with an error naming the loop (file:line).",
)
LOG = Setting(
    "TILEC_LOG",
    "off",
    "`info` or `debug`: print tilec's log (logger `tilec`) on stderr: the backend chosen and "
    "why, compile cache hits and misses, the time of each compile stage. Read at `import tilec`.",
)
PRINT_AUTOTUNING = Setting(
    "TILEC_PRINT_AUTOTUNING",
    "off",
    "When on, `@tilec.autotune` prints every config's time and the config it chose (to stderr), "
    "and shows compile and timing progress bars on a terminal.",
)
VALIDATE_PASSES = Setting(
    "TILEC_VALIDATE_PASSES",
    "off",
    "When on, every compile validates its tir passes: the interpreter runs the kernel on random "
    "inputs before the passes and after each pass that rewrote the tir, and the first pass whose "
    "results differ is an error showing the IR before and after it (`tilec opt --validate` "
    "does the same). Slow; cached kernels are not compiled, so not validated.",
)
REMOTE_CACHE = Setting(
    "TILEC_REMOTE_CACHE",
    "off",
    "`redis://host:port/db` (or `rediss://`, `unix://`): a Redis server that the processes of "
    "a cluster share as a cache tier behind the disk cache (`pip install 'tilec[redis]'`): "
    "compiled kernels, autotuning results and pass orders are looked up in memory, on disk, "
    "then there, and published there; a kernel missed by many processes at once is compiled "
    "(a kernel tuned) by one of them while the others wait for its entry. Entries are "
    "authenticated with the key of `TILEC_CACHE_KEY_FILE` (give every host the same file). "
    "A server that is down, slow or full is skipped with one warning (tried again later).",
)
REMOTE_CACHE_MAX_MB = Setting(
    "TILEC_REMOTE_CACHE_MAX_MB",
    "64",
    "The largest entry, in MiB, published to or read from the remote cache tier (a bigger "
    "one stays local).",
)
REMOTE_CACHE_PREFIX = Setting(
    "TILEC_REMOTE_CACHE_PREFIX",
    "`tilec:`",
    "The prefix of every Redis key tilec writes (`tilec cache clear --remote` deletes tilec's "
    "keys under it, nothing else).",
)
REMOTE_CACHE_TIMEOUT = Setting(
    "TILEC_REMOTE_CACHE_TIMEOUT",
    "2",
    "Seconds one Redis operation may take before the server counts as down (then skipped, "
    "tried again after a growing pause).",
)
REMOTE_CACHE_TTL = Setting(
    "TILEC_REMOTE_CACHE_TTL",
    "604800 (a week)",
    "Seconds a remote entry lives after it was last written or read.",
)
REMOTE_CACHE_WAIT = Setting(
    "TILEC_REMOTE_CACHE_WAIT",
    "600",
    "Seconds a process waits for the entry another process is compiling or tuning before it "
    "does the work itself (a crashed process's claim expires within seconds).",
)
TEST_BACKEND = Setting(
    "TILEC_TEST_BACKEND",
    "interp for `tests/language`; for `tests/gpu`, the GPU backend its tests name "
    "(`tests/gpu/gpu_backend.py`)",
    "Tests only: the backend the conformance tests run on (`TILEC_TEST_BACKEND=<name> pytest "
    "tests/language tests/gpu`, a name `tilec backends` lists).",
)

SETTINGS: tuple[Setting, ...] = (
    AS_TRITON, AS_TRITON_INDUCTOR, BACKEND, CACHE_DIR, CACHE_KEY_FILE, CACHE_MAX_MB, CHECK, DEBUG,
    DISABLE_PLUGIN_AUTOLOAD, F32_DEFAULT, INTERP_HANG_TIMEOUT, LOG, PRINT_AUTOTUNING,
    REMOTE_CACHE, REMOTE_CACHE_MAX_MB, REMOTE_CACHE_PREFIX, REMOTE_CACHE_TIMEOUT, REMOTE_CACHE_TTL,
    REMOTE_CACHE_WAIT, TEST_BACKEND, VALIDATE_PASSES,
)  # fmt: skip

TRITON_INTERPRET = Setting(
    "TRITON_INTERPRET",
    "off",
    "Triton's variable, read by `tilec.as_triton` (`triton.knobs.runtime.interpret`): when on, "
    "launches run on the interp backend, as Triton's run on its interpreter.",
)
"""Not a `TILEC_*` variable (so not in `SETTINGS`): Triton's, honoured under the alias."""


def backend() -> str | None:
    """`TILEC_BACKEND`, or None (choose automatically). Cheap: read on every launch, from the
    dict behind `os.environ` where CPython has one (`os.environ.get` of an unset variable raises
    and catches a KeyError inside, some microseconds)."""
    data = getattr(os.environ, "_data", None)
    if type(data) is not dict or _BACKEND_KEY is None:
        return os.environ.get("TILEC_BACKEND") or None
    raw = data.get(_BACKEND_KEY)
    if raw is None:
        return None
    return os.environ.decodevalue(raw) or None


_BACKEND_KEY = os.environ.encodekey("TILEC_BACKEND") if hasattr(os.environ, "encodekey") else None


def _xdg(variable: str, fallback: str) -> Path:
    """An XDG base folder: the variable when it is an absolute path, else `~/<fallback>`."""
    configured = os.environ.get(variable)
    if configured and os.path.isabs(configured):
        return Path(configured)
    return Path.home() / fallback


def cache_dir() -> Path:
    """`TILEC_CACHE_DIR`, default `$XDG_CACHE_HOME/tilec` (`~/.cache/tilec`): the one place the
    default is computed."""
    configured = CACHE_DIR.get()
    return Path(configured) if configured else _xdg("XDG_CACHE_HOME", ".cache") / "tilec"


def cache_key_file() -> Path:
    """`TILEC_CACHE_KEY_FILE`, default `$XDG_STATE_HOME/tilec/cache-key`."""
    configured = CACHE_KEY_FILE.get()
    if configured:
        return Path(configured)
    return _xdg("XDG_STATE_HOME", ".local/state") / "tilec" / "cache-key"


def cache_max_bytes() -> int:
    """`TILEC_CACHE_MAX_MB` in bytes; a value that is not a positive integer is an error naming
    the variable."""
    configured = CACHE_MAX_MB.get() or CACHE_MAX_MB.default
    try:
        megabytes = int(configured)
    except ValueError:
        megabytes = 0
    if megabytes <= 0:
        raise OptionValueError(
            f"{CACHE_MAX_MB.name}={configured!r} is not a positive number of MiB; set it to, "
            f"e.g., {CACHE_MAX_MB.default}, or unset it"
        )
    return megabytes * 1024 * 1024


REMOTE_SCHEMES = ("redis://", "rediss://", "unix://")


def remote_cache() -> str | None:
    """`TILEC_REMOTE_CACHE` (None: no remote tier); a value that is no Redis URL is an error
    naming the variable."""
    configured = REMOTE_CACHE.get()
    if configured is not None and not configured.startswith(REMOTE_SCHEMES):
        raise OptionValueError(
            f"{REMOTE_CACHE.name}={configured!r} is not a Redis URL; set it to, e.g., "
            f"redis://cache-host:6379/0, or unset it"
        )
    return configured


def remote_cache_prefix() -> str:
    return REMOTE_CACHE_PREFIX.get() or "tilec:"


def remote_number(setting: Setting, default: float) -> float:
    """A positive number of seconds or MiB of a `TILEC_REMOTE_CACHE_*` setting (`default` when
    unset); anything else is an error naming the variable."""
    configured = setting.get()
    if configured is None:
        return default
    try:
        value = float(configured)
    except ValueError:
        value = 0.0
    if not value > 0:  # NaN too
        raise OptionValueError(
            f"{setting.name}={configured!r} is not a positive number; set it to, e.g., "
            f"{default:g}, or unset it"
        )
    return value


F32_PRECISIONS = ("tf32", "tf32x3", "ieee", "bf16x3", "bf16x6")
"""The values of `TILEC_F32_DEFAULT` (and of `tl.dot`'s `input_precision`)."""


def f32_default() -> str:
    """`TILEC_F32_DEFAULT` (default `tf32`); a value not in `F32_PRECISIONS` is an error naming
    the variable."""
    configured = F32_DEFAULT.get()
    if configured is None:
        return F32_DEFAULT.default
    if configured not in F32_PRECISIONS:
        raise OptionValueError(
            f"{F32_DEFAULT.name}={configured!r} is not a tl.dot input precision; set it to one "
            f"of {', '.join(F32_PRECISIONS)}, or unset it"
        )
    return configured


def interp_hang_timeout() -> float:
    """`TILEC_INTERP_HANG_TIMEOUT` in seconds; a value that is not a positive number is an error
    naming the variable."""
    configured = INTERP_HANG_TIMEOUT.get() or INTERP_HANG_TIMEOUT.default
    try:
        seconds = float(configured)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:  # NaN too
        raise OptionValueError(
            f"{INTERP_HANG_TIMEOUT.name}={configured!r} is not a positive number of seconds; set "
            f"it to, e.g., {INTERP_HANG_TIMEOUT.default}, or unset it"
        )
    return seconds


def _name(setting: Setting) -> str:
    return setting.name


def markdown_table(settings: Iterable[Setting] = SETTINGS) -> str:
    """The table README.md shows of `settings` (default: the core's; README's has every
    installed backend's too, `tilec.plugin.settings.markdown_table()`), by name."""
    rows = ["| variable | default | what it does |", "|---|---|---|"]
    rows += [f"| `{s.name}` | {s.default} | {s.doc} |" for s in sorted(settings, key=_name)]
    return "\n".join(rows) + "\n"
