"""`python -m unienv.dynamics check <scene> [--samples N] [--seed S]`: the agreement table of
PinocchioDynamics against MujocoDynamics for a scene; exit status 1 if any row fails.

`python -m unienv.dynamics payload`: the worked identification example (unienv.dynamics.payload).
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m unienv.dynamics")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="agreement of Pinocchio and MuJoCo on a scene")
    check.add_argument("scene", nargs="+", help="MJCF file(s)")
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
    for scene in args.scene:
        mj, pin = MujocoDynamics(scene), PinocchioDynamics(scene)
        rows = agreement(pin, mj, samples=args.samples, seed=args.seed)
        title = f"{scene}: nq={mj.nq} nv={mj.nv} bodies={len(mj.body_names)}; Pinocchio vs MuJoCo"
        print(format_table(title, rows), end="\n\n")
        failed |= not all(r.ok for r in rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
