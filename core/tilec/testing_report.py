"""`Benchmark` and `perf_report` (re-exported by `tilec.testing`), with Triton's meanings.

`Mark.run(save_path=...)` prints each benchmark's table and writes `<plot_name>.csv` and
`<plot_name>.png`; the plot needs matplotlib (`pip install 'tilec[plot]'`): without it a message
says so and the table and CSV are still written. pandas is needed only for `return_df=True`.
"""

from __future__ import annotations

import csv
import math
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import attrs

PLOT_HINT = "matplotlib is not installed (pip install 'tilec[plot]')"


@attrs.define
class Benchmark:
    """One benchmark: `fn(**{x_name: x, line_arg: line_val, **args})` for every x in `x_vals`
    and every line value; `fn` returns a time (or any value) or a (value, min, max) tuple."""

    x_names: list[str]
    x_vals: list[Any]
    line_arg: str
    line_vals: list[Any]
    line_names: list[str]
    plot_name: str
    args: dict[str, Any] = attrs.field(factory=dict)
    xlabel: str = ""
    ylabel: str = ""
    x_log: bool = False
    y_log: bool = False
    styles: list[tuple[str, str]] | None = None

    def __attrs_post_init__(self) -> None:
        if len(self.line_names) != len(self.line_vals):
            raise ValueError(
                f"Benchmark '{self.plot_name}': {len(self.line_vals)} line_vals but "
                f"{len(self.line_names)} line_names"
            )


def _columns(bench: Benchmark, rows: list[dict[str, Any]]) -> list[str]:
    columns = list(bench.x_names)
    for name in bench.line_names:
        columns.append(name)
        if any(f"{name}-min" in row for row in rows):
            columns += [f"{name}-min", f"{name}-max"]
    return columns


def _cell(value: Any, precision: int) -> str:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.{precision}f}"
    return str(value)


def format_table(columns: list[str], rows: list[dict[str, Any]], precision: int = 6) -> str:
    """The rows as an aligned text table, one header line."""
    cells = [columns] + [[_cell(row.get(c, ""), precision) for c in columns] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return "\n".join(
        "  ".join(cell.rjust(width) for cell, width in zip(line, widths, strict=True))
        for line in cells
    )


class Mark:
    """`perf_report(benchmarks)(fn)`: `.run(...)` runs `fn` over each benchmark's grid."""

    def __init__(self, fn: Callable[..., Any], benchmarks: Benchmark | Sequence[Benchmark]):
        self.fn = fn
        self.benchmarks = benchmarks

    def _rows(self, bench: Benchmark, **kwargs: Any) -> list[dict[str, Any]]:
        rows = []
        for x in bench.x_vals:
            xs = x if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
            x_args = dict(zip(bench.x_names, xs, strict=True))
            row: dict[str, Any] = dict(x_args)
            for line_val, line_name in zip(bench.line_vals, bench.line_names, strict=True):
                call = {**x_args, bench.line_arg: line_val, **bench.args, **kwargs}
                result = self.fn(**call)
                if isinstance(result, (list, tuple)):
                    row[line_name], row[f"{line_name}-min"], row[f"{line_name}-max"] = result
                else:
                    row[line_name] = result
            rows.append(row)
        return rows

    def _run(self, bench, save_path, show_plots, print_data, precision, **kwargs) -> Any:
        rows = self._rows(bench, **kwargs)
        columns = _columns(bench, rows)
        if print_data:
            print(f"{bench.plot_name}:")
            print(format_table(columns, rows, precision))
        if save_path:
            with open(os.path.join(save_path, f"{bench.plot_name}.csv"), "w", newline="") as f:
                writer = csv.writer(f)
                writer.writerow(columns)
                writer.writerows([[_cell(r.get(c, ""), precision) for c in columns] for r in rows])
        if save_path or show_plots:
            _plot(bench, rows, save_path, show_plots)
        return columns, rows

    def run(
        self,
        show_plots: bool = False,
        print_data: bool = False,
        save_path: str = "",
        return_df: bool = False,
        precision: int = 6,
        **kwargs: Any,
    ) -> Any:
        """Run every benchmark: print its table (`print_data`), write its CSV and plot under
        `save_path` (made if missing), show the plot (`show_plots`); `return_df` returns the
        pandas DataFrame(s) of the results (needs pandas)."""
        benchmarks = (
            self.benchmarks if isinstance(self.benchmarks, (list, tuple)) else [self.benchmarks]
        )
        if save_path:
            os.makedirs(save_path, exist_ok=True)
        results = [
            self._run(b, save_path, show_plots, print_data, precision, **kwargs) for b in benchmarks
        ]
        if not return_df:
            return None
        try:
            import pandas  # deferred: optional, only for return_df
        except ImportError:
            raise RuntimeError("return_df=True needs pandas (pip install pandas)") from None
        frames = [pandas.DataFrame(rows, columns=columns) for columns, rows in results]
        return frames[0] if len(frames) == 1 else frames


def _plot(bench: Benchmark, rows: list[dict[str, Any]], save_path: str, show: bool) -> None:
    try:
        import matplotlib  # deferred: an optional extra, tilec[plot]

        if not show:
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # deferred: an optional extra, tilec[plot]
    except ImportError:
        print(f"perf_report: {PLOT_HINT}; no plot for '{bench.plot_name}'", file=sys.stderr)
        return
    figure, axes = plt.subplots()
    xs = [row[bench.x_names[0]] for row in rows]
    for index, name in enumerate(bench.line_names):
        style = bench.styles[index] if bench.styles else None
        color, line = style if style else (None, None)
        axes.plot(xs, [row[name] for row in rows], label=name, color=color, ls=line)
        if f"{name}-min" in rows[0]:
            lows = [row[f"{name}-min"] for row in rows]
            highs = [row[f"{name}-max"] for row in rows]
            axes.fill_between(xs, lows, highs, alpha=0.15, color=color)
    axes.legend()
    axes.set_xlabel(bench.xlabel or bench.x_names[0])
    axes.set_ylabel(bench.ylabel)
    if bench.x_log:
        axes.set_xscale("log")
    if bench.y_log:
        axes.set_yscale("log")
    if show:
        plt.show()
    if save_path:
        figure.savefig(os.path.join(save_path, f"{bench.plot_name}.png"))
    plt.close(figure)


def perf_report(benchmarks: Benchmark | Sequence[Benchmark]) -> Callable[[Callable], Mark]:
    """Decorator: `@perf_report(Benchmark(...))` makes `fn` a `Mark` whose `.run()` reports."""

    def decorator(fn: Callable[..., Any]) -> Mark:
        return Mark(fn, benchmarks)

    return decorator
