"""Hooks around a running pipeline: IR printing after passes and a per-pass timing report.

The pass manager calls `before_*` hooks in the order the instrumentations are given and
`after_*` hooks in reverse order (as MLIR does), so the first instrumentation wraps the others.
Verification after each pass is the pass manager's own job (`PassManager(verify_each=True)`); it
reports the verifier's time through `after_verify`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, TextIO

import attrs

from tilec.ir import print_module
from tilec.ir.core import Operation

if TYPE_CHECKING:
    from tilec.passes.base import Pass


class PassInstrumentation:
    """Base class: override the hooks you need; each does nothing by default."""

    def before_pipeline(self, passes: Sequence[Pass], module: Operation) -> None:
        """Called once with the pass instances about to run, in order."""

    def before_pass(self, pass_: Pass, module: Operation) -> None:
        """Called before `pass_` runs."""

    def after_pass(self, pass_: Pass, module: Operation, changed: bool, seconds: float) -> None:
        """Called after `pass_` ran (before the IR is verified): whether it changed the IR and
        its wall time."""

    def after_verify(self, pass_: Pass, module: Operation, seconds: float) -> None:
        """Called after the IR verified fine following `pass_`, with the verifier's wall time."""

    def after_pipeline(self, module: Operation, changed: bool) -> None:
        """Called once after the last pass; `changed` says whether any pass changed the IR."""


def ir_dump_header(pass_name: str) -> str:
    return f"// -----// IR Dump After {pass_name} //----- //"


class PrintIRAfter(PassInstrumentation):
    """Print the module after each pass in `names` (after every pass if `names` is None),
    under an MLIR-style `// -----// IR Dump After <name> //----- //` header.

    The IR is printed before it is verified, so a pass that breaks the IR still shows what it left.
    """

    def __init__(
        self,
        stream: TextIO,
        names: Collection[str] | None = None,
        *,
        only_changed: bool = False,
        locations: bool = False,
    ):
        self.stream = stream
        self.names = None if names is None else frozenset(names)
        self.only_changed = only_changed
        self.locations = locations

    def after_pass(self, pass_: Pass, module: Operation, changed: bool, seconds: float) -> None:
        name = type(pass_).name
        if self.names is not None and name not in self.names:
            return
        if self.only_changed and not changed:
            return
        self.stream.write(ir_dump_header(name) + "\n")
        self.stream.write(print_module(module, locations=self.locations))
        self.stream.write("\n")
        self.stream.flush()


@attrs.frozen
class PassTime:
    """One row of the timing report."""

    name: str
    seconds: float
    changed: bool | None
    """None for rows that are not passes (the verifier)."""


class PassTiming(PassInstrumentation):
    """Collects the wall time of each pass (and of the verifier, summed) for `report()`."""

    def __init__(self) -> None:
        self.rows: list[PassTime] = []
        self.verify_seconds = 0.0
        self.verified = False

    def after_pass(self, pass_: Pass, module: Operation, changed: bool, seconds: float) -> None:
        self.rows.append(PassTime(type(pass_).name, seconds, changed))

    def after_verify(self, pass_: Pass, module: Operation, seconds: float) -> None:
        self.verified = True
        self.verify_seconds += seconds

    @property
    def total_seconds(self) -> float:
        return sum(row.seconds for row in self.rows) + self.verify_seconds

    def report(self) -> str:
        """An aligned table in the style of MLIR's `-mlir-timing` report."""
        rows = list(self.rows)
        if self.verified:
            rows.append(PassTime("(verifier)", self.verify_seconds, None))
        total = self.total_seconds
        title = "... Pass execution timing report ..."
        rule = "===" + "-" * 73 + "==="
        lines = [
            rule,
            title.center(len(rule)).rstrip(),
            rule,
            f"  Total Execution Time: {total:.4f} seconds",
            "",
            "  ----Wall Time----  --Changed--  ----Name----",
        ]
        for row in [*rows, PassTime("Total", total, None)]:
            percent = 100.0 * row.seconds / total if total > 0 else 0.0
            changed = "" if row.changed is None else ("yes" if row.changed else "no")
            lines.append(f"  {row.seconds:8.4f} ({percent:5.1f}%)  {changed:<11}  {row.name}")
        return "\n".join(lines) + "\n"

    def print_report(self, stream: TextIO) -> None:
        stream.write(self.report())
        stream.flush()


__all__ = ["PassInstrumentation", "PassTime", "PassTiming", "PrintIRAfter", "ir_dump_header"]
