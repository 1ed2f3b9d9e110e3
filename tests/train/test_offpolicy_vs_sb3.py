"""scripts/offpolicy_vs_sb3.py, the learner's check against Stable-Baselines3's SAC, runs end to
end at a few hundred env steps: both learners' curves, final returns and the figure."""

import json
import os
import sys

import numpy as np
import pytest

from tests.docs.examples import ROOT

pytest.importorskip("stable_baselines3")
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import offpolicy_vs_sb3  # noqa: E402


def test_both_learners_run_and_their_curves_are_written(tmp_path):
    out, figure = tmp_path / "results.json", tmp_path / "curves.png"
    args = ["--task", "inverted_pendulum", "--env-steps", "400", "--seeds", "0", "--eval-episodes", "2"]
    offpolicy_vs_sb3.main([*args, "--json", str(out), "--plot", str(figure)])
    results = json.loads(out.read_text())
    assert [r["learner"] for r in results["runs"]] == ["unienv", "sb3_sac"]
    for run in results["runs"]:
        assert len(run["curve"]) == 10 and np.isfinite(run["final_return"]) and run["final_return"] > 0
    assert figure.stat().st_size > 10_000
