"""DR sweeps: one rollout batch per setting, metrics per run, one summary table.

    python play.py -m task=ant dr=default dr.friction.range=0.5,1.0,1.5 dr.mass.range=0.8,1.0,1.2
    python play.py -m ... hydra/launcher=joblib        # runs in parallel on this machine
    python play.py -m ... hydra/launcher=ray           # on a Ray cluster (or a local Ray)

Hydra runs one job per setting (a number as a term's `range` is a fixed value,
so the line above is a 3 x 3 grid of friction and mass scales). In a sweep
play.py records no video unless `+sweep.video=true`, and each job writes
`metrics.json` and `metrics.csv` into its own run directory:

    job, overrides   the job number and the overrides that define the run
    episodes         episodes finished during the rollout
    return_mean/std  over finished episodes; length_mean; termination_rate
                     (the share of finished episodes that terminated rather
                     than timed out)
    dr.<term>.min/max  the smallest and largest draw each DR term realised
                     (a scale's factor, an add's offset; see DomainRandomization.ranges)

When the sweep ends, the `SweepSummary` callback (in cfg/config.yaml under
hydra.callbacks) gathers every run's metrics into `summary.csv` and
`summary.json` in the sweep directory, draws `summary.png` (unienv.utils.plots: the
mean return as a heatmap over two swept parameters, else bars with the
standard deviation as error bars) and prints the table;
`python -m unienv.tools.sweep SWEEP_DIR` does the same afterwards. Reading the runs'
files, not the launcher's return values, makes the summary the same whatever
launcher ran the jobs and wherever.
"""

from __future__ import annotations

import csv
import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from hydra.experimental.callback import Callback

from unienv.utils import plots
from unienv.utils.files import write_json, written

METRICS = "metrics.json"
_SHOWN = ("episodes", "return_mean", "return_std", "length_mean", "termination_rate")


def is_multirun() -> bool:
    """Whether this process runs a job of a Hydra multirun (`-m`)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def run_metrics(
    summary: Mapping[str, float], ranges: Mapping[str, tuple[float, float]], **fields: Any
) -> dict[str, Any]:
    """One run's row: `fields` (job, overrides, ...), the rollout summary, the DR ranges."""
    row = dict(fields)
    row.update({k: summary[k] for k in _SHOWN})
    for term, (low, high) in ranges.items():
        row[f"dr.{term}.min"], row[f"dr.{term}.max"] = low, high
    return row


def record(summary: Mapping[str, float], ranges: Mapping[str, tuple[float, float]], **fields: Any) -> str:
    """Write this Hydra job's metrics into its run directory; returns the json path."""
    from hydra.core.hydra_config import HydraConfig

    hydra = HydraConfig.get()
    row = run_metrics(summary, ranges, job=hydra.job.num, overrides=" ".join(hydra.overrides.task), **fields)
    return write_run(row, hydra.runtime.output_dir)


def write_run(row: Mapping[str, Any], directory: str | os.PathLike) -> str:
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, METRICS)
    write_json(path, row, indent=2, allow_nan=True)
    _write_csv(os.path.join(directory, "metrics.csv"), [row])
    return path


def collect(sweep_dir: str | os.PathLike) -> list[dict[str, Any]]:
    """Every run's metrics under a sweep directory, in job order."""
    rows = []
    for root, _, files in os.walk(sweep_dir):
        if METRICS in files:
            with open(os.path.join(root, METRICS)) as f:
                rows.append(json.load(f))
    return sorted(rows, key=lambda r: (r.get("job", 0), r.get("overrides", "")))


def summarize(sweep_dir: str | os.PathLike) -> str:
    """Write summary.csv, summary.json and summary.png in the sweep directory; returns the table."""
    rows = collect(sweep_dir)
    if rows:
        _write_csv(os.path.join(sweep_dir, "summary.csv"), rows)
        write_json(os.path.join(sweep_dir, "summary.json"), rows, indent=2, allow_nan=True)
        settings = [dict(o.split("=", 1) for o in run if "=" in o) for run in _swept(rows)]
        plots.sweep_returns(settings, rows, os.path.join(sweep_dir, "summary.png"))
    return format_table(rows)


def format_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """A fixed-width text table: one line per run, its setting being the overrides
    that differ between runs (all of them in metrics.json and summary.csv)."""
    if not rows:
        return "no runs with metrics found"
    terms = sorted({k[3:-4] for r in rows for k in r if k.startswith("dr.") and k.endswith(".min")})
    swept = _swept(rows)
    header = ["job", "setting", "episodes", "return", "length", "term.rate"] + terms
    lines = [header]
    for r, setting in zip(rows, swept, strict=True):
        line = [
            str(r.get("job", "")),
            " ".join(setting) or "(base)",
            str(r["episodes"]),
            f"{_num(r['return_mean'])} +- {_num(r['return_std'])}",
            _num(r["length_mean"], 1),
            _num(r["termination_rate"]),
        ]
        for t in terms:
            low, high = r.get(f"dr.{t}.min", math.nan), r.get(f"dr.{t}.max", math.nan)
            line.append(_num(low) if low == high else f"[{_num(low)}, {_num(high)}]")
        lines.append(line)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines]
    text.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(text)


class SweepSummary(Callback):
    """Hydra callback: at the end of a multirun, write and print the summary table."""

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        sweep_dir = str(config.hydra.sweep.dir)
        table = summarize(sweep_dir)
        figure = ", summary.png" if os.path.exists(os.path.join(sweep_dir, "summary.png")) else ""
        print(f"\nDR sweep summary ({sweep_dir}/summary.csv{figure}):\n{table}", flush=True)


def _swept(rows: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """Each run's overrides less those that every run shares (the sweep's settings)."""
    overrides = [str(r.get("overrides", "")).split() for r in rows]
    common = set.intersection(*map(set, overrides)) if len(overrides) > 1 else set()
    return [[o for o in run if o not in common] for run in overrides]


def _num(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def _write_csv(path: str, rows: Sequence[Mapping[str, Any]]) -> None:
    columns = list(dict.fromkeys(k for r in rows for k in r))
    with written(path) as temporary, open(temporary, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m unienv.tools.sweep SWEEP_DIR", file=sys.stderr)
        return 2
    print(summarize(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
