"""`python -m unienv motion ...`: motion files for g1_tracking (unienv.motion).

    convert CLIP.csv --robot g1 --fps 30 [--quat xyzw|wxyz] [-o OUT.npz]   a retargeted CSV clip
    clip squat|arm_swing|walk [-o OUT.npz]                                  a built-in clip, as a file
    record POLICY [--seconds 10] [--skip 2] [--seed 0] -o OUT.npz            a G1 policy's rollout
    evaluate [--policy zero|POLICY] [--motion CLIP] [--num-envs 16] [--steps 500] [--seed 0]

`convert` reads the CSV layouts of `unienv.motion.convert` and writes the motion at the env's
control rate (0.02 s) beside the CSV (OUT defaults to CLIP.npz); `-o` names exactly the file
written (a path ending in .npz, in a folder that exists), checked before anything is read. A bad
file or `-o` is one `error:` line and writes nothing. `record` plays a G1 policy file (train.py's, or a shipped one's name) on its own task and options,
one env, deterministic actions, and writes the robot's motion from `--skip` s on for `--seconds`
s (the clip of a walking policy: its steady gait, past the first steps); a rollout that ends
(a fall) before then writes nothing. `evaluate` rolls a policy out on g1_tracking and prints the mean body-position
error: per env step, the root mean square over the tracked bodies of the distance to the aligned
reference (m), recovered from the body_pos reward term (exp(-mean squared error / sigma^2)),
averaged over every env step; and the episodes' mean length.
"""

from __future__ import annotations

import argparse
import math
import os

import numpy as np

from unienv import robots
from unienv.backends.base import load_mjmodel
from unienv.errors import ArgumentError, shown
from unienv.motion import MAX_SECONDS, clips, convert
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


def record(policy: str, seconds: float, skip: float, seed: int, out: str) -> None:
    """The motion of `policy` (a G1 policy file or a shipped policy's name) on its own task from
    `skip` s to `skip + seconds` s, written to `out` (module docstring)."""
    import torch

    import unienv
    from unienv.training.policy import load_policy
    from unienv.training.rollout import make_policy
    from unienv.training.shipped import policy_path

    out = output(out)
    for name, value, low in (("--seconds", seconds, CONTROL_DT), ("--skip", skip, 0.0)):
        if not (math.isfinite(value) and low <= value <= MAX_SECONDS):
            raise ArgumentError(f"{name}: expected seconds in [{low:g}, {MAX_SECONDS:g}], got {value!r}")
    path = policy_path(policy)
    if not (str(path).endswith(".safetensors") and os.path.isfile(path)):
        raise ArgumentError(
            f"policy: expected a G1 policy file (.safetensors) or a shipped policy's name, got {shown(policy)}"
        )
    meta = load_policy(path)[1]
    env = unienv.make(meta["task"], num_envs=1, seed=seed, task_options=meta["task_options"])
    try:
        model = load_mjmodel(_g1_scene())
        joints = convert.robot_joints(model)
        names = env.backend.names("joint")
        if env.backend.nq != model.nq or [names[j] for j in env.backend.info.actuator_joint] != joints:
            raise ArgumentError(
                f"policy: {path}: its task {meta['task']!r} is not a G1 task (its joints are not the G1's)"
            )
        if not math.isclose(env.task.dt, CONTROL_DT):
            raise ArgumentError(
                f"policy: {path}: its task steps every {env.task.dt:g} s, the motion format {CONTROL_DT:g} s"
            )
        act, (obs, _) = make_policy(path, env), env.reset(seed=seed)
        first, steps = round(skip / CONTROL_DT), round((skip + seconds) / CONTROL_DT)
        frames = []
        for step in range(steps):
            obs, _, terminated, truncated, _ = env.step(act(obs))
            if bool(terminated[0] | truncated[0]):
                ended = "fell" if bool(terminated[0]) else "reached its time limit"
                raise ArgumentError(
                    f"policy: {path}: the episode {ended} at {(step + 1) * CONTROL_DT:.2f} s, before the {skip + seconds:g} s to record; nothing written"
                )
            if step + 1 >= first:
                frames.append(
                    torch.as_tensor(env.backend.get_state_views()["qpos"])[0]
                    .to(torch.float64, copy=True)
                    .cpu()
                    .numpy()
                )
    finally:
        env.close()
    qpos = np.stack(frames)
    source = f"recorded: {os.path.basename(path)} on {meta['task']}, seed {seed}, {skip:g} s to {skip + seconds:g} s"
    _save(
        convert.from_frames(
            model, qpos[:, :3], qpos[:, 3:7], qpos[:, 7:], 1 / CONTROL_DT, CONTROL_DT, source, path
        ),
        out,
    )


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
    k.add_argument("name", choices=sorted(clips.NAMES))
    k.add_argument("-o", "--out", help="the .npz to write (default: NAME.npz)")
    r = commands.add_parser("record", help="a G1 policy's rollout on its own task as a motion .npz")
    r.add_argument("policy", help="a G1 policy file from train.py, or a shipped policy's name")
    r.add_argument("--seconds", type=float, default=10.0, help="how long a motion to record (s)")
    r.add_argument("--skip", type=float, default=2.0, help="seconds played before the recording starts")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("-o", "--out", required=True, help="the .npz to write")
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
    elif args.command == "record":
        record(args.policy, args.seconds, args.skip, args.seed, args.out)
    else:
        evaluate(args.policy, args.motion, args.num_envs, args.steps, args.seed)
    return 0


def _g1_scene() -> str:
    """The G1 scene of the g1 tasks, as g1_velocity builds it (its "default" keyframe is the
    clips' first frame)."""
    from unienv.tasks import task_class

    return task_class("g1_velocity")().scene
