"""Replays a corpus of motion files, CSV clips and deployment contracts (argv[1], made by
test_untrusted_surfaces.py) under the memory limit argv[2]: one JSON line per case (bounded.replay),
the legitimate cases first (what they load, the G1's model and onnxruntime, is then loaded).

    motion/<case>.npz      unienv.motion.load, then fitted to the G1 at its control step (for_model)
    csv/<case>.csv         python -m unienv motion convert, with the arguments in csv/<case>.json
    contract/<case>.onnx   deploy check (unienv's loaders) and the standalone runner, on the
                           quadruped's scene: refused means refused by both, one line each
"""

import json
import os
import resource
import sys

import mujoco
from bounded import replay

from unienv.backends.scene import load_mjmodel
from unienv.deploy import runner
from unienv.deploy.check import check
from unienv.errors import UnienvError
from unienv.motion import load
from unienv.motion.convert import for_model
from unienv.tasks.tracking.g1_tracking import G1Tracking
from unienv.tasks.velocity.robots.quadruped import QUADRUPED
from unienv.tools import motion as tool

G1_DT = G1Tracking.sim_dt * G1Tracking.decimation


def motion_case(path: str, g1) -> callable:
    return lambda: for_model(load(path), g1, G1_DT, os.path.basename(path))


def csv_case(path: str) -> callable:
    with open(path.removesuffix(".csv") + ".json") as f:
        args = json.load(f)
    return lambda: tool.main(["convert", path, "--robot", "g1", *args])


def contract_case(path: str, model) -> callable:
    def case():
        outcomes = []
        for attempt in (
            lambda: check(path, QUADRUPED.scene),
            lambda: runner.Runner(path, model) and [],
        ):
            try:
                problems = attempt()
                outcomes.append(f"{len(problems)} mismatches: {problems}" if problems else "accepted")
            except (UnienvError, runner.DeployError) as e:
                outcomes.append(str(e))
        if "accepted" in outcomes:
            return  # accepted by one of them
        raise runner.DeployError(" | ".join(outcomes))

    return case


def main(folder: str, memory: int) -> None:
    g1 = load_mjmodel(G1Tracking().scene)
    quadruped = mujoco.MjModel.from_xml_path(QUADRUPED.scene)
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cases = []
    for kind in sorted(os.listdir(folder)):
        for name in sorted(os.listdir(os.path.join(folder, kind))):
            path = os.path.join(folder, kind, name)
            if kind == "motion":
                cases.append((f"motion/{name}", motion_case(path, g1)))
            elif kind == "csv" and name.endswith(".csv"):
                cases.append((f"csv/{name}", csv_case(path)))
            elif kind == "contract":
                cases.append((f"contract/{name}", contract_case(path, quadruped)))
    cases.sort(key=lambda case: "legit" not in case[0])  # the legitimate ones first: they warm up
    replay(cases, (UnienvError, runner.DeployError))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
