"""Running the kernels of tests/compat/test_compat_names_*.py: on interp in CI, or on a GPU
backend (`TILEC_TEST_BACKEND=nvidia pytest tests/compat -k names`), where every launch is also
compared with the interpreter's (`check=True`) before the test's own NumPy checks."""

from __future__ import annotations

from compat_helpers import run_interp

import tilec
from tilec import settings
from tilec.runtime import check

BACKEND = settings.TEST_BACKEND.get() or "interp"


def run(kernel, signature: dict[str, str], args: list, grid=(1,), **constexprs) -> None:
    """`run_interp` on `BACKEND`, checked against the interpreter where that is a GPU."""
    if BACKEND == "interp":
        run_interp(kernel, signature, args, grid, **constexprs)
        return
    compiled = tilec.compile(kernel, signature=signature, constexprs=constexprs, backend=BACKEND)
    reference = tilec.compile(kernel, signature=signature, constexprs=constexprs, backend="interp")
    check.run_checked(compiled, grid, args, lambda: reference)
