"""lit configuration for the golden tests: `// RUN: tilec opt %s --passes cse | filecheck %s`.

`tilec` and `filecheck` resolve to the Python environment lit runs in (`sys.executable -m tilec`
and the `filecheck` script installed next to `sys.executable`), so the tests exercise the checkout
that is installed there, not whatever is first on PATH. `not` is lit's built-in.
"""

import os
import shlex
import sys

import lit.formats

config.name = "tilec"  # noqa: F821  (lit defines `config`)
config.test_format = lit.formats.ShTest(execute_external=False)  # noqa: F821
config.suffixes = [".tir"]  # noqa: F821
config.excludes = ["Inputs", "lit.cfg.py"]  # noqa: F821
config.test_source_root = os.path.dirname(os.path.abspath(__file__))  # noqa: F821
config.test_exec_root = config.test_source_root  # noqa: F821


def _filecheck_command() -> str:
    scripts = os.path.dirname(sys.executable)
    for name in ("filecheck", "filecheck.exe"):
        candidate = os.path.join(scripts, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return shlex.quote(candidate)
    return f"{shlex.quote(sys.executable)} -m filecheck"


# A tool name only as a whole word, never inside a path such as tests/filecheck/cli/x.tir.
_WORD = r"(?<![\w./-]){}(?![\w./-])"
config.substitutions.append(  # noqa: F821
    (_WORD.format("tilec"), f"{shlex.quote(sys.executable)} -m tilec")
)
config.substitutions.append((_WORD.format("filecheck"), _filecheck_command()))  # noqa: F821

# lit starts tests with a minimal environment; keep what Python and tilec read.
for _name, _value in os.environ.items():
    if _name.startswith(("TILEC_", "PYTHON")) or _name in ("HOME", "VIRTUAL_ENV"):
        config.environment[_name] = _value  # noqa: F821

# The plugin host and the core passes exist now; this feature only keeps older
# `// REQUIRES: plugin-host` lines satisfied (drop both together).
config.available_features.add("plugin-host")  # noqa: F821
