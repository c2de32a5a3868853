"""The LLVM command-line tools the amd backend runs (ld.lld, llvm-mc): their versions, and one
run of one with its failure as the caller's error."""

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


def run_tool(command: list[str], timeout: float, error: type[Exception], what: str) -> None:
    """Run `command`; a failure to start, a timeout or a nonzero exit is `error`, its message
    `what` and the tool's diagnostic."""
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as failure:
        raise error(f"{what}: {failure}") from None
    if result.returncode != 0:
        raise error(
            f"{what} (exit status {result.returncode}):\n{(result.stderr or result.stdout).strip()}"
        )
