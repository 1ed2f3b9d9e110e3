"""Run an exported unienv policy on plain MuJoCo: numpy, mujoco and onnxruntime, nothing else.

    python -m unienv.deploy run policy.onnx --model path/to/scene.xml --command 0.5 0 0
    python runner.py run policy.onnx --model unitree_go2      # this file copied next to a driver

This module imports nothing of unienv (a test runs it with torch and unienv blocked), so a robot
team can copy it beside their driver and read it in one sitting. The policy file's metadata
(`metadata_props["unienv"]`, JSON) holds a `contract` (docs/deployment.md has its schema): the
robot's joints and actuators in action order, the default pose, the PD gains, the control period,
and the observation blocks in order, each a quantity with its frame, offset and scale. Each env
step, as the env does it:

    obs    = concat(block(data) * scale for each block)                 float32 (1, obs_dim)
    action = policy(obs)                                                 clipped in the graph
    data.ctrl[actuators] = offset + scale * action                       PD position targets
    mj_step(model, data) x substeps                                      substeps = period / timestep

Quantities (MuJoCo's conventions: wxyz quaternions body to world, the free joint's linear
velocity in the world frame and its angular velocity in the body frame):
root_linear_velocity / root_angular_velocity / gravity (frame "base": the root body's frame),
joint_position (minus the default pose where offset is "default_pose"), joint_velocity,
command (the commands in the contract's order), last_action (the previous step's action),
height_scan (base z - offset - the ground's height under each of the block's points, placed in
the base's yaw frame, by a vertical ray onto the scene's heightfields; clipped to +-clip).

The control period is the policy's (`control.period` = its training's sim_dt x decimation); the
model's timestep is the model's own choice of integration step, which need not be the training's
(Menagerie's Go1 states 0.002 s, the task trains at 0.004 s): the runner steps the model
period / timestep times per period, and refuses a timestep of which the period is no whole
number. `robot_facts(model, root)` is what the contract says of the robot, computed from a
compiled model; `mismatches` compares a contract with a model and names every difference. The
runner refuses a model that differs. The robot hash is sha256 over the root body's subtree: body
names, parents, positions, orientations and masses; joint names, types, axes, positions and
ranges; actuators' names, joints, gears, gains, biases, ctrl and force ranges; each number
printed to 6 significant digits (so a recompile on another machine gives the same hash).
Inertia tensors, friction, damping, armature, geoms and the timestep are outside it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

import mujoco
import numpy as np

SCHEMA = "unienv.deploy/1"
META_KEY = "unienv"
QUANTITIES = (
    "root_linear_velocity",
    "root_angular_velocity",
    "gravity",
    "command",
    "joint_position",
    "joint_velocity",
    "last_action",
    "height_scan",
)


class DeployError(ValueError):
    """A policy file, a contract or a model that the runner cannot use; the message says why."""


def _name(model, kind: str, i: int) -> str:
    return mujoco.mj_id2name(model, getattr(mujoco.mjtObj, f"mjOBJ_{kind.upper()}"), i) or f"{kind}{i}"


def _g(values) -> list[float]:
    """Numbers to 6 significant digits: what the hash and the contract record."""
    return [float(f"{v:.6g}") for v in np.ravel(values)]


def load_model(spec: str) -> mujoco.MjModel:
    """An MJCF path, or a Menagerie name (<$UNIENV_MENAGERIE_DIR>/<name>/scene.xml), or a
    Menagerie name and file (<name>/<file>.xml, under the same folder)."""
    path = spec
    if not os.path.isfile(path):
        relative = spec if spec.endswith(".xml") else os.path.join(spec, "scene.xml")
        path = os.path.join(os.environ.get("UNIENV_MENAGERIE_DIR", ""), relative)
    if not os.path.isfile(path):
        raise DeployError(
            f"--model: no MJCF file {spec!r}, nor {path!r} (set UNIENV_MENAGERIE_DIR to a Menagerie checkout)"
        )
    return mujoco.MjModel.from_xml_path(path)


def read_contract(path: str) -> dict:
    """The contract in an ONNX policy file written by `python -m unienv export`."""
    import onnxruntime

    props = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"]).get_modelmeta()
    meta = json.loads(props.custom_metadata_map.get(META_KEY, "{}"))
    return validate(meta.get("contract") if isinstance(meta, dict) else None, path)


FIELDS = {  # what the runner and the check read, and its type
    "robot": dict,
    "robot.root": str,
    "robot.actuators": list,
    "robot.joints": list,
    "default_pose": dict,
    "default_pose_keyframe": str,
    "action.scale": list,
    "action.offset": list,
    "control.sim_dt": float,
    "control.decimation": int,
    "control.period": float,
    "observation": list,
    "commands": list,
}


def validate(contract, path: str) -> dict:
    """The contract, if it is one of this schema with every field the runner reads, of its type."""
    if not isinstance(contract, dict) or contract.get("schema") != SCHEMA:
        raise DeployError(f"{path}: no deployment contract ({SCHEMA}) in its metadata")
    for key, kind in FIELDS.items():
        value = contract
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if not isinstance(value, kind) or isinstance(value, bool):
            raise DeployError(f"{path}: contract field {key!r}: expected a {kind.__name__}, got {value!r}")
    control = contract["control"]
    if not np.isclose(control["sim_dt"] * control["decimation"], control["period"], rtol=1e-6):
        raise DeployError(
            f"{path}: contract field 'control.period': expected sim_dt x decimation = "
            f"{control['sim_dt'] * control['decimation']:.6g} s, got {control['period']} s"
        )
    for i, block in enumerate(contract["observation"]):
        if not (
            isinstance(block, dict) and isinstance(block.get("name"), str) and type(block.get("width")) is int
        ):
            raise DeployError(
                f"{path}: contract field 'observation[{i}]': expected a name and a width, got {block!r}"
            )
    return contract


def robot_facts(model: mujoco.MjModel, root: str) -> dict:
    """What a contract records of the robot under body `root`: names in action order, limits,
    gains, masses and the hash (see the module's docstring)."""
    root_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, root)
    if root_id < 0:
        return {"root": None}
    bodies = [b for b in range(model.nbody) if _in_subtree(model, b, root_id)]
    joints = [j for j in range(model.njnt) if model.jnt_bodyid[j] in bodies]
    actuators = [a for a in range(model.nu) if model.actuator_trnid[a, 0] in joints]
    tree = {
        "bodies": [
            [_name(model, "body", b), _name(model, "body", model.body_parentid[b])]
            + _g(model.body_pos[b])
            + _g(model.body_quat[b])
            + _g(model.body_mass[b])
            for b in bodies
        ],
        "joints": [
            [_name(model, "joint", j), int(model.jnt_type[j])]
            + _g(model.jnt_axis[j])
            + _g(model.jnt_pos[j])
            + _g(model.jnt_range[j])
            for j in joints
        ],
        "actuators": [
            [_name(model, "actuator", a), _name(model, "joint", model.actuator_trnid[a, 0])]
            + _g(model.actuator_gear[a, 0])
            + _g(model.actuator_gainprm[a, 0])
            + _g(model.actuator_biasprm[a, :3])
            + _g(model.actuator_ctrlrange[a])
            + _g(model.actuator_forcerange[a])
            for a in actuators
        ],
    }
    act = [_name(model, "actuator", a) for a in actuators]
    jnt = {a: _name(model, "joint", model.actuator_trnid[a, 0]) for a in actuators}
    return {
        "model": model.names.split(b"\0", 1)[0].decode(),
        "root": root,
        "hash": hashlib.sha256(json.dumps(tree).encode()).hexdigest()[:16],
        "actuators": act,
        "joints": [jnt[a] for a in actuators],
        "joint_range": {jnt[a]: _g(model.jnt_range[model.actuator_trnid[a, 0]]) for a in actuators},
        "kp": {n: _g(model.actuator_gainprm[a, 0])[0] for n, a in zip(act, actuators, strict=True)},
        "kd": {n: _g(0.0 - model.actuator_biasprm[a, 2])[0] for n, a in zip(act, actuators, strict=True)},
        "torque_limit": {n: _g(model.actuator_forcerange[a]) for n, a in zip(act, actuators, strict=True)},
        "mass": {_name(model, "body", b): _g(model.body_mass[b])[0] for b in bodies},
    }


