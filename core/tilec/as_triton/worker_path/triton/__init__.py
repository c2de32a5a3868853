"""`import triton` in a process that torch's Inductor started with its parent's `sys.path` (a
compile worker) while the alias was active there: `tilec.as_triton.inductor` puts this package's
folder first on that path, so this module runs instead of any real Triton. It turns the alias on
and hands the import to it: `triton` is then `tilec.as_triton.top`, as in the parent."""

import importlib
import sys

del sys.modules["triton"]  # this module: the alias refuses a `triton` it did not give

import tilec.as_triton  # noqa: E402, F401 (puts the alias first on sys.meta_path)

sys.modules["triton"] = importlib.import_module("triton")
