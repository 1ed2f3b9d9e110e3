"""Learning curves of train.py runs side by side, over wall-clock minutes: the laptop page's figures.

    python scripts/compare_runs.py --out curves.png crossq=runs/go1_s0,runs/go1_s1,runs/go1_s2 sac=runs/go1_sac_s0

Each argument is LABEL=RUN_DIR[,RUN_DIR...]: the runs of one learner or setting (seeds), read from
their metrics.json (train.py's, or examples/drqv2.py's with --run-dir). Two panels: the mean return
of the episodes ended in each curve row (drqv2's rows: the evaluation's return), and, where
the rows carry it (the velocity tasks' `lin_vel_error` episode metric), the mean velocity error;
each run a thin line, each label's mean over its runs (on the first run's time grid) a thick one.
Also prints, per run, its env steps and its last row's figures.
"""

from __future__ import annotations

import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def curve(run_dir: str) -> dict[str, np.ndarray]:
    """minutes, return and velocity error (NaN where absent) of a run's curve rows."""
    with open(os.path.join(run_dir, "metrics.json")) as f:
        rows = json.load(f)["curve"]

    def value(row, key):
        episode = row.get("episode", {})
        x = row.get(key, row.get("eval_return")) if key == "mean_return" else episode.get(key)
        return np.nan if x is None else float(x)

    return {
        "minutes": np.array([r["seconds"] / 60 for r in rows]),
        "return": np.array([value(r, "mean_return") for r in rows]),
        "error": np.array([value(r, "lin_vel_error") for r in rows]),
        "env_steps": rows[-1]["env_steps"] if rows else 0,
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", metavar="LABEL=RUN_DIR[,RUN_DIR...]")
    p.add_argument("--out", required=True, help="the PNG to write")
    p.add_argument("--title", default=None)
    args = p.parse_args(argv)
    groups = {}
    for spec in args.runs:
        label, sep, dirs = spec.partition("=")
        if not sep or not dirs:
            p.error(f"expected LABEL=RUN_DIR[,RUN_DIR...], got {spec!r}")
        groups[label] = [curve(d) for d in dirs.split(",")]
        for d, c in zip(dirs.split(","), groups[label], strict=True):
            print(f"{label} {d}: {c['env_steps']:,} env steps in {c['minutes'][-1]:.1f} min; last return "
                  f"{c['return'][-1]:.1f}, velocity error {c['error'][-1]:.3f}")  # fmt: skip
    has_error = any(np.isfinite(c["error"]).any() for cs in groups.values() for c in cs)
    fig, axes = plt.subplots(
        1, 2 if has_error else 1, figsize=(10 if has_error else 6, 3.6), layout="constrained"
    )
    axes = np.atleast_1d(axes)
    for (label, runs), color in zip(
        groups.items(), plt.rcParams["axes.prop_cycle"].by_key()["color"], strict=False
    ):
        for key, ax in zip(("return", "error"), axes, strict=False):
            grid = runs[0]["minutes"]
            for c in runs:
                ax.plot(c["minutes"], c[key], color=color, alpha=0.35, lw=1)
            mean = np.nanmean([np.interp(grid, c["minutes"], c[key], right=np.nan) for c in runs], 0)
            ax.plot(
                grid, mean, color=color, lw=2.5, label=f"{label} ({len(runs)} run{'s' * (len(runs) > 1)})"
            )
    axes[0].set_ylabel("mean episode return")
    if has_error:
        axes[1].set_ylabel("velocity error (m/s)")
        axes[1].set_ylim(0, None)
    for ax in axes:
        ax.set_xlabel("wall-clock minutes")
    axes[0].legend()
    if args.title:
        fig.suptitle(args.title)
    fig.savefig(args.out, dpi=110)
    print(args.out)


if __name__ == "__main__":
    main()
