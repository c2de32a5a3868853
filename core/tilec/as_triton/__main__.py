"""`python -m tilec.as_triton script.py [args]` (or `-m module [args]`): run a Triton program
on tilec, `import triton` resolving to tilec. `TILEC_AS_TRITON=1` is set for the processes it
starts. `--install-hook` / `--uninstall-hook` add or remove the `.pth` file through which
`TILEC_AS_TRITON=1` takes effect in every process of this environment (`tilec.as_triton.startup`).
"""

from __future__ import annotations

import os
import runpy
import sys
import sysconfig
from pathlib import Path

import tilec.as_triton  # noqa: F401 (activates the alias)
from tilec import settings
from tilec.as_triton import startup

USAGE = (
    "usage: python -m tilec.as_triton script.py [args...]\n"
    "       python -m tilec.as_triton -m module [args...]\n"
    "       python -m tilec.as_triton --install-hook | --uninstall-hook"
)


def _hook_path() -> Path:
    return Path(sysconfig.get_paths()["purelib"]) / startup.PTH_NAME


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        return 0 if argv else 2
    if argv[0] == "--install-hook":
        path = _hook_path()
        path.write_text(startup.pth_line(startup.__file__))
        print(f"wrote {path}: TILEC_AS_TRITON=1 now makes `import triton` resolve to tilec")
        return 0
    if argv[0] == "--uninstall-hook":
        _hook_path().unlink(missing_ok=True)
        print(f"removed {_hook_path()}")
        return 0
    os.environ[settings.AS_TRITON.name] = "1"  # for the processes the program starts
    if argv[0] == "-m":
        if len(argv) < 2:
            print(USAGE, file=sys.stderr)
            return 2
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    sys.argv = argv
    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
    runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
