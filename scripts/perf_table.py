"""Render benchmark runs (the JSON of `python -m unienv.bench --json PATH`) as Markdown tables.

    python scripts/perf_table.py docs/bench/*.json      # prints the tables
    python scripts/perf_table.py docs/bench/peers/*.json   # unienv beside Gymnasium and EnvPool
    python scripts/perf_table.py docs/bench/pixels/*.json  # pixels beside dm_control

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


def _count(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}"


def _ended(fractions: dict | None) -> str:
    """unienv's / next-step's / EnvPool's fraction of env-steps that end an episode, in %."""
    fractions = fractions or {}
    return " / ".join(
        f"{100 * fractions[k]:.1f}" if k in fractions else "-" for k in ("unienv", "next", "envpool")
    )


def _pair(summary: dict | None) -> str:
    return "-" if summary is None else f"{summary['min']:.2f} / {summary['median']:.2f}"


def latest(runs: list[dict]) -> list[dict]:
    """Each machine's newest run, oldest machine first: the page gives the current figures (how
    they moved is in the changelog and in git)."""
    newest: dict[str, dict] = {}
    for run in runs:
        newest[_machine(run["meta"])] = run
    return list(newest.values())


def render_peers(paths: Iterable[str]) -> str:
    """Each machine's newest run of `python -m unienv.bench --peers --json PATH` as tables: at one
    env, each loop's step time over Gymnasium v5's (and dm_control's); at N envs, unienv's
    env-steps/s over each peer's (min / median over the run's rounds)."""
    out = []
    for run in latest(load(paths)):
        meta, rows = run["meta"], run["rows"]
        dmc = [r for r in rows if r.get("dmc")]
        one = [r for r in rows if r["num_envs"] == 1 and not r.get("dmc")]
        many = [r for r in rows if r["num_envs"] > 1]
        out += [
            f"### {_machine(meta)}, {meta['date']}",
            "",
            f"`{meta.get('command', 'python -m unienv.bench --peers')}`, torch {meta['torch']} on "
            f"{meta['torch_threads']} thread(s); min / median of {meta['rounds']} rounds.",
            "",
        ]
        if one:
            out += [
                "| task (1 env) | Gymnasium v5 µs | single / v5 (time) | unienv.make(num_envs=1) / v5 "
                "| EnvPool / v5 |",
                "|---|---|---|---|---|",
            ]
            out += [
                f"| {r['task']} | {r['gymnasium_us']:.1f} | {_pair(r['single_time_ratio'])} "
                f"| {_pair(r['vector_time_ratio'])} | {_pair(r.get('envpool_time_ratio'))} |"
                for r in one
            ]
            out.append("")
        if many:
            out += [
                "| task | num_envs | unienv env-steps/s | next-step env-steps/s | ended % (unienv / next "
                "/ EnvPool) | unienv / EnvPool | next-step / EnvPool | raw / EnvPool | raw next-step / "
                "EnvPool | unienv / SyncVectorEnv |",
                "|---|---|---|---|---|---|---|---|---|---|",
            ]
            out += [
                f"| {r['task']} | {r['num_envs']} | {r['unienv_sps']:,.0f} | {_count(r.get('next_sps'))} "
                f"| {_ended(r.get('ended'))} | {_pair(r.get('unienv_over_envpool'))} "
                f"| {_pair(r.get('next_over_envpool'))} | {_pair(r.get('raw_over_envpool'))} "
                f"| {_pair(r.get('raw_next_over_envpool'))} | {_pair(r['unienv_over_sync'])} |"
                for r in many
            ]
            out.append("")
        if dmc:
            out += [
                "| DeepMind Control task (1 env) | dm_control µs | unienv µs | unienv / dm_control (time) |",
                "|---|---|---|---|",
            ]
            out += [
                f"| {r['task']} | {r['dm_control_us']:.1f} | {r['single_us']:.1f} | {_pair(r['single_time_ratio'])} |"
                for r in dmc
            ]
            out.append("")
    return "\n".join(out)


def render_pixels(paths: Iterable[str]) -> str:
    """Each machine's newest run of `python -m unienv.bench pixels --json PATH`: pixel env-steps/s
    of dm_control's loop and unienv's in each camera look, their ratio, the render's share of
    unienv's step and its milliseconds per frame; and the resident memory each env adds, where
    the run measured it."""
    out = []
    for run in latest(load(paths)):
        meta = run["meta"]
        out += [
            f"### {_machine(meta)}, {meta['date']}",
            "",
            f"`{meta['command']}`, `MUJOCO_GL={meta['mujoco_gl']}`, load average "
            f"{meta['load_average']:.1f} at its start; the best of {meta['rounds']} rounds.",
            "",
            f"| {meta['task']}, envs | look | dm_control env-steps/s | unienv env-steps/s | unienv / dm_control "
            "| render share of unienv's step | render ms per frame |",
            "|---|---|---|---|---|---|---|",
        ]
        out += [
            f"| {r['num_envs']} | {r['look']} | {r['dm_control']:.1f} | {r['unienv']:.1f} "
            f"| {r['unienv'] / r['dm_control']:.2f}x | {100 * r['render_share']:.0f}% | {r['render_ms_per_frame']:.1f} |"
            for r in run["rows"]
        ]
        memory = run.get("memory")
        if memory:
            out += [
                "",
                f"Resident memory each env adds: {memory['rss_per_env'] / 1e3:.0f} kB (its stack of frames: "
                f"{memory['frame_bytes'] / 1e3:.1f} kB).",
            ]
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python scripts/perf_table.py RUN.json [RUN.json ...]")
    kinds: dict[str, list[str]] = {"bench": [], "peers": [], "pixels": []}
    for p in sys.argv[1:]:
        run = load([p])[0]
        kinds[
            "peers" if run["meta"].get("peers") else "pixels" if "mujoco_gl" in run["meta"] else "bench"
        ].append(p)
    print("\n".join([render(kinds["bench"]), render_peers(kinds["peers"]), render_pixels(kinds["pixels"])]))
