"""Run unchanged Triton programs on tilec: importing this module makes `import triton` (and
`triton.language`, `triton.runtime`, `triton.testing`, `triton.compiler`, `triton.knobs`,
`triton.tools.tensor_descriptor`, `triton.backends`, `triton.errors`, ...) resolve to tilec, so
that `sys.modules["triton.language"] is tilec.language`.

Three ways in:

- `import tilec.as_triton` before the program imports triton;
- `python -m tilec.as_triton script.py [args]` (or `-m module [args]`);
- `TILEC_AS_TRITON=1` in an environment where `python -m tilec.as_triton --install-hook` was
  run once (see `tilec.as_triton.startup`).

`finder` holds the map of Triton modules to tilec's; a Triton module tilec has no equivalent for
is an `ImportError` naming it. `TRITON_INTERPRET=1` (`triton.knobs.runtime.interpret`) runs
launches on the interp backend. torch's Inductor generates Triton kernels that run on tilec
(`tilec.as_triton.inductor`; `TILEC_AS_TRITON_INDUCTOR=0` tells it there is no Triton instead).
"""

from tilec.as_triton import knobs as _knobs
from tilec.as_triton.finder import activate, active, deactivate

activate()
_knobs.apply_environment()

__all__ = ["activate", "active", "deactivate"]