def _in_subtree(model, body: int, root: int) -> bool:
    while body > 0 and body != root:
        body = model.body_parentid[body]
    return body == root


def differences(theirs, ours, where: str = "") -> list[str]:
    """Every difference between two JSON values, one line each, named by its path
    (`robot.kp.FL_hip: the policy's 40.0, the model's 25.0`). Numbers agree to 1e-6 relative."""
    if isinstance(theirs, dict) and isinstance(ours, dict):
        return [
            line
            for key in sorted(set(theirs) | set(ours))
            for line in differences(theirs.get(key), ours.get(key), f"{where}.{key}".strip("."))
        ]
    if isinstance(theirs, list) and isinstance(ours, list) and len(theirs) == len(ours):
        if all(isinstance(x, dict) and "name" in x for x in theirs + ours):  # named entries: by name
            names = ([x["name"] for x in theirs], [x["name"] for x in ours])
            if names[0] != names[1]:
                return [f"{where}: the policy's {names[0]}, {{other}}'s {names[1]}"]
            return [
                line
                for x, y in zip(theirs, ours, strict=True)
                for line in differences(x, y, f"{where}.{x['name']}")
            ]
        return [
            line
            for i, (x, y) in enumerate(zip(theirs, ours, strict=True))
            for line in differences(x, y, f"{where}[{i}]")
        ]
    if isinstance(theirs, float | int) and isinstance(ours, float | int) and not isinstance(theirs, bool):
        if np.isclose(theirs, ours, rtol=1e-6, atol=1e-9):
            return []
    elif theirs == ours:
        return []
    if (
        isinstance(theirs, list)
        and isinstance(ours, list)
        and all(isinstance(x, dict) for x in theirs + ours)
    ):
        theirs, ours = [x.get("name") for x in theirs], [x.get("name") for x in ours]
    return [f"{where}: the policy's {theirs}, {{other}}'s {ours}"]


