"""lit configuration for the plugin's golden tests: `// RUN: tilec opt %s --passes X | filecheck %s`.

`tilec` and `filecheck` run from the Python environment that runs lit, so the tests exercise the
tilec and the plugin installed there.
"""

import os
import shlex
import sys

import lit.formats

config.name = "tilec-strength-reduction"  # noqa: F821  (lit defines `config`)
config.test_format = lit.formats.ShTest(execute_external=False)  # noqa: F821
config.suffixes = [".tir"]  # noqa: F821
config.test_source_root = os.path.dirname(os.path.abspath(__file__))  # noqa: F821
config.test_exec_root = config.test_source_root  # noqa: F821

# A tool name only as a whole word, never inside a path such as tilec-strength-reduction/tests.
_python = shlex.quote(sys.executable)
for _tool in ("tilec", "filecheck"):
    config.substitutions.append((rf"(?<![\w./-]){_tool}(?![\w./-])", f"{_python} -m {_tool}"))  # noqa: F821

for _name, _value in os.environ.items():
    if _name.startswith(("TILEC_", "PYTHON")) or _name in ("HOME", "VIRTUAL_ENV"):
        config.environment[_name] = _value  # noqa: F821
