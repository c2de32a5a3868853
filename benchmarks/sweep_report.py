"""The sweep's report (benchmarks/sweep.py): the run's header, the per-family summary (geometric
mean of tilec/Triton speed, worst case, failures) and the markdown tables."""

from __future__ import annotations

import math
import platform
import subprocess
import time
from pathlib import Path

SLOW = 0.9
"""Cases under this speed are counted in the summary (issue 23's bar for a single case)."""


def geometric_mean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def version(module: str) -> str:
    try:
        return __import__(module).__version__
    except Exception as error:  # not installed (the smoke run has no Triton)
        return f"absent ({type(error).__name__})"


def checkout_commit(root: Path) -> str:
    """The commit of the checkout whose root is `root`; "unknown" where `root` is not one (a
    `git archive` unpacked inside another checkout would otherwise report that one's HEAD)."""

    def git(*args: str) -> str:
        found = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
        )
        return found.stdout.strip() if found.returncode == 0 else ""

    top = git("rev-parse", "--show-toplevel")
    if not top or Path(top).resolve() != root.resolve():
        return "unknown"
    return git("rev-parse", "--short", "HEAD") or "unknown"


def header(smoke: bool, seed: int, wall_s: float, warm_s: float) -> dict:
    import torch

    device = "CPU (tilec interp)" if smoke else torch.cuda.get_device_name()
    return {
        "device": device,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": checkout_commit(Path(__file__).resolve().parents[1]),
        "triton": version("triton"),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "seed": seed,
        "wall_s": round(wall_s, 1),
        "compile_ahead_s": round(warm_s, 1),
    }


def summarize(rows: list[dict]) -> dict:
    """Per family: cases, timed cases, geometric mean and worst speed, cases under SLOW,
    failures; and the same over every timed case."""
    families: dict[str, dict] = {}
    for row in rows:
        entry = families.setdefault(
            row["family"], {"cases": 0, "timed": 0, "failed": 0, "speeds": [], "worst": None}
        )
        entry["cases"] += 1
        entry["failed"] += row["status"] != "ok"
        if "speed" in row:
            entry["timed"] += 1
            entry["speeds"].append(row["speed"])
            if entry["worst"] is None or row["speed"] < entry["worst"][0]:
                entry["worst"] = (row["speed"], row["case"])
    every = [s for e in families.values() for s in e["speeds"]]
    for entry in families.values():
        entry["geomean"] = geometric_mean(entry["speeds"])
        entry["below_0.9"] = sum(s < SLOW for s in entry["speeds"])
    worst = min(
        ((r["speed"], f"{r['family']} {r['case']}") for r in rows if "speed" in r), default=None
    )
    return {"families": families, "geomean": geometric_mean(every), "worst": worst}


def side_cell(row: dict, side: str, key: str, form: str) -> str:
    value = row.get(side, {}).get(key)
    return "-" if value is None else format(value, form) if form else str(value)


def notes(row: dict) -> str:
    """The row's failures: a side's failed configs (count and the first's error)."""
    parts = [] if row["status"] == "ok" else [row["status"]]
    for side in ("tilec", "triton"):
        failures = row.get(side, {}).get("failures", [])
        if failures:
            parts.append(f"{side}: {len(failures)} config(s) failed, {failures[0]}")
    return "; ".join(parts).replace("|", "/")


def print_tables(info: dict, rows: list[dict], summary: dict, timing: bool) -> None:
    print()
    print("; ".join(f"{k}: {v}" for k, v in info.items()))
    print()
    if timing:
        print(
            "| family | case | tilec config | Triton config | tilec us | Triton us | tilec rate "
            "| Triton rate | tilec/Triton speed | tilec rel. error | Triton rel. error | notes |"
        )
        print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    else:
        print("| family | case | tilec config | tilec rel. error | notes |")
        print("|---|---|---|---:|---|")
    for row in rows:
        config = side_cell(row, "tilec", "config", "")
        error = side_cell(row, "tilec", "error", ".1e")
        if not timing:
            print(f"| {row['family']} | {row['case']} | {config} | {error} | {notes(row)} |")
            continue
        unit = row["unit"]
        cells = [
            row["family"], row["case"], config, side_cell(row, "triton", "config", ""),
            side_cell(row, "tilec", "us", ".1f"), side_cell(row, "triton", "us", ".1f"),
            f"{side_cell(row, 'tilec', 'rate', '.2f')} {unit}",
            f"{side_cell(row, 'triton', 'rate', '.2f')} {unit}",
            f"**{row['speed']:.3f}**" if "speed" in row else "-",
            error, side_cell(row, "triton", "error", ".1e"), notes(row),
        ]  # fmt: skip
        print("| " + " | ".join(cells) + " |")
    if not timing:
        return
    print()
    print(
        "| family | cases | timed | geometric mean tilec/Triton | worst (case) | below 0.9x "
        "| failed |"
    )
    print("|---|---:|---:|---:|---|---:|---:|")
    for family, e in summary["families"].items():
        worst = f"{e['worst'][0]:.3f} ({e['worst'][1]})" if e["worst"] else "-"
        print(
            f"| {family} | {e['cases']} | {e['timed']} | {e['geomean']:.3f} | {worst} "
            f"| {e['below_0.9']} | {e['failed']} |"
        )
    worst = summary["worst"]
    print(
        f"\nall timed cases: geometric mean {summary['geomean']:.3f}; worst "
        + (f"{worst[0]:.3f} ({worst[1]})" if worst else "-")
    )
