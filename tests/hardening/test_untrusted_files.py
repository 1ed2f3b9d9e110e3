"""Files a run reads back are untrusted: hostile checkpoints and ONNX graphs (made here) are each
refused in one line, changing nothing, within a memory bound and a timeout; states beyond float
range, run folders in use and write errors are refused in one line too."""

import errno
import io
import json
import os
import pickle
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import torch

import unienv
from unienv.errors import ArgumentError
from unienv.tools import cli
from unienv.training.checkpoint import FORMAT, env_state, load_checkpoint, load_env_state
from unienv.utils import files

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

HERE = os.path.dirname(os.path.abspath(__file__))
MEMORY = 6 << 30  # address space of the replaying process (torch alone maps about 3 GiB)
GROWTH = 256 << 20  # the most its resident memory may grow over the whole corpus


def make_env():
    env = unienv.make("cartpole", num_envs=4, seed=0, dr="default")
    env.reset(seed=0)
    return env


def genuine(env):
    for _ in range(7):
        env.step(torch.zeros(4, 1))
    return {
        "format": FORMAT, "run": {}, "iterations": 1, "seconds": 1.0, "algorithm": {},
        "env": env_state(env), "adapter": {}, "logger": {}, "torch_rng": torch.get_rng_state(),
        "cuda_rng": [], "curve": [{"iteration": 1, "env_steps": 64, "episode": {"a": 1.0}}],
    }  # fmt: skip


def save(folder, name, state):
    torch.save(state, folder / name)


