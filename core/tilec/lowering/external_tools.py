"""Running the command-line tools a backend's code generation needs (an assembler, a linker:
ptxas, ld.lld, llvm-mc): their versions, and one run of one with its failure as the backend's
error, naming what failed and the tool's diagnostic."""

from __future__ import annotations

import re
import subprocess


def tool_version(path: str, pattern: str) -> int | None:
    """The major version that `path --version` reports (`pattern`'s group), or None."""
    try:
        result = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(pattern, result.stdout + result.stderr)
    return int(match.group(1)) if match else None


def run_tool(
    command: list[str], timeout: float, error: type[Exception], what: str, *, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run `command` and return its result (text output captured). A failure to start or a
    timeout is `error` with the message `what: <the failure>`; with `check`, so is a nonzero
    exit, with its status and the tool's diagnostic (without, the caller reads the result)."""
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as failure:
        raise error(f"{what}: {failure}") from None
    if check and result.returncode != 0:
        raise error(
            f"{what} (exit status {result.returncode}):\n{(result.stderr or result.stdout).strip()}"
        )
    return result


__all__ = ["run_tool", "tool_version"]
