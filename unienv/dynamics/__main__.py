"""`python -m unienv.dynamics check <scene> [--samples N] [--seed S]`: the agreement table of
PinocchioDynamics against MujocoDynamics for a scene; exit status 1 if any row fails. A scene is
an MJCF file or the name of a shipped robot (`arm7`, `quadruped`, `cartpole`, or a Gymnasium
MuJoCo scene such as `ant`), so that the shipped robots work from any directory.

`python -m unienv.dynamics payload`: the worked identification example (unienv.dynamics.payload).
"""

from __future__ import annotations

import argparse
import glob
import os

from unienv.errors import unknown_name
from unienv.tools import cli


def shipped_scenes() -> dict[str, str]:
    """Name -> path of the robots that ship with unienv (its tasks' assets) and with Gymnasium."""
    from unienv.tasks import ASSETS, GYM_ASSETS

    found = {}
    for folder in (GYM_ASSETS, ASSETS):  # unienv's own win a clash
        for path in sorted(glob.glob(os.path.join(folder, "*.xml"))):
            found[os.path.splitext(os.path.basename(path))[0]] = path
    return found


def resolve_scene(scene: str) -> str:
    """The MJCF file `scene` names: a file as given, else a shipped robot's name (the name of its
    file, with or without `.xml`, whatever folder precedes it); else an UnknownNameError."""
    if os.path.isfile(scene):
        return scene
    shipped = shipped_scenes()
    name = os.path.splitext(os.path.basename(scene))[0]
    if name in shipped:
        return shipped[name]
    raise unknown_name("scene (an MJCF file or a shipped robot)", scene, shipped)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m unienv.dynamics")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="agreement of Pinocchio and MuJoCo on a scene")
    check.add_argument("scene", nargs="+", help="MJCF file(s), or shipped robots by name (e.g. arm7, ant)")
    check.add_argument("--samples", type=int, default=8, help="random states (default 8)")
    check.add_argument("--seed", type=int, default=0)
    payload = sub.add_parser("payload", help="identify a randomized payload mass on arm7")
    payload.add_argument("--num-envs", type=int, default=8)
    payload.add_argument("--seconds", type=float, default=4.0)
    payload.add_argument("--seed", type=int, default=0)
    payload.add_argument("--noise", action="store_true", help="add sensor noise")
    args = parser.parse_args(argv)

    if args.command == "payload":
        from unienv.dynamics.payload import main as payload_main

        return payload_main(args.num_envs, args.seconds, args.seed, args.noise)

    from unienv.dynamics.check import agreement, format_table
    from unienv.dynamics.mujoco_model import MujocoDynamics
    from unienv.dynamics.pinocchio_model import PinocchioDynamics

    failed = False
    for scene in map(resolve_scene, args.scene):
        mj, pin = MujocoDynamics(scene), PinocchioDynamics(scene)
        rows = agreement(pin, mj, samples=args.samples, seed=args.seed)
        title = f"{scene}: nq={mj.nq} nv={mj.nv} bodies={len(mj.body_names)}; Pinocchio vs MuJoCo"
        print(format_table(title, rows), end="\n\n")
        failed |= not all(r.ok for r in rows)
    return 1 if failed else 0


if __name__ == "__main__":
    cli.run(main)  # a user's mistake: one line, no traceback (--debug shows it)