def hostile_checkpoints(folder, env):
    """At least 40 hostile checkpoints in folder, each a different way to be wrong."""
    good = genuine(env)
    arrays = good["env"]["arrays"]
    float_path = next(p for p, v in arrays.items() if v.dtype == torch.float64 and v.ndim == 2)
    cases = {}

    def env_case(name, change):
        state = {**good, "env": {"physics": good["env"]["physics"].clone(), "arrays": dict(arrays)}}
        change(state["env"])
        cases[name] = state

    def set_array(path, value):
        return lambda e: e["arrays"].__setitem__(path, value)

    def set_physics(row, col, value):
        def change(e):
            e["physics"][row, col] = value

        return change

    env_case("nan_float", set_array(float_path, torch.full_like(arrays[float_path], float("nan"))))
    env_case("inf_float", set_array(float_path, torch.full_like(arrays[float_path], float("inf"))))
    env_case("complex", set_array(float_path, arrays[float_path].to(torch.complex128)))
    env_case("float32_for_float64", set_array(float_path, arrays[float_path].float()))
    env_case("float_counter", set_array("env.episode_length", arrays["env.episode_length"].double()))
    env_case("nan_counter", set_array("env.episode_length", torch.full((4,), float("nan"))))
    env_case("negative_length", set_array("env.episode_length", torch.full((4,), -5)))
    env_case("length_past_episode", set_array("env.episode_length", torch.full((4,), 10**9)))
    env_case("negative_counts", set_array("env._random._counts", torch.full((4,), -1)))
    env_case("equal_keys", set_array("env._random._keys", torch.full((4,), 7)))
    env_case(
        "equal_numpy_keys", set_array("env._random._keys_numpy", torch.full((4,), 7, dtype=torch.uint64))
    )
    env_case("short_keys", set_array("env._random._keys", torch.arange(3)))
    env_case("wrong_shape", set_array(float_path, torch.zeros(5, 5, dtype=torch.float64)))
    env_case("list_not_tensor", set_array(float_path, [0.0] * 4))
    env_case("int_for_bool", set_array("env._pending_reset", torch.zeros(4, dtype=torch.int64)))
    env_case("missing_array", lambda e: e["arrays"].pop(float_path))
    env_case("extra_array", set_array("env.intruder", torch.zeros(4)))
    env_case(
        "other_action_bounds", set_array("env._path.high", torch.full_like(arrays["env._path.high"], 1000.0))
    )
    env_case(
        "other_low_bounds", set_array("env._path.low", torch.full_like(arrays["env._path.low"], -1000.0))
    )
    dr_cols = next(p for p in arrays if p.endswith(".cols"))
    env_case("other_dr_columns", set_array(dr_cols, arrays[dr_cols] + 1))
    env_case("physics_nan", set_physics(2, 1, float("nan")))
    env_case("physics_1e300", set_physics(0, 1, 1e300))
    env_case("physics_inf", set_physics(3, 2, float("-inf")))
    env_case("negative_time", set_physics(1, 0, -1e9))
    env_case("physics_float32", lambda e: e.__setitem__("physics", e["physics"].float()))
    env_case("physics_short", lambda e: e.__setitem__("physics", e["physics"][:, :3]))
    env_case("physics_missing", lambda e: e.pop("physics"))
    env_case("arrays_list", lambda e: e.__setitem__("arrays", []))
    for field in ("run", "iterations", "env", "curve", "torch_rng"):
        cases[f"missing_{field}"] = {k: v for k, v in good.items() if k != field}
    cases["iterations_negative"] = {**good, "iterations": -1000000}
    cases["iterations_bool"] = {**good, "iterations": True}
    cases["iterations_float"] = {**good, "iterations": 1.5}
    cases["seconds_nan"] = {**good, "seconds": float("nan")}
    cases["curve_short"] = {**good, "iterations": 3}
    cases["curve_no_env_steps"] = {**good, "curve": [{"iteration": 1}]}
    nested = {"x": 1.0}
    for _ in range(30):
        nested = {"a": nested, "b": nested}  # shared references: 2**30 leaves as JSON
    cases["curve_shared_references"] = {**good, "curve": [{"env_steps": 1, "episode": nested}]}
    cases["curve_strings"] = {**good, "curve": [{"env_steps": 1, "mean_return": "lots"}]}
    cases["format_other"] = {**good, "format": "unienv.train/0"}
    cases["not_a_dict"] = [1, 2, 3]
    cases["empty_dict"] = {}
    for name, state in cases.items():
        save(folder, f"{name}.pt", state)
    # files that are not torch.save archives, or hostile ones
    (folder / "empty.pt").write_bytes(b"")
    (folder / "random_bytes.pt").write_bytes(np.random.default_rng(0).bytes(4096))
    whole = (folder / "nan_float.pt").read_bytes()
    (folder / "truncated.pt").write_bytes(whole[: len(whole) // 2])
    (folder / "code.pt").write_bytes(pickle.dumps(os.system, protocol=2).replace(b"system", b"getpid"))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:  # 1 GiB of zeros in about 1 MB
        with zipfile.ZipFile(folder / "nan_float.pt") as original:
            for info in original.infolist():
                z.writestr(info.filename, original.read(info))
        z.writestr("archive/data/99", b"\0" * (1 << 30))
    (folder / "deflate_bomb.pt").write_bytes(buffer.getvalue())
    with zipfile.ZipFile(folder / "plain_zip.pt", "w") as z:  # a zip, stored, but no pickle in it
        z.writestr("notes.txt", b"hello")
    os.mkfifo(folder / "fifo.pt")
    (folder / "folder.pt").mkdir()
    return len(cases) + 8


def hostile_onnx(folder, tmp):
    """At least 20 hostile ONNX files in folder."""
    from onnx import TensorProto, helper

    from unienv.training.export import export_onnx
    from unienv.training.policy import save_policy

    env = unienv.make("cartpole", num_envs=2, seed=0)
    actor = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ELU(), torch.nn.Linear(8, 1))
    save_policy(str(tmp / "p.safetensors"), actor, env, backend="mujoco")
    env.close()
    export_onnx(str(tmp / "p.safetensors"), str(tmp / "good.onnx"))
    good = onnx.load(str(tmp / "good.onnx"))
    meta = json.loads(good.metadata_props[0].value)
    count = 0

    def write(name, model):
        nonlocal count
        onnx.save(model, str(folder / f"{name}.onnx"))
        count += 1

    def with_nodes(name, nodes, initializers=()):
        model = onnx.ModelProto()
        model.CopyFrom(good)
        model.graph.node.extend(nodes)
        model.graph.initializer.extend(initializers)
        write(name, model)

    big = helper.make_tensor("shape", TensorProto.INT64, [1], [2**28])
    with_nodes("constant_of_shape", [helper.make_node("ConstantOfShape", ["shape"], ["z"])], [big])
    with_nodes("expand", [helper.make_node("Expand", ["obs", "shape"], ["z"])], [big])
    body = helper.make_graph([], "body", [], [])
    with_nodes("loop", [helper.make_node("Loop", ["trips", ""], [], body=body)],
               [helper.make_tensor("trips", TensorProto.INT64, [], [2**62])])  # fmt: skip
    with_nodes("reshape", [helper.make_node("Reshape", ["obs", "shape"], ["z"])], [big])
    with_nodes("custom_domain", [helper.make_node("Relu", ["obs"], ["z"], domain="com.evil")])
    with_nodes("if_subgraph", [helper.make_node("If", ["obs"], ["z"], then_branch=body, else_branch=body)])
    with_nodes("tile", [helper.make_node("Tile", ["obs", "shape"], ["z"])], [big])
    with_nodes("int_weight", [], [helper.make_tensor("w", TensorProto.INT64, [1], [1])])
    huge = TensorProto(name="huge", data_type=TensorProto.FLOAT, dims=[2**20, 2**20])
    with_nodes("declared_huge", [], [huge])
    external = TensorProto(name="ext", data_type=TensorProto.FLOAT, dims=[4])
    external.data_location = TensorProto.EXTERNAL
    external.external_data.add(key="location", value="/etc/passwd")
    with_nodes("external_data", [], [external])

    def with_meta(name, value):
        model = onnx.ModelProto()
        model.CopyFrom(good)
        if value is None:
            del model.metadata_props[:]
        else:
            model.metadata_props[0].value = value
        write(name, model)

    with_meta("meta_missing", None)
    with_meta("meta_not_json", "{not json")
    with_meta("meta_deep", "[" * 100000 + "]" * 100000)
    with_meta("meta_list", "[1, 2]")
    with_meta("meta_no_task", json.dumps({k: v for k, v in meta.items() if k != "task"}))
    with_meta("meta_task_int", json.dumps({**meta, "task": 3}))
    with_meta("meta_shape_huge", json.dumps({**meta, "observation": {"shape": [2**40], "dtype": "float32"}}))
    with_meta("meta_format", json.dumps({**meta, "format": "other"}))
    renamed = onnx.ModelProto()
    renamed.CopyFrom(good)
    renamed.graph.input[0].name = "observation"
    write("input_renamed", renamed)
    wide = onnx.ModelProto()
    wide.CopyFrom(good)
    wide.graph.input[0].type.tensor_type.shape.dim.add().dim_value = 3
    write("input_3d", wide)
    (folder / "not_onnx.onnx").write_bytes(b"\xff" * 100)
    (folder / "empty.onnx").write_bytes(b"")
    os.mkfifo(folder / "fifo.onnx")
    return count + 3


def test_a_corpus_of_hostile_checkpoints_and_onnx_files_is_refused_within_bounds(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    env = make_env()
    checkpoints = hostile_checkpoints(corpus, env)
    env.close()
    graphs = hostile_onnx(corpus, tmp_path)
    assert checkpoints >= 40 and graphs >= 20
    done = subprocess.run(
        [sys.executable, os.path.join(HERE, "untrusted_corpus.py"), str(corpus), str(MEMORY)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(rows) == checkpoints + graphs
    for row in rows:
        name, outcome = row["file"], row["outcome"]
        assert outcome != "accepted" and not outcome.startswith("BUG"), (name, outcome)
        assert "\n" not in outcome and "weights_only" not in outcome, (name, outcome)
        assert not row["changed"], name
        assert row["grown"] < GROWTH, (name, row["grown"])
    by_name = {row["file"]: row["outcome"] for row in rows}
    assert "compressed" in by_name["deflate_bomb.pt"]
    assert "not a regular file (it is a FIFO)" in by_name["fifo.pt"]
    assert "configuration is compared" in by_name["other_action_bounds.pt"]
    assert "'ConstantOfShape'" in by_name["constant_of_shape.onnx"] and "'Loop'" in by_name["loop.onnx"]
    assert "env.episode_length" in by_name["negative_length.pt"]
    assert "distinct" in by_name["equal_keys.pt"]
    assert "field 'iterations'" in by_name["iterations_negative.pt"]
    assert "no data.pkl" in by_name["plain_zip.pt"]


def test_a_genuine_snapshot_restores_and_a_refused_one_leaves_the_space_alone(tmp_path):
    source, target = make_env(), make_env()
    good = genuine(source)
    torch.save(good, tmp_path / "model_3.pt")
    _, state = load_checkpoint(str(tmp_path))
    bad = {"physics": state["env"]["physics"].clone(), "arrays": dict(state["env"]["arrays"])}
    bad["arrays"]["env._path.high"] = torch.full_like(bad["arrays"]["env._path.high"], 1000.0)
    high = target.single_action_space.high.copy()
    with pytest.raises(ArgumentError, match=r"env\._path\.high: differs"):
        load_env_state(target, bad)
    assert (target.single_action_space.high == high).all()
    assert (unienv.make("cartpole", num_envs=1).single_action_space.high == high).all()
    load_env_state(target, state["env"])
    assert torch.equal(target.backend.get_physics_state(), source.backend.get_physics_state())
    source.close()
    target.close()


@pytest.mark.parametrize("value", [1e300, -1e200, float("nan")])
def test_states_beyond_float_range_are_refused_by_name(value):
    env = make_env()
    backend = env.backend
    before = backend.get_physics_state().clone()
    qpos = torch.zeros(4, backend.nq, dtype=torch.float64)
    qpos[2, 0] = value
    with pytest.raises(ArgumentError, match="qpos: (expected|contains NaN)"):
        backend.set_state_tensor(torch.arange(4), qpos, torch.zeros(4, backend.nv, dtype=torch.float64))
    state = before.clone()
    state[1, 1] = value
    with pytest.raises(ArgumentError, match="state: (expected|contains NaN)"):
        backend.set_physics_state(state)
    assert torch.equal(backend.get_physics_state(), before)
    env.close()


def test_a_run_folder_is_held_by_one_process(tmp_path):
    files.take_folder(tmp_path / "run")
    code = "import sys; from unienv.utils import files; files.take_folder(sys.argv[1])"
    other = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "run")], capture_output=True, text=True
    )
    assert other.returncode != 0 and "is in use by another run" in other.stderr
    again = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "free")], capture_output=True, text=True
    )
    assert again.returncode == 0, again.stderr


