"""Render benchmark runs (the JSON of `python -m unienv.bench --json PATH`) as Markdown tables.

    python scripts/perf_table.py docs/bench/*.json      # prints the tables

One table per machine: the runs whose `meta.machine` (or, where absent, CPU threads and GPU)
agree are one machine's, and each table gives the command and date that produced them.
Throughput (raw and env env-steps/s) comes from the machine's first run; the ratios and the
per-call overhead list every run, so the spread between runs shows. A value a run did not record
(null) prints as "-". The performance page (docs/performance.md) includes these tables through
the docs build's hook (scripts/docs_hooks.py), so they are never edited by hand.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable


def load(paths: Iterable[str]) -> list[dict]:
    """The runs in `paths`, oldest first."""
    runs = []
    for path in paths:
        with open(path) as f:
            runs.append(json.load(f))
    return sorted(runs, key=lambda r: r["meta"]["date"])


def _machine(meta: dict) -> str:
    if meta.get("machine"):
        return meta["machine"]
    gpu = f", {meta['gpu']}" if meta.get("gpu") else ", no GPU"
    return f"{meta['cpu_threads']} CPU threads{gpu}"


def _row(run: dict, task: str, num_envs: int) -> dict:
    for row in run["rows"]:
        if row["task"] == task and row["num_envs"] == num_envs:
            return row
    return {}


def _fmt(x, kind: str) -> str:
    if x is None:
        return "-"
    return {"sps": f"{x:,.0f}", "ratio": f"{x:.1%}", "us": f"{x:.0f}"}[kind]


def table(runs: list[dict], wide: int = 256, narrow: int = 1) -> str:
    """One machine's runs as a Markdown table: per task, raw and env env-steps/s at `wide`
    envs (first run), reads/raw and env/raw at `wide` and env +µs at `narrow` (every run)."""
    tasks = list(dict.fromkeys(r["task"] for run in runs for r in run["rows"]))
    n = len(runs)
    runs_word = "one run" if n == 1 else f"{n} runs"
    head = (
        f"| task | raw, {wide} envs | env, {wide} envs | reads/raw at {wide}, {runs_word} "
        f"| env/raw at {wide}, {runs_word} | env +µs at {narrow} env, {runs_word} |"
    )
    lines = [head, "|---|---|---|---|---|---|"]
    for task in tasks:
        wide_rows = [_row(run, task, wide) for run in runs]
        narrow_rows = [_row(run, task, narrow) for run in runs]
        lines.append(
            f"| {task} | {_fmt(wide_rows[0].get('raw_sps'), 'sps')} | {_fmt(wide_rows[0].get('env_sps'), 'sps')} | "
            + " / ".join(_fmt(r.get("reads_ratio"), "ratio") for r in wide_rows)
            + " | "
            + " / ".join(_fmt(r.get("env_ratio"), "ratio") for r in wide_rows)
            + " | "
            + " / ".join(_fmt(r.get("env_overhead_us"), "us") for r in narrow_rows)
            + " |"
        )
    return "\n".join(lines)


def render(paths: Iterable[str]) -> str:
    """Every machine's table, under a heading that names the machine, the command and the dates."""
    machines: dict[str, list[dict]] = {}
    for run in load(paths):
        machines.setdefault(_machine(run["meta"]), []).append(run)
    out = []
    for machine, runs in machines.items():
        meta = runs[0]["meta"]
        dates = ", ".join(r["meta"]["date"] for r in runs)
        out += [
            f"### {machine}",
            "",
            f"`{meta.get('command', 'python -m unienv.bench')}` on backend `{meta['backend']}`, "
            f"torch {meta['torch']} on {meta['torch_threads']} thread(s); runs: {dates}.",
            "",
            table(runs),
            "",
        ]
    return "\n".join(out)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python scripts/perf_table.py RUN.json [RUN.json ...]")
    print(render(sys.argv[1:]))
