"""`tilec.lowering.external_tools`: the tool runs the backends' code generation shares (ptxas,
ld.lld, llvm-mc), each failure the backend's own error naming what failed."""

from __future__ import annotations

import sys

import pytest

from tilec.lowering.external_tools import run_tool, tool_version


class ToolError(RuntimeError):
    pass


def test_a_tool_that_cannot_start_is_the_backend_s_error(tmp_path):
    with pytest.raises(ToolError, match=r"linking kernel k: .*No such file"):
        run_tool([str(tmp_path / "missing")], 10, ToolError, "linking kernel k")


def test_a_failing_tool_s_diagnostic_is_in_the_error_unless_the_caller_reads_it():
    command = [sys.executable, "-c", "import sys; sys.exit('bad input')"]
    with pytest.raises(ToolError, match=r"assembling k \(exit status 1\):\nbad input"):
        run_tool(command, 30, ToolError, "assembling k")
    result = run_tool(command, 30, ToolError, "assembling k", check=False)
    assert result.returncode == 1 and "bad input" in result.stderr


def test_a_tool_that_runs_too_long_is_an_error():
    command = [sys.executable, "-c", "import time; time.sleep(5)"]
    with pytest.raises(ToolError, match="timed out"):
        run_tool(command, 0.5, ToolError, "slow tool")


def test_tool_version(tmp_path):
    assert tool_version(sys.executable, r"Python (\d+)\.") == sys.version_info.major
    assert tool_version(str(tmp_path / "missing"), r"(\d+)") is None