def mismatches(contract: dict, model: mujoco.MjModel, obs_dim: int | None = None) -> list[str]:
    """The differences between a contract and a robot's model, each naming what differs."""
    robot = contract["robot"]
    facts = robot_facts(model, robot["root"])
    if facts["root"] is None:  # another robot: the rest would differ line by line
        return [f"robot.root: the model has no body {robot['root']!r} (the policy's root body)"]
    found = differences(robot, facts, "robot")
    period, timestep = contract["control"]["period"], float(model.opt.timestep)
    if substeps(period, timestep) is None:
        found.append(
            f"control.period: the policy's {period} s is not a whole number of {{other}}'s {timestep:.6g} s timesteps"
        )
    width = sum(block["width"] for block in contract["observation"])
    if obs_dim is not None and width != obs_dim:
        found.append(
            f"observation: the blocks {[b['name'] for b in contract['observation']]} give {width} columns, the policy takes {obs_dim}"
        )
    for block in contract["observation"]:
        if block["quantity"] not in QUANTITIES or block.get("history", 1) != 1:
            found.append(
                f"observation.{block['name']}: {block['quantity']} (history {block.get('history', 1)}) is not one this runner computes"
            )
    return [line.replace("{other}", "the model") for line in found]


def substeps(period: float, timestep: float) -> int | None:
    """How many timesteps make one control period, or None where the period is no whole number of them."""
    n = round(period / timestep)
    return n if n >= 1 and np.isclose(n * timestep, period, rtol=1e-6) else None


class Observer:
    """The contract's observation from an MjData, with the ids resolved once by name."""

    def __init__(self, contract: dict, model: mujoco.MjModel):
        self.contract, self.model = contract, model
        root = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, contract["robot"]["root"])
        free = model.body_jntadr[root]
        self.root_q, self.root_v = model.jnt_qposadr[free], model.jnt_dofadr[free]
        joints = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in contract["robot"]["joints"]]
        self.q_idx, self.v_idx = model.jnt_qposadr[joints], model.jnt_dofadr[joints]
        self.default = np.array([contract["default_pose"][n] for n in contract["robot"]["joints"]])

    def __call__(self, data: mujoco.MjData, command: np.ndarray, last_action: np.ndarray) -> np.ndarray:
        p, v = self.root_q, self.root_v
        rot = np.empty(9)
        mujoco.mju_quat2Mat(rot, data.qpos[p + 3 : p + 7])  # base to world, row-major
        rot = rot.reshape(3, 3)
        values = {
            "root_linear_velocity": data.qvel[v : v + 3] @ rot,  # world -> base frame
            "root_angular_velocity": data.qvel[v + 3 : v + 6],  # already in the base frame
            "gravity": -rot[2],  # the world's -z in the base frame
            "command": command,
            "joint_position": data.qpos[self.q_idx],
            "joint_velocity": data.qvel[self.v_idx],
            "last_action": last_action,
        }
        blocks = []
        for block in self.contract["observation"]:
            if block["quantity"] == "height_scan":
                x = data.qpos[p + 2] - block["offset"] - self.ground(data, rot, np.asarray(block["points"]))
            else:
                x = values[block["quantity"]]
            if block.get("offset") == "default_pose":
                x = x - self.default
            x = x * np.asarray(block["scale"])
            blocks.append(np.clip(x, -block["clip"], block["clip"]) if "clip" in block else x)
        return np.concatenate(blocks).astype(np.float32)[None]

    def ground(self, data: mujoco.MjData, rot: np.ndarray, points: np.ndarray) -> np.ndarray:
        """The terrain's height (its heightfield geoms') under points (P, 2) in the base's yaw frame."""
        yaw = np.arctan2(rot[1, 0], rot[0, 0])  # of the base's x axis
        c, s = np.cos(yaw), np.sin(yaw)
        x0, y0, top = data.qpos[self.root_q], data.qpos[self.root_q + 1], data.qpos[self.root_q + 2] + 10.0
        fields = np.flatnonzero(self.model.geom_type == mujoco.mjtGeom.mjGEOM_HFIELD)
        heights, down = np.zeros(len(points)), np.array([0.0, 0.0, -1.0])
        for i, (along, across) in enumerate(points):
            start = np.array([x0 + c * along - s * across, y0 + s * along + c * across, top])
            hits = [d for g in fields if (d := mujoco.mj_rayHfield(self.model, data, g, start, down)) >= 0]
            heights[i] = top - min(hits) if hits else 0.0  # a miss (no terrain there): height 0
        return heights


