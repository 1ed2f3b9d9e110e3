"""The standalone runner reads a policy file as unienv does (issue 57, rows 2, 4 and 8): a graph
that unienv's loaders refuse (operators beyond export's, weights out of the file, values that
would fill memory when onnxruntime loads or runs it, protobuf that is not ONNX's) is refused by
`python -m unienv.deploy run`, by a copy of runner.py with unienv blocked, by deploy check and by
play's loader, each in one line, in a process under a memory limit; a model MuJoCo cannot load (a
misspelled robot, malformed XML, an include that is missing or a FIFO, a mesh that is a FIFO) is
one `error:` line, never a traceback nor a hang."""

import json
import os
import shutil
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import helper, numpy_helper  # noqa: E402

from tests.deploy.test_runner import BLOCKER  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "hardening"))
import bounded  # noqa: E402

from unienv.deploy import runner  # noqa: E402
from unienv.tasks.velocity.robots.quadruped import QUADRUPED  # noqa: E402

DRIVER = os.path.join(bounded.ROOT, "tests", "hardening", "cli_driver.py")
SCENE = QUADRUPED.scene


@pytest.fixture(scope="module")
def genuine(quadruped_policy):
    return quadruped_policy


def hostile_graphs(folder, genuine: str) -> list[str]:
    """Copies of a genuine policy, each with one change to its graph that export never writes."""
    good = onnx.load(genuine)
    big = numpy_helper.from_array(np.array([1 << 28], np.int64), "shape")
    column = numpy_helper.from_array(np.ones((1 << 14, 1), np.float32), "column")
    row = numpy_helper.from_array(np.ones((1, 1 << 14), np.float32), "row")
    wide = numpy_helper.from_array(np.ones((1, 1 << 17), np.float32), "wide")
    square = numpy_helper.from_array(np.ones((512, 512), np.float32), "square")
    cases = {
        "constant_of_shape": ([helper.make_node("ConstantOfShape", ["shape"], ["z"])], [big]),
        "expand": ([helper.make_node("Expand", ["obs", "shape"], ["z"])], [big]),
        "tile": (
            [helper.make_node("Tile", ["obs", "reps"], ["z"])],
            [numpy_helper.from_array(np.array([1, 1 << 26], np.int64), "reps")],
        ),
        "broadcast_weights_1GiB": ([helper.make_node("Add", ["column", "row"], ["z"])], [column, row]),
        "weights_product": ([helper.make_node("Gemm", ["square", "square"], ["z"])], [square]),
        "obs_widened": (
            [
                helper.make_node("Gemm", ["obs", "to_one"], ["one"]),
                helper.make_node("Add", ["one", "wide"], ["z"]),
            ],
            [numpy_helper.from_array(np.ones((48, 1), np.float32), "to_one"), wide],
        ),
        "undefined_input": ([helper.make_node("Relu", ["nowhere"], ["z"])], []),
        "output_over_obs": ([helper.make_node("Relu", ["obs"], ["obs"])], []),
        "custom_domain": ([helper.make_node("Relu", ["obs"], ["z"], domain="com.microsoft")], []),
        "tensor_attribute": ([helper.make_node("Elu", ["obs"], ["z"], alpha=1.0, extra=big)], []),
        "int_weight": ([], [big]),
        "weight_3d": ([], [numpy_helper.from_array(np.ones((2, 2, 2), np.float32), "cube")]),
        "many_inputs": ([helper.make_node("Max", ["obs"] * 70000, ["z"])], []),
    }
    paths = []
    for name, (nodes, weights) in cases.items():
        model = onnx.ModelProto()
        model.CopyFrom(good)
        model.graph.node.extend(nodes)
        model.graph.initializer.extend(weights)
        onnx.save(model, str(folder / f"{name}.onnx"))
        paths.append(str(folder / f"{name}.onnx"))
    extra = {
        "function": lambda m: m.functions.add().CopyFrom(helper.make_function("evil", "f", [], [], [], [])),
        "opset_domain": lambda m: m.opset_import.add().CopyFrom(helper.make_opsetid("com.evil", 1)),
        "fixed_batch": lambda m: setattr(m.graph.input[0].type.tensor_type.shape.dim[0], "dim_value", 1),
        "metadata_2MB": lambda m: m.metadata_props.add(key="unienv", value="{" + " " * (2 << 20) + "}"),
        "external_data": lambda m: m.graph.initializer[0].external_data.add(
            key="location", value="/dev/zero"
        ),
    }
    for name, change in extra.items():
        model = onnx.ModelProto()
        model.CopyFrom(good)
        change(model)
        onnx.save(model, str(folder / f"{name}.onnx"))
        paths.append(str(folder / f"{name}.onnx"))
    with open(genuine, "rb") as f:
        data = f.read()
    for name, raw in {
        "truncated": data[: len(data) // 2],
        "group_wire_type": b"\x0b" + data,
        "empty": b"",
    }.items():
        (folder / f"{name}.onnx").write_bytes(raw)
        paths.append(str(folder / f"{name}.onnx"))
    return paths


def test_the_runner_deploy_check_and_play_refuse_each_hostile_graph_before_a_session(genuine, tmp_path):
    paths = hostile_graphs(tmp_path, genuine)
    assert len(paths) >= 20
    code = (
        "import json, sys, mujoco\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "from bounded import replay\n"
        "from unienv.deploy import runner\n"
        "from unienv.errors import UnienvError\n"
        "from unienv.training.export import load_onnx_policy\n"
        "model = mujoco.MjModel.from_xml_path(sys.argv[3])\n"
        "cases = [(p, lambda p=p: runner.Runner(p, model)) for p in json.loads(sys.argv[1])]\n"
        "cases += [('play ' + p, lambda p=p: load_onnx_policy(p)) for p in json.loads(sys.argv[1])]\n"
        "replay(cases, (UnienvError, runner.DeployError))\n"
    )
    rows = bounded.rows(
        bounded.python("-c", code, json.dumps(paths), os.path.dirname(bounded.__file__), SCENE)
    )
    assert len(rows) == 2 * len(paths)
    for name, row in rows.items():
        assert row["outcome"] != "accepted" and not row["outcome"].startswith(("BUG", "HANG")), (name, row)
        assert "\n" not in row["outcome"] and len(row["outcome"]) < 1000, (name, row["outcome"][:2000])
        assert row["peak"] < 32 << 20 and row["seconds"] < bounded.CASE_SECONDS, (name, row)
    assert max(row["grown"] for row in rows.values()) < 256 << 20
    by = {os.path.basename(k): v["outcome"] for k, v in rows.items() if not k.startswith("play")}
    assert "operator 'ConstantOfShape' is not one unienv export writes" in by["constant_of_shape.onnx"]
    assert "operator 'Tile' is not one unienv export writes" in by["tile.onnx"]
    assert "computes from weights alone" in by["broadcast_weights_1GiB.onnx"]
    assert "computes from weights alone" in by["weights_product.onnx"]
    assert "expected (batch, 1 to 65536 columns)" in by["obs_widened.onnx"]
    assert "protobuf field 25 of a model" in by["function.onnx"]
    assert "metadata 'unienv'" in by["metadata_2MB.onnx"]


def test_python_m_unienv_deploy_run_refuses_a_constant_of_shape_graph_in_one_line(genuine, tmp_path):
    """Row 2, as the issue found it: one node added to a small policy, the runner's own command line,
    and a copy of runner.py with unienv and torch blocked."""
    path = hostile_graphs(tmp_path, genuine)[0]
    done = bounded.python("-m", "unienv.deploy", "run", path, "--model", SCENE, "--steps", "5")
    bounded.one_error_line(done, "operator 'ConstantOfShape' is not one unienv export writes")
    shutil.copy(runner.__file__, tmp_path / "runner.py")
    done = bounded.python("-c", BLOCKER, str(tmp_path / "runner.py"), "run", path, "--model", SCENE)
    bounded.one_error_line(done, "operator 'ConstantOfShape'")


def test_the_runners_command_line_is_one_error_line_for_every_mistake(genuine, tmp_path):
    """Row 8 (and row 4's model folders): a misspelled robot, malformed XML, an empty file, a
    folder or a path that is not there for --model, an include missing or outside the folder or a
    FIFO, a mesh that is a FIFO, a policy missing or a FIFO, steps < 0, commands that are not
    numbers in the policy's ranges: each one `error:` line naming it, no traceback."""
    robot = tmp_path / "robot"
    robot.mkdir()
    (robot / "bad.xml").write_text('<mujoco><worldbody><geom size="1"')
    (robot / "include_missing.xml").write_text('<mujoco><include file="../outside/missing.xml"/></mujoco>')
    os.mkfifo(tmp_path / "part.xml")
    (robot / "include_fifo.xml").write_text('<mujoco><include file="../part.xml"/></mujoco>')
    os.mkfifo(robot / "leg.stl")
    (robot / "mesh_fifo.xml").write_text(
        '<mujoco><asset><mesh file="leg.stl"/></asset><worldbody><geom type="mesh" mesh="leg"/></worldbody></mujoco>'
    )
    os.mkfifo(tmp_path / "policy_fifo.onnx")
    (robot / "empty.xml").write_text("")
    run = ["run", genuine, "--model"]
    cases = {
        "unitree_go1x": [*run, "unitree_go1x"],
        "bad.xml": [*run, str(robot / "bad.xml")],
        "missing.xml": [*run, str(robot / "include_missing.xml")],
        "part.xml": [*run, str(robot / "include_fifo.xml")],
        "leg.stl": [*run, str(robot / "mesh_fifo.xml")],
        "empty.xml is not valid MJCF": [*run, str(robot / "empty.xml")],
        "robot is a folder": [*run, str(robot)],
        "file not found: '": [*run, str(tmp_path / "nowhere.xml")],
        "policy_fifo.onnx": ["run", str(tmp_path / "policy_fifo.onnx"), "--model", SCENE],
        "no_such.onnx": ["run", str(tmp_path / "no_such.onnx"), "--model", SCENE],
        "--steps": [*run, SCENE, "--steps", "-1"],
        "lin_vel_x": [*run, SCENE, "--command", "nan", "0", "0"],
        "ang_vel_yaw": [*run, SCENE, "--command", "0", "0", "40"],
        "check leg.stl": ["check", genuine, "--model", str(robot / "mesh_fifo.xml")],
        "check robot is a folder": ["check", genuine, "--model", str(robot)],
    }
    done = bounded.python(DRIVER, json.dumps([["-m unienv.deploy", args, None] for args in cases.values()]))
    assert done.returncode == 0, done.stderr[-3000:]
    for (name, _), (status, err) in zip(cases.items(), json.loads(done.stdout.splitlines()[-1]), strict=True):
        lines = [line for line in err.splitlines() if line.strip()]
        assert status == 2 and len(lines) == 1 and lines[0].startswith("error: "), (name, status, err[-2000:])
        assert name.removeprefix("check ") in lines[0], (name, lines[0])