@pytest.mark.parametrize(
    ("number", "words"),
    [(errno.ENOSPC, "no space left"), (errno.EROFS, "read-only"), (errno.ENOTDIR, "not a folder")],
)
def test_write_errors_are_one_line_naming_the_path(capsys, number, words):
    def failing():
        raise OSError(number, os.strerror(number), "/runs/a/model_3.pt")

    with pytest.raises(SystemExit) as stopped:
        cli.report(failing)()
    assert stopped.value.code == 1
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1 and err.startswith("error: cannot write /runs/a/model_3.pt: ") and words in err
    )


def test_a_write_under_a_file_names_the_final_path(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(OSError) as raised, files.written(tmp_path / "file" / "model.pt") as temporary:
        open(temporary, "wb").close()
    assert raised.value.errno == errno.ENOTDIR and raised.value.filename == str(
        tmp_path / "file" / "model.pt"
    )


def test_train_py_refuses_a_checkpoint_with_a_wrong_field_in_one_line_writing_nothing(tmp_path):
    """A real checkpoint of train.py, then three damaged copies: each resume is one error line
    naming the field, and the new run folder gets no checkpoint, metrics or policy file."""
    pytest.importorskip("rsl_rl")
    root = os.path.dirname(os.path.dirname(HERE))
    small = ["num_envs=8", "train.runner.num_steps_per_env=8", "train.eval_steps=0", "train.iterations=4"]

    def train(run_dir, *options):
        command = [
            sys.executable,
            os.path.join(root, "train.py"),
            *small,
            f"hydra.run.dir={run_dir}",
            *options,
        ]
        return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)

    assert train(tmp_path / "first", "train.iterations=1").returncode == 0
    state = torch.load(tmp_path / "first" / "model_0.pt", weights_only=True)
    weight = "algorithm.actor_state_dict.mlp.0.weight"
    actor = state["algorithm"]["actor_state_dict"]
    damaged = {
        "short_rng": ({**state, "torch_rng": state["torch_rng"][:100]}, "torch_rng: expected uint8 of shape"),
        "weights": (
            {**state, "algorithm": {**state["algorithm"], "actor_state_dict": {**actor, "mlp.0.weight": torch.zeros(3, 3)}}},
            f"{weight}: expected float32 of shape",
        ),
        "iterations": ({**state, "iterations": -1000000}, "field 'iterations'"),
    }  # fmt: skip
    for name, (bad, words) in damaged.items():
        torch.save(bad, tmp_path / f"{name}.pt")
        done = train(tmp_path / name, f"train.resume={tmp_path / f'{name}.pt'}")
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 1 and lines[-1].startswith("error: train.resume:") and words in lines[-1], (
            done.stderr
        )
        assert "Traceback" not in done.stderr
        left = {p.name for p in (tmp_path / name).iterdir()} - {".hydra", "git", "train.log", ".unienv.lock"}
        assert not {n for n in left if n.endswith((".pt", ".json", ".safetensors"))}, left
    other = train(tmp_path / "other", f"train.resume={tmp_path / 'first'}", "task.max_angle=0.3")
    last = other.stderr.strip().splitlines()[-1]
    assert other.returncode == 1 and "another run" in last, other.stderr
    assert "task_options.max_angle: the checkpoint has 0.2, this run 0.3" in last and "rail" not in last