class Runner:
    """A policy on a model: `act(data, command)` returns the action, `step` applies it and steps."""

    def __init__(self, policy_path: str, model: mujoco.MjModel):
        import onnxruntime

        self.contract, self.model = read_contract(policy_path), model
        self.session = onnxruntime.InferenceSession(policy_path, providers=["CPUExecutionProvider"])
        obs_dim = self.session.get_inputs()[0].shape[1]
        problems = mismatches(self.contract, model, obs_dim)
        if problems:
            raise DeployError(f"{policy_path} does not fit this model:\n  " + "\n  ".join(problems))
        robot, action = self.contract["robot"], self.contract["action"]
        self.actuators = [
            mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, n) for n in robot["actuators"]
        ]
        self.scale, self.offset = np.asarray(action["scale"]), np.asarray(action["offset"])
        self.observe = Observer(self.contract, model)
        self.substeps = substeps(self.contract["control"]["period"], model.opt.timestep)
        self.last_action = np.zeros(len(self.actuators))

    def act(self, data: mujoco.MjData, command) -> np.ndarray:
        obs = self.observe(data, np.asarray(command, dtype=np.float64), self.last_action)
        return self.session.run(None, {self.session.get_inputs()[0].name: obs})[0][0]

    def step(self, data: mujoco.MjData, command) -> np.ndarray:
        """One control period: observe, act, set the PD targets, step the model through the period."""
        action = self.act(data, command)
        data.ctrl[self.actuators] = self.offset + self.scale * action.astype(np.float64)
        mujoco.mj_step(self.model, data, nstep=self.substeps)
        self.last_action = action.astype(np.float64)
        return action


def main(argv: list[str] | None = None) -> int:
    """The command line; a DeployError is one `error:` line and exit status 2."""
    try:
        return _main(argv)
    except DeployError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="python -m unienv.deploy", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name in ("run", "check"):
        p = sub.add_parser(name)
        p.add_argument("policy", help="an ONNX file written by `python -m unienv export`")
        p.add_argument(
            "--model",
            required=True,
            help="an MJCF path, or a Menagerie name (unitree_go1, unitree_g1/scene_mjx.xml)",
        )
    sub.choices["run"].add_argument("--steps", type=int, default=1000, help="control periods to run")
    sub.choices["run"].add_argument(
        "--command", type=float, nargs="*", default=None, help="the commands, in order"
    )
    args = parser.parse_args(argv)
    model = load_model(args.model)
    if args.cmd == "check":
        contract = read_contract(args.policy)
        problems = mismatches(contract, model)
        print("\n".join(problems) or f"{args.policy} fits {args.model}")
        return 1 if problems else 0
    runner = Runner(args.policy, model)
    names = [c["name"] for c in runner.contract["commands"]]
    command = args.command if args.command is not None else [0.0] * len(names)
    if len(command) != len(names):
        raise DeployError(f"--command: expected {len(names)} values ({', '.join(names)}), got {len(command)}")
    data = mujoco.MjData(model)
    key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, runner.contract["default_pose_keyframe"])
    if key >= 0:
        mujoco.mj_resetDataKeyframe(model, data, key)
    for _ in range(args.steps):
        runner.step(data, command)
    p = runner.observe.root_q
    print(f"ran {args.steps} steps ({data.time:.2f} s); root at {np.round(data.qpos[p : p + 3], 3).tolist()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
