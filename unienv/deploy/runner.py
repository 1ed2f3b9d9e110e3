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
the base's yaw frame, by a vertical ray onto the scene's heightfields; clipped to +-clip),
gait_clock (sin and cos of 2 pi x frequency x data.time: the phase of a gait's cycle; the env
starts each episode at a random phase, so a driver's clock may start anywhere).

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

A policy file is untrusted (docs/security.md): `check_onnx` reads it from its bytes, with a
protobuf reader of the fields `unienv export` writes, and refuses any other operator, weights
outside the file, and any node that would allocate on load or run what the file does not hold;
`validate` checks every contract field the runner reads. Both run before onnxruntime sees the
file (unienv's own loaders call the same two functions), and the session is built from the bytes
checked. A refusal is one DeployError line, printed by the command line as `error: ...`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import reprlib
import stat
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
    "gait_clock",
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
    Menagerie name and file (<name>/<file>.xml, under the same folder); MuJoCo's refusal of a
    file (XML it cannot parse, a missing mesh) is one DeployError line."""
    path = spec
    if not os.path.isfile(path):
        relative = spec if spec.endswith(".xml") else os.path.join(spec, "scene.xml")
        path = os.path.join(os.environ.get("UNIENV_MENAGERIE_DIR", ""), relative)
    if not os.path.isfile(path):
        raise DeployError(
            f"--model: no MJCF file {spec!r}, nor {path!r} (set UNIENV_MENAGERIE_DIR to a Menagerie checkout)"
        )
    try:
        return mujoco.MjModel.from_xml_path(path)
    except ValueError as e:
        raise DeployError(
            f"--model: {path} is not a model MuJoCo loads: {' '.join(str(e).split())}"
        ) from None


OPERATORS = frozenset(
    ("Sub", "Div", "Gemm", "Mul", "Sigmoid", "Erf", "Add", "Greater", "Where", "Softplus")
    + ("Elu", "Relu", "Tanh", "Identity", "Max", "Min")
)
"""The operators `python -m unienv export` writes; a graph with any other is refused."""
ATTRIBUTES = {"Gemm": {"alpha", "beta", "transA", "transB"}, "Elu": {"alpha"}}
MAX_POLICY_BYTES = 1 << 31
"""The largest policy file read (2 GiB: MAX_WEIGHTS float32 weights, and its metadata)."""
MAX_WEIGHTS = 1 << 28
"""The most float32 weights (1 GiB) a policy may hold."""
MAX_WIDTH = 1 << 16
"""The most columns a value of the graph may have per observation (per row of the batch)."""
MAX_FIELDS = 1 << 16
"""The most protobuf numbers (keys, sizes, values) read of a policy file (an exported MLP: a
few hundred)."""
MAX_METADATA_BYTES = 1 << 20
"""The largest metadata JSON (1 MiB; a G1's contract with its height scan is about 20 KiB)."""

# the parts of ONNX's protobuf schema (onnx.proto) that an exported policy uses: field number ->
# (name, wire types, repeated); any other field is refused. Wire types: 0 varint, 2 bytes, 5 fixed32.
_L, _V, _F = (2,), (0,), (5,)
MODEL = ("model", {1: ("ir_version", _V, 0), 2: ("producer_name", _L, 0), 3: ("producer_version", _L, 0),
         4: ("domain", _L, 0), 5: ("model_version", _V, 0), 6: ("doc_string", _L, 0),
         7: ("graph", _L, 0), 8: ("opset_import", _L, 1), 14: ("metadata_props", _L, 1)})  # fmt: skip
OPSET = ("opset", {1: ("domain", _L, 0), 2: ("version", _V, 0)})
ENTRY = ("metadata entry", {1: ("key", _L, 0), 2: ("value", _L, 0)})
GRAPH = ("graph", {1: ("node", _L, 1), 2: ("name", _L, 0), 5: ("initializer", _L, 1), 10: ("doc_string", _L, 0),
         11: ("input", _L, 1), 12: ("output", _L, 1), 13: ("value_info", _L, 1)})  # fmt: skip
NODE = ("node", {1: ("input", _L, 1), 2: ("output", _L, 1), 3: ("name", _L, 0), 4: ("op_type", _L, 0),
        5: ("attribute", _L, 1), 6: ("doc_string", _L, 0), 7: ("domain", _L, 0)})  # fmt: skip
ATTRIBUTE = ("attribute", {1: ("name", _L, 0), 2: ("f", _F, 0), 3: ("i", _V, 0), 13: ("doc_string", _L, 0),
             20: ("type", _V, 0)})  # fmt: skip
TENSOR = ("weight", {1: ("dims", _L + _V, 1), 2: ("data_type", _V, 0), 4: ("float_data", _L + _F, 1),
          8: ("name", _L, 0), 9: ("raw_data", _L, 0), 12: ("doc_string", _L, 0),
          13: ("external_data", _L, 1), 14: ("data_location", _V, 0)})  # fmt: skip
VALUE_INFO = ("graph input or output", {1: ("name", _L, 0), 2: ("type", _L, 0), 3: ("doc_string", _L, 0)})
TYPE = ("type", {1: ("tensor_type", _L, 0), 6: ("denotation", _L, 0)})
TENSOR_TYPE = ("tensor type", {1: ("elem_type", _V, 0), 2: ("shape", _L, 0)})
SHAPE = ("shape", {1: ("dim", _L, 1)})
DIM = ("dimension", {1: ("dim_value", _V, 0), 2: ("dim_param", _L, 0), 3: ("denotation", _L, 0)})
FLOAT, ATTRIBUTE_FLOAT, ATTRIBUTE_INT = 1, 1, 2  # TensorProto.FLOAT; AttributeProto.FLOAT, .INT


class _Protobuf:
    """Reads protobuf messages (the wire format) field by field, within MAX_FIELDS in all."""

    def __init__(self, where: str):
        self.where, self.budget = where, MAX_FIELDS

    def refuse(self, what: str) -> DeployError:
        return DeployError(f"{self.where}: {what}")

    def _varint(self, data: memoryview, i: int) -> tuple[int, int]:
        """The varint at data[i] and the index after it; each one read spends the budget."""
        self.budget -= 1
        if self.budget < 0:
            raise self.refuse(
                f"expected at most {MAX_FIELDS} protobuf numbers (keys, sizes, values), got more"
            )
        value = shift = 0
        while i < len(data) and shift < 64:
            byte, i, shift = data[i], i + 1, shift + 7
            value |= (byte & 0x7F) << (shift - 7)
            if byte < 0x80:
                return value, i
        raise self.refuse("not a valid ONNX file (a malformed or truncated number)")

    def message(self, data: memoryview, schema: tuple[str, dict]) -> dict[str, list]:
        """{name: [values]} of data's fields: ints, or memoryviews of bytes fields; a field the
        schema does not name, of another wire type, or given twice where it is single is refused."""
        what, schema = schema
        found: dict[str, list] = {}
        i = 0
        while i < len(data):
            key, i = self._varint(data, i)
            number, wire = key >> 3, key & 7
            if wire == 0:
                value, i = self._varint(data, i)
            elif wire == 5:
                value, i = int.from_bytes(data[i : i + 4], "little"), i + 4
            elif wire == 2:
                size, i = self._varint(data, i)
                value, i = data[i : i + size], i + size
            else:
                raise self.refuse(f"not a valid ONNX file (protobuf wire type {wire})")
            if i > len(data):
                raise self.refuse("not a valid ONNX file (truncated)")
            if number not in schema:
                raise self.refuse(f"protobuf field {number} of a {what} is not one unienv export writes")
            name, wires, repeated = schema[number]
            if wire not in wires or (name in found and not repeated):
                raise self.refuse(f"field {name!r} of a {what} is malformed or given twice")
            found.setdefault(name, []).append(value)
        return found

    def one(self, fields: dict, name: str, schema: tuple | None = None, default=None):
        """The single field `name` (parsed as `schema` where given), or default where absent."""
        value = fields.get(name, [default])[0]
        if value is None or schema is None:
            return value
        return self.message(value, schema)

    def text(self, value, what: str) -> str:
        try:
            return bytes(value).decode() if value is not None else ""
        except UnicodeDecodeError:
            raise self.refuse(f"{what}: expected UTF-8 text") from None

    def ints(self, values: list) -> list[int]:
        """A repeated int64 field's values, packed or not."""
        out = []
        for v in values:
            if isinstance(v, int):
                out.append(v)
            else:
                i = 0
                while i < len(v):
                    x, i = self._varint(v, i)
                    out.append(x)
        return [x - (1 << 64) if x >= 1 << 63 else x for x in out]


def check_onnx(data: bytes, where: str) -> tuple[dict | None, int, int]:
    """(its unienv metadata, or None; obs_dim; act_dim) of an ONNX policy, refused (a DeployError
    naming `where` and what is wrong) unless it is a graph `unienv export` could have written:
    operators of OPERATORS only, in the default domain, with number attributes only (no
    subgraph, no tensor); one float32 input `obs` (batch, obs_dim) and one output `actions`
    (batch, act_dim); float32 weights held in the file, MAX_WEIGHTS at most; every node
    computing from the observation (a node of constants alone is what onnxruntime would compute
    when it loads the file), every value (batch, at most MAX_WIDTH) or a weight's shape. Read
    from the bytes alone: nothing of it is run, and no session is built before it passes."""
    pb = _Protobuf(where)
    model = pb.message(memoryview(data), MODEL)
    for opset in model.get("opset_import", []):
        domain = pb.text(pb.one(pb.message(opset, OPSET), "domain"), "opset_import")
        if domain not in ("", "ai.onnx"):
            raise pb.refuse(f"opset domain {_shown(domain)} is not one unienv export writes")
    graph = pb.one(model, "graph", GRAPH)
    if graph is None:
        raise pb.refuse("not a valid ONNX file (it has no graph)")
    nodes = [pb.message(n, NODE) for n in graph.get("node", [])]
    for node in nodes:
        op = pb.text(pb.one(node, "op_type"), "op_type")
        domain = pb.text(pb.one(node, "domain"), "domain")
        if op not in OPERATORS or domain not in ("", "ai.onnx"):
            raise pb.refuse(
                f"operator {_shown((domain + '.' if domain else '') + op)} is not one unienv export "
                f"writes ({sorted(OPERATORS)})"
            )
        for attribute in node.get("attribute", []):
            fields = pb.message(attribute, ATTRIBUTE)
            name = pb.text(pb.one(fields, "name"), "attribute")
            if name not in ATTRIBUTES.get(op, ()) or pb.one(fields, "type") not in (
                ATTRIBUTE_FLOAT,
                ATTRIBUTE_INT,
            ):
                raise pb.refuse(f"node {op}: attribute {_shown(name)} is not one unienv export writes")
    obs_dim, act_dim = (
        _end(pb, graph, part, name) for part, name in (("input", "obs"), ("output", "actions"))
    )
    shapes: dict[str, tuple] = {"obs": (None, obs_dim)}  # None: the batch
    weights = 0
    for tensor in graph.get("initializer", []):
        name, shape, count = _weight(pb, pb.message(tensor, TENSOR))
        weights += count
        if weights > MAX_WEIGHTS or name in shapes:
            raise pb.refuse(f"weight {_shown(name)}: more than {MAX_WEIGHTS} weights, or a name given twice")
        shapes[name] = shape
    for node in nodes:
        _shape(pb, node, shapes)
    if shapes.get("actions") != (None, act_dim):
        raise pb.refuse(
            f"expected the graph to compute 'actions' (batch, {act_dim}), got {shapes.get('actions')}"
        )
    return _metadata(pb, model), obs_dim, act_dim


def _end(pb: _Protobuf, graph: dict, part: str, name: str) -> int:
    """The width of the graph's one input `obs` or output `actions`: float32 (batch, width)."""
    ends = graph.get(part, [])
    info = pb.message(ends[0], VALUE_INFO) if len(ends) == 1 else {}
    tensor = pb.one(pb.one(info, "type", TYPE) or {}, "tensor_type", TENSOR_TYPE) or {}
    dims = [pb.message(d, DIM) for d in (pb.one(tensor, "shape", SHAPE) or {}).get("dim", [])]
    if (
        pb.text(pb.one(info, "name"), part) != name
        or pb.one(tensor, "elem_type") != FLOAT
        or len(dims) != 2
        or "dim_value" in dims[0]
        or not 1 <= pb.one(dims[1], "dim_value", default=0) <= MAX_WIDTH
    ):
        raise pb.refuse(
            f"expected one {part}, float32 {name!r} (batch, 1 to {MAX_WIDTH} columns), as unienv export writes"
        )
    return pb.one(dims[1], "dim_value")


def _weight(pb: _Protobuf, tensor: dict) -> tuple[str, tuple, int]:
    """(name, shape, count) of a weight: float32, held in the file, its data what its dims say."""
    name = pb.text(pb.one(tensor, "name"), "weight")
    dims = pb.ints(tensor.get("dims", []))
    if (
        pb.one(tensor, "data_type") != FLOAT
        or "external_data" in tensor
        or pb.one(tensor, "data_location", default=0) != 0
        or len(dims) > 2
        or any(not 0 <= d <= MAX_WEIGHTS for d in dims)
    ):
        raise pb.refuse(f"weight {_shown(name)}: expected float32 data in the file, at most 2 dimensions")
    count = int(np.prod(dims, dtype=np.float64))
    raw, floats = pb.one(tensor, "raw_data"), tensor.get("float_data", [])
    held = len(raw) // 4 if raw is not None else sum(1 if isinstance(f, int) else len(f) // 4 for f in floats)
    if count > MAX_WEIGHTS or held != count or (raw is not None and (floats or len(raw) % 4)):
        raise pb.refuse(f"weight {_shown(name)} declares {dims}, its data differs")
    return name, tuple(dims), count


def _shape(pb: _Protobuf, node: dict, shapes: dict) -> None:
    """The shape of a node's one output, from its inputs' (numpy broadcasting; Gemm's product),
    into `shapes`; refused where it computes from constants alone or is not (batch, width)."""
    op = pb.text(pb.one(node, "op_type"), "op_type")
    inputs = [pb.text(v, "input") for v in node.get("input", [])]
    outputs = [pb.text(v, "output") for v in node.get("output", [])]
    if len(outputs) != 1 or outputs[0] in shapes or not inputs or any(i not in shapes for i in inputs):
        raise pb.refuse(
            f"node {op}: expected one new output from values computed before it, got {_shown(node)}"
        )
    given = [shapes[i] for i in inputs]
    if all(None not in s for s in given):
        raise pb.refuse(
            f"node {op}: computes from weights alone (onnxruntime would compute it when it loads)"
        )
    if op == "Gemm":
        attributes = {pb.text(pb.one(a, "name"), "attribute"): pb.one(a, "i") for a in
                      (pb.message(a, ATTRIBUTE) for a in node.get("attribute", []))}  # fmt: skip
        a, b = given[0], given[1] if len(given) > 1 else ()
        if len(given) not in (2, 3) or len(a) != 2 or len(b) != 2:
            raise pb.refuse(f"node Gemm: expected two 2-D inputs and a bias, got {given}")
        a, b = a[::-1] if attributes.get("transA") else a, b[::-1] if attributes.get("transB") else b
        if a[1] != b[0] or a[1] is None:
            raise pb.refuse(f"node Gemm: {a} x {b} do not multiply")
        out = _broadcast(pb, op, [(a[0], b[1]), *given[2:]])
    else:
        out = _broadcast(pb, op, given)
    if len(out) != 2 or out[0] is not None or not 1 <= out[1] <= MAX_WIDTH:
        raise pb.refuse(f"node {op}: gives {out}, expected (batch, 1 to {MAX_WIDTH} columns)")
    shapes[outputs[0]] = out


def _broadcast(pb: _Protobuf, op: str, shapes: list[tuple]) -> tuple:
    """numpy's broadcast of shapes whose None is the batch (which broadcasts with 1 only)."""
    rank = max(len(s) for s in shapes)
    out = []
    for axis in range(rank):
        sizes = {s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0} - {1}
        if len(sizes) > 1:
            raise pb.refuse(f"node {op}: shapes {shapes} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _metadata(pb: _Protobuf, model: dict) -> dict | None:
    """The JSON under metadata_props[META_KEY] (at most MAX_METADATA_BYTES), or None where absent."""
    found = None
    for entry in model.get("metadata_props", []):
        fields = pb.message(entry, ENTRY)
        if pb.text(pb.one(fields, "key"), "metadata key") == META_KEY:
            if found is not None:
                raise pb.refuse(f"metadata {META_KEY!r} given twice")
            found = pb.one(fields, "value", default=b"")
    if found is None:
        return None
    if len(found) > MAX_METADATA_BYTES:
        raise pb.refuse(
            f"metadata {META_KEY!r}: expected at most {MAX_METADATA_BYTES} bytes, got {len(found)}"
        )
    try:
        meta = json.loads(pb.text(found, "metadata"))
    except (ValueError, RecursionError) as e:
        raise pb.refuse(f"its {META_KEY!r} metadata is not JSON ({type(e).__name__})") from None
    if not isinstance(meta, dict):
        raise pb.refuse(f"its {META_KEY!r} metadata: expected a JSON object, got {type(meta).__name__}")
    return meta


def _shown(value) -> str:
    """repr(value) cut short (reprlib): a refusal is one line, whatever a file holds."""
    return _SHORT.repr(value)


def _cut(value) -> str:
    """str(value), cut to 200 characters: a difference names what a file holds, in one line."""
    text = str(value)
    return text if len(text) <= 200 else f"{text[:180]}... ({len(text)} characters)"


_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxdict, _SHORT.maxlist, _SHORT.maxtuple = 3, 6, 6, 6
_SHORT.maxstring = _SHORT.maxother = _SHORT.maxlong = 60


def read_policy(path: str) -> bytes:
    """The bytes of the policy file at path: a regular file (a FIFO or a device is refused by its
    kind, unopened) of at most MAX_POLICY_BYTES."""
    try:
        info = os.stat(path)
    except OSError as e:
        raise DeployError(f"policy: cannot read {path!r}: {e.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise DeployError(f"policy: {path} is not a regular file (a folder, a FIFO or a device)")
    if info.st_size > MAX_POLICY_BYTES:
        raise DeployError(f"policy: {path} has {info.st_size} bytes, more than the {MAX_POLICY_BYTES} read")
    with open(path, "rb") as f:
        return f.read()


def read_contract(path: str) -> dict:
    """The contract in an ONNX policy file written by `python -m unienv export`, checked
    (`check_onnx`, `validate`) from its bytes, without building a session."""
    meta, _, _ = check_onnx(read_policy(path), path)
    return validate(meta.get("contract") if meta is not None else None, path)


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
MAX_NAME = 256  # characters of a name in a contract (a joint's, a block's, a command's)
MAX_DEPTH = 6  # levels of nesting in a contract (observation > block > points > point > number: 5)
MAX_DECIMATION = 1 << 20  # physics steps per control period


def validate(contract, path: str) -> dict:
    """The contract, refused (a DeployError naming the field, what was expected and what it
    holds) unless it is one of this schema with every field the runner and the check read, of
    its type, its length and its range: names unique, every joint in the default pose, action
    scale and offset one finite number per actuator, timing positive and consistent, each
    observation block's width that of its quantity, its scale, offset, clip and points finite."""
    if not isinstance(contract, dict) or contract.get("schema") != SCHEMA:
        raise DeployError(f"{path}: no deployment contract ({SCHEMA}) in its metadata")

    def expect(key: str, value, expected: str) -> DeployError:
        return DeployError(f"{path}: contract field {key!r}: expected {expected}, got {_shown(value)}")

    if _depth(contract) > MAX_DEPTH:
        raise DeployError(f"{path}: contract: expected at most {MAX_DEPTH} levels of nesting, got more")
    for key, kind in FIELDS.items():
        value = contract
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if not isinstance(value, kind) or isinstance(value, bool):
            raise expect(key, value, f"a {kind.__name__}")
    robot, action, control = contract["robot"], contract["action"], contract["control"]
    for key, name in (
        ("robot.root", robot["root"]),
        ("default_pose_keyframe", contract["default_pose_keyframe"]),
    ):
        if not _names([name]):
            raise expect(key, name, f"a name of 1 to {MAX_NAME} characters")
    for key in ("actuators", "joints"):
        if not _names(robot[key]) or len(robot[key]) != len(robot["actuators"]):
            raise expect(
                f"robot.{key}", robot[key], f"{len(robot['actuators'])} distinct names, one per actuator"
            )
    for joint in robot["joints"]:
        if not _finite(contract["default_pose"].get(joint)):
            raise expect(
                f"default_pose.{joint}", contract["default_pose"].get(joint), "a finite number (rad)"
            )
    for key in ("scale", "offset"):
        if len(action[key]) != len(robot["actuators"]) or not all(map(_finite, action[key])):
            raise expect(
                f"action.{key}", action[key], f"{len(robot['actuators'])} finite numbers, one per actuator"
            )
    for key in ("sim_dt", "period"):
        if not _finite(control[key]) or control[key] <= 0:
            raise expect(f"control.{key}", control[key], "a finite number of seconds > 0")
    if not 1 <= control["decimation"] <= MAX_DECIMATION:
        raise expect("control.decimation", control["decimation"], f"a whole number in [1, {MAX_DECIMATION}]")
    if not np.isclose(control["sim_dt"] * control["decimation"], control["period"], rtol=1e-6):
        product = control["sim_dt"] * control["decimation"]
        raise DeployError(
            f"{path}: contract field 'control.period': expected sim_dt x decimation = {product:.6g} s, "
            f"got {control['period']:.6g} s"
        )
    commands = contract["commands"]
    for i, c in enumerate(commands):
        if not (isinstance(c, dict) and _names([c.get("name")]) and _finite(c.get("low")) and _finite(c.get("high"))
                and c["low"] <= c["high"]):  # fmt: skip
            raise expect(f"commands[{i}]", c, "a name, and finite numbers low <= high")
    if not _names([c["name"] for c in commands] or ["-"]):
        raise expect("commands", commands, "distinct names")
    widths = {"root_linear_velocity": 3, "root_angular_velocity": 3, "gravity": 3, "command": len(commands)}
    widths |= dict.fromkeys(("joint_position", "joint_velocity", "last_action"), len(robot["joints"]))
    widths["gait_clock"] = 2
    for i, block in enumerate(contract["observation"]):
        _block(block, f"observation[{i}]", widths, expect)
    if not _names([b["name"] for b in contract["observation"]] or ["-"]):
        raise expect("observation", [b["name"] for b in contract["observation"]], "distinct block names")
    return contract


def _block(block, key: str, widths: dict, expect) -> None:
    """One observation block: a name, a width in [1, MAX_WIDTH] (its quantity's where the runner
    computes it), a quantity, history >= 1, a scale (a number or one per column), an offset
    (default_pose on joint_position, a number on height_scan), a clip > 0, a height scan's points,
    a gait clock's frequency > 0."""
    if (
        not isinstance(block, dict)
        or not _names([block.get("name")])
        or not isinstance(block.get("quantity"), str)
    ):
        raise expect(key, block, "a block with a name and a quantity")
    key, quantity, width = f"observation.{block['name']}", block["quantity"], block.get("width")
    if "points" in block or quantity == "height_scan":
        points = block.get("points")
        if not isinstance(points, list) or not all(
            isinstance(p, list) and len(p) == 2 and all(map(_finite, p)) for p in points
        ):
            raise expect(f"{key}.points", points, "a list of [along, across] pairs of finite numbers (m)")
        widths = {**widths, "height_scan": len(points)}
    expected = widths.get(quantity)
    if type(width) is not int or not 1 <= width <= MAX_WIDTH or width != (expected or width):
        raise expect(
            f"{key}.width", width, f"{expected or f'a whole number in [1, {MAX_WIDTH}]'} (its {quantity}'s)"
        )
    history = block.get("history", 1)
    if type(history) is not int or not 1 <= history <= MAX_WIDTH:
        raise expect(f"{key}.history", history, "a whole number >= 1")
    scale = block.get("scale", 1.0)
    if not (_finite(scale) or (isinstance(scale, list) and len(scale) == width and all(map(_finite, scale)))):
        raise expect(f"{key}.scale", scale, f"a finite number or {width} of them")
    offset = block.get("offset")
    if not (offset is None or (offset == "default_pose" and quantity == "joint_position")
            or (_finite(offset) and quantity == "height_scan")):  # fmt: skip
        raise expect(
            f"{key}.offset", offset, "none, 'default_pose' on joint_position, or a number (m) on height_scan"
        )
    if "clip" in block and not (_finite(block["clip"]) and block["clip"] > 0):
        raise expect(f"{key}.clip", block["clip"], "a finite number > 0")
    frequency = block.get("frequency")
    if (quantity == "gait_clock") != ("frequency" in block) or not (
        frequency is None or _finite(frequency) and frequency > 0
    ):
        raise expect(f"{key}.frequency", frequency, "a finite number > 0 (Hz) on gait_clock, and only there")
    if quantity == "height_scan" and not _finite(offset):
        raise expect(f"{key}.offset", offset, "a number (m): the base's height over the ground it scans from")


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _names(names) -> bool:
    """Whether names is a non-empty list of distinct, non-empty strings of at most MAX_NAME characters."""
    return (
        isinstance(names, list)
        and len(names) > 0
        and all(isinstance(n, str) and 0 < len(n) <= MAX_NAME for n in names)
        and len(set(names)) == len(names)
    )


def _depth(value, level: int = 0) -> int:
    """How deep value nests (0: a number or a string), looking no deeper than MAX_DEPTH + 1."""
    if level > MAX_DEPTH or not isinstance(value, (dict, list)):
        return level
    items = value.values() if isinstance(value, dict) else value
    return max((_depth(v, level + 1) for v in items), default=level + 1)


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
                return [f"{where}: the policy's {_cut(names[0])}, {{other}}'s {_cut(names[1])}"]
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
    return [f"{where}: the policy's {_cut(theirs)}, {{other}}'s {_cut(ours)}"]


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
                f"observation.{block['name']}: {_cut(block['quantity'])} (history {block.get('history', 1)}) is not one this runner computes"
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
            elif block["quantity"] == "gait_clock":
                angle = 2 * math.pi * block["frequency"] * data.time
                x = np.array([math.sin(angle), math.cos(angle)])
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
    """A policy on a model: `act(data, command)` returns the action, `step` applies it and steps.

    The policy file is read once and checked whole (`check_onnx`, `validate`, `mismatches`)
    before onnxruntime sees it; a command must be finite and within the contract's ranges, and
    an action that is not finite stops the run (DeployError), never reaching the actuators."""

    def __init__(self, policy_path: str, model: mujoco.MjModel):
        import onnxruntime

        data = read_policy(policy_path)
        meta, obs_dim, act_dim = check_onnx(data, policy_path)
        self.contract, self.model = validate(meta.get("contract") if meta else None, policy_path), model
        robot, action = self.contract["robot"], self.contract["action"]
        problems = mismatches(self.contract, model, obs_dim)
        if act_dim != len(robot["actuators"]):
            problems.append(
                f"actions: the graph gives {act_dim}, the contract names {len(robot['actuators'])} actuators"
            )
        if problems:
            raise DeployError(f"{policy_path} does not fit this model: " + "; ".join(problems))
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1  # a small MLP: one thread is fastest beside the physics
        try:
            self.session = onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        except Exception as e:  # onnxruntime's refusal of a graph that passed the checks above
            raise DeployError(
                f"{policy_path}: onnxruntime refuses it: {' '.join(str(e).split())[:300]}"
            ) from None
        self.actuators = [
            mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, n) for n in robot["actuators"]
        ]
        self.scale, self.offset = np.asarray(action["scale"]), np.asarray(action["offset"])
        self.observe = Observer(self.contract, model)
        self.substeps = substeps(self.contract["control"]["period"], model.opt.timestep)
        self.last_action = np.zeros(len(self.actuators))
        self.path = policy_path

    def command(self, values) -> np.ndarray:
        """values as the policy's command vector: one finite number per command of the contract,
        each within its range (a DeployError naming it, else)."""
        commands = self.contract["commands"]
        try:
            x = np.asarray(values, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            x = np.full(len(commands) + 1, np.nan)
        if len(x) != len(commands):
            names = ", ".join(c["name"] for c in commands)
            raise DeployError(f"--command: expected {len(commands)} values ({names}), got {len(x)}")
        for c, v in zip(commands, x, strict=True):
            if not c["low"] <= v <= c["high"]:
                raise DeployError(
                    f"--command: {c['name']}: expected a value in [{c['low']:g}, {c['high']:g}] (the "
                    f"policy's training range), got {v:g}"
                )
        return x

    def act(self, data: mujoco.MjData, command) -> np.ndarray:
        obs = self.observe(data, self.command(command), self.last_action)
        return self.session.run(None, {self.session.get_inputs()[0].name: obs})[0][0]

    def step(self, data: mujoco.MjData, command) -> np.ndarray:
        """One control period: observe, act, set the PD targets, step the model through the period."""
        action = self.act(data, command)
        if not np.isfinite(action).all():
            raise DeployError(f"{self.path}: the policy's action is not finite at time {data.time:.4g} s")
        data.ctrl[self.actuators] = self.offset + self.scale * action.astype(np.float64)
        mujoco.mj_step(self.model, data, nstep=self.substeps)
        self.last_action = action.astype(np.float64)
        return action


def main(argv: list[str] | None = None) -> int:
    """The command line; a DeployError is one `error:` line and exit status 2."""
    try:
        return _main(argv)
    except DeployError as e:
        print(f"error: {' '.join(str(e).split())}", file=sys.stderr)
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
        meta, obs_dim, _ = check_onnx(read_policy(args.policy), args.policy)
        problems = mismatches(validate(meta.get("contract") if meta else None, args.policy), model, obs_dim)
        print("\n".join(problems) or f"{args.policy} fits {args.model}")
        return 1 if problems else 0
    if args.steps < 0:
        raise DeployError(f"--steps: expected a number of control periods >= 0, got {args.steps}")
    runner = Runner(args.policy, model)
    command = runner.command(
        args.command if args.command is not None else [0.0] * len(runner.contract["commands"])
    )
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
