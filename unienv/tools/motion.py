"""`python -m unienv motion ...`: motion files for g1_tracking (unienv.motion).

    convert CLIP.csv --robot g1 --fps 30 [--quat xyzw|wxyz] [-o OUT.npz]   a retargeted CSV clip
    clip squat|arm_swing [-o OUT.npz]                                       a built-in clip, as a file
    evaluate [--policy zero|POLICY] [--motion CLIP] [--num-envs 16] [--steps 500] [--seed 0]

`convert` reads the CSV layouts of `unienv.motion.convert` and writes the motion at the env's
control rate (0.02 s) beside the CSV (OUT defaults to CLIP.npz); `-o` names exactly the file
written (a path ending in .npz, in a folder that exists), checked before anything is read. A bad
file or `-o` is one `error:` line and writes nothing. `evaluate` rolls a policy out on g1_tracking and prints the mean body-position
error: per env step, the root mean square over the tracked bodies of the distance to the aligned
reference (m), recovered from the body_pos reward term (exp(-mean squared error / sigma^2)),
averaged over every env step; and the episodes' mean length.
"""

from __future__ import annotations

import argparse
import math
import os

from unienv import robots
from unienv.backends.base import load_mjmodel
from unienv.errors import ArgumentError, shown
from unienv.motion import clips, convert
from unienv.utils.files import written

ROBOTS = {"g1": ("unitree_g1", "scene_mjx.xml")}  # the robots whose joint order a CSV follows
CONTROL_DT = 0.02  # s: g1_tracking's env step


def _save(motion, out: str) -> None:
    with written(out) as temporary:
        motion.save(temporary)
    print(f"motion: {out} ({motion.frames} frames at {motion.fps:g} fps from {motion.source_fps:g} fps, "
          f"{len(motion.joint_names)} joints, {len(motion.body_names)} bodies)")  # fmt: skip


def output(path: str) -> str:
    """`-o`: the .npz file to write, refused unless it ends in .npz and its folder exists (and
    it is not a folder, a FIFO or a device); checked before anything is read or computed."""
    if not path.endswith(".npz"):
        raise ArgumentError(f"-o: expected a path ending in .npz, got {shown(path)}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ArgumentError(f"-o: {path}: its folder {folder} does not exist")
    if os.path.exists(path) and not os.path.isfile(path):
        raise ArgumentError(f"-o: {path} exists and is not a regular file (a folder, a FIFO or a device)")
    return path


def convert_csv(path: str, robot: str, fps: float, quat: str, out: str | None) -> None:
    out = output(out or path.removesuffix(".csv") + ".npz")
    rows = convert.read_rows(path)  # before the model: a clip that is refused costs no compile
    model = load_mjmodel(robots.model_file(*ROBOTS[robot]))
    joints = len(convert.robot_joints(model))
    root_pos, root_quat, joint_pos = convert.split_rows(rows, joints, quat, path)
    motion = convert.from_frames(model, root_pos, root_quat, joint_pos, fps, CONTROL_DT, path, path)
    _save(motion, out)


def evaluate(policy: str, motion: str | None, num_envs: int, steps: int, seed: int) -> dict[str, float]:
    """The mean body-position error (m) and episode length (s) of `policy` on g1_tracking, on
    `motion`, or where None on the clip a g1_tracking policy file was trained on (else the squat)."""
    import torch

    import unienv
    from unienv.training.rollout import make_policy, rollout

    options = {"motion": "squat"}
    if str(policy).endswith(".safetensors") and os.path.isfile(policy):
        from unienv.training.policy import load_policy

        meta = load_policy(policy)[1]
        if meta["task"] == "g1_tracking":  # the env it was trained on: its clip and other options
            options = dict(meta["task_options"])
    if motion is not None:
        options["motion"] = motion
    motion = options["motion"]
    env = unienv.make("g1_tracking", num_envs=num_envs, seed=seed, task_options=options)
    task, errors = env.task, []
    scale, sigma = task.reward_weights["body_pos"] * task.dt, task.tracking_sigmas["body_pos"]

    def on_step(obs, info, terminated):
        term = torch.as_tensor(info["reward_terms"]["body_pos"]).double()
        errors.append(torch.sqrt(-(sigma**2) * torch.log(term / scale)))

    try:
        stats = rollout(env, make_policy(policy, env), steps, seed=seed, on_step=on_step, progress=False)
    finally:
        env.close()
    s = stats.summary()
    result = {"body_pos_error_m": float(torch.stack(errors).mean()), "episode_s": s["length_mean"] * task.dt}
    length = (
        "no episode ended" if math.isnan(result["episode_s"]) else f"episodes {result['episode_s']:.2f} s"
    )
    print(f"g1_tracking ({motion}), policy {policy}: {num_envs} envs x {steps} steps; mean body-position "
          f"error {result['body_pos_error_m']:.4f} m; {length} ({s['episodes']} ended)")  # fmt: skip
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m unienv motion", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    c = commands.add_parser("convert", help="a retargeted CSV clip into a motion .npz")
    c.add_argument("csv", help="one frame a line: root x y z, root quaternion, joint positions (rad)")
    c.add_argument(
        "--robot", required=True, choices=sorted(ROBOTS), help="whose joint order the columns follow"
    )
    c.add_argument("--fps", required=True, type=float, help="the CSV's frames per second")
    c.add_argument("--quat", default="xyzw", choices=convert.QUAT_ORDERS, help="the root quaternion's order")
    c.add_argument("-o", "--out", help="the .npz to write (default: beside the CSV)")
    k = commands.add_parser("clip", help="a built-in clip of the G1 as a motion .npz")
    k.add_argument("name", choices=sorted(clips.CLIPS))
    k.add_argument("-o", "--out", help="the .npz to write (default: NAME.npz)")
    e = commands.add_parser("evaluate", help="a policy's mean body-position error on g1_tracking")
    e.add_argument("--policy", default="zero", help="zero, random or a policy file from train.py")
    e.add_argument(
        "--motion", help="a built-in clip or a motion .npz (default: the policy file's own clip, else squat)"
    )
    e.add_argument("--num-envs", type=int, default=16)
    e.add_argument("--steps", type=int, default=500)
    e.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.command == "convert":
        convert_csv(args.csv, args.robot, args.fps, args.quat, args.out)
    elif args.command == "clip":
        out = output(args.out or f"{args.name}.npz")
        _save(clips.clip(args.name, load_mjmodel(_g1_scene())), out)
    else:
        evaluate(args.policy, args.motion, args.num_envs, args.steps, args.seed)
    return 0


def _g1_scene() -> str:
    """The G1 scene of the g1 tasks, as g1_velocity builds it (its "default" keyframe is the
    clips' first frame)."""
    from unienv.tasks import task_class

    return task_class("g1_velocity")().scene
