"""The surfaces beside checkpoints and ONNX graphs are as untrusted: a corpus of hostile motion
files, CSV clips and deployment contracts, generated here, is replayed in a process under a memory
limit (surfaces_corpus.py); each case is refused in one line that names the input, none hangs
past 10 s, and none allocates more than twice the largest legitimate input of its kind (its size,
or what reading it costs: tracemalloc's peak and the resident memory's, MuJoCo's included), while the
legitimate ones (a 60 s motion, one at 30 frames/s that is resampled, a CSV clip, a genuine
policy) are accepted. The tests after the corpus's own read its rows for issue 57's rows."""

import json
import math
import os
import pickle
import sys
import zipfile

import mujoco
import numpy as np
import pytest

from unienv.motion import ARRAYS, Motion, clips, convert
from unienv.tasks.velocity.robots.g1 import G1

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

sys.path.insert(0, os.path.dirname(__file__))
import bounded  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SLACK = (
    4 << 20
)  # bytes a refusal may allocate beyond nothing (its message, numpy's and zipfile's bookkeeping)


@pytest.fixture(scope="module")
def g1():

    return mujoco.MjModel.from_xml_path(G1.build()[0])


def fields(motion: Motion) -> dict:
    out = {k: getattr(motion, k) for k in Motion.__dataclass_fields__}
    out["joint_names"], out["body_names"] = np.array(out["joint_names"]), np.array(out["body_names"])
    return out


def npz(path, arrays: dict, compressed=()) -> None:
    """arrays written as np.savez does, those named in `compressed` deflated."""
    with zipfile.ZipFile(path, "w") as z:
        for name, a in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy")
            info.compress_type = zipfile.ZIP_DEFLATED if name in compressed else zipfile.ZIP_STORED
            with z.open(info, "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asanyarray(a), allow_pickle=True)


def deflate_bomb(path, arrays: dict, name: str, nbytes: int) -> None:
    """arrays stored, plus `name`: nbytes of float64 zeros, deflated (about 1/1000 of it on disk)."""
    npz(path, arrays)
    with zipfile.ZipFile(path, "a") as z:
        info = zipfile.ZipInfo(f"{name}.npy")
        info.compress_type = zipfile.ZIP_DEFLATED
        with z.open(info, "w", force_zip64=True) as f:
            header = {"descr": "<f8", "fortran_order": False, "shape": (nbytes // 8,)}
            np.lib.format.write_array_header_1_0(f, header)
            chunk = bytes(1 << 20)
            for _ in range(nbytes >> 20):
                f.write(chunk)


def declared(path, name: str, size: int) -> None:
    """The entry `name` of a stored zip made to declare `size` bytes (its central directory's and
    its local header's uncompressed size) for the bytes it holds."""
    data = bytearray(path.read_bytes())
    key = f"{name}.npy".encode()
    for signature, offset, name_at in ((b"PK\x01\x02", 24, 46), (b"PK\x03\x04", 22, 30)):
        at = data.find(signature)
        while at >= 0:
            if data[at + name_at : at + name_at + len(key)] == key:
                data[at + offset : at + offset + 4] = size.to_bytes(4, "little")
            at = data.find(signature, at + 4)
    path.write_bytes(bytes(data))


def npy_header(shape, descr="<f8") -> bytes:
    """A .npy file's bytes: a header declaring `shape`, and 64 bytes of data."""
    import io

    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": descr, "fortran_order": False, "shape": shape})
    return buffer.getvalue() + bytes(64)


def hostile_motions(folder, squat: Motion, g1) -> dict[str, int]:
    """The motion corpus: legitimate files (their sizes returned) and at least 40 hostile ones."""
    good = fields(squat)
    long = {k: np.concatenate([v] * 15)[:3001] if k in ARRAYS else v for k, v in good.items()}  # 60 s
    np.savez(folder / "legit_60s.npz", **long)
    squat.save(folder / "legit_squat.npz")
    pose = (squat.body_pos[:, 0], squat.body_quat[:, 0], squat.joint_pos)
    convert.from_frames(g1, *pose, 50.0, 1 / 30, "resampled", "squat").save(folder / "legit_30fps.npz")
    legit = {p.name: p.stat().st_size for p in folder.iterdir()}

    def case(name, **changes):
        np.savez(folder / f"{name}.npz", **{**good, **changes})

    def dropped(name, *keys):
        np.savez(folder / f"{name}.npz", **{k: v for k, v in good.items() if k not in keys})

    deflate_bomb(folder / "bomb_unused_256MiB.npz", good, "unused", 256 << 20)
    deflate_bomb(folder / "bomb_joint_pos_256MiB.npz", {k: v for k, v in good.items() if k != "joint_pos"}, "joint_pos", 256 << 20)  # fmt: skip
    npz(folder / "compressed_savez.npz", good, compressed=("body_pos",))
    npz(folder / "object_array.npz", {**good, "joint_pos": np.array([None, 1], dtype=object)})
    npz(folder / "structured.npz", {**good, "body_pos": np.zeros(3, dtype=[("a", "<f8"), ("b", "<i4")])})
    np.savez(folder / "declares_more.npz", **good)
    declared(folder / "declares_more.npz", "body_pos", 1 << 31)
    with zipfile.ZipFile(folder / "header_21TiB.npz", "w") as z:
        for k, v in good.items():
            if k != "joint_pos":
                with z.open(f"{k}.npy", "w") as f:
                    np.lib.format.write_array(f, np.asanyarray(v))
        z.writestr("joint_pos.npy", npy_header((1 << 40, 3 << 10)))
    (folder / "header_21TiB.npy").write_bytes(npy_header((1 << 40, 3 << 10)))
    with zipfile.ZipFile(folder / "header_54GiB_names.npz", "w") as z:  # 29 names of 5e8 characters
        for k, v in good.items():
            z.writestr(f"{k}.npy", npy_header((29,), "<U500000000") if k == "joint_names" else _npy_bytes(v))
    with zipfile.ZipFile(folder / "bad_header.npz", "w") as z:
        for k, v in good.items():
            z.writestr(
                f"{k}.npy", b"\x93NUMPY\x01\x00\x10\x00{'descr': <f8}  \n" if k == "fps" else _npy_bytes(v)
            )
    with (
        pytest.warns(UserWarning, match="Duplicate name"),
        zipfile.ZipFile(folder / "duplicate_entry.npz", "w") as z,
    ):
        for k, v in good.items():
            z.writestr(f"{k}.npy", _npy_bytes(v))
        z.writestr("fps.npy", _npy_bytes(np.float64(1e308)))
    with zipfile.ZipFile(folder / "legit_extra_20000_entries.npz", "w") as z:  # the named arrays are read
        for k, v in good.items():
            z.writestr(f"{k}.npy", _npy_bytes(v))
        for i in range(20000):
            z.writestr(f"e{i}", b"")
    with zipfile.ZipFile(folder / "entries_70000.npz", "w") as z:  # zip64's end record: 70011 entries
        for k, v in good.items():
            z.writestr(f"{k}.npy", _npy_bytes(v))
        for i in range(70000):
            z.writestr(f"e{i}", b"")
    (folder / "pickle_renamed.npz").write_bytes(pickle.dumps({"joint_pos": [1.0]}))
    (folder / "empty.npz").write_bytes(b"")
    (folder / "random_bytes.npz").write_bytes(np.random.default_rng(0).bytes(4096))
    whole = (folder / "legit_squat.npz").read_bytes()
    (folder / "truncated.npz").write_bytes(whole[: len(whole) // 2])
    with zipfile.ZipFile(folder / "no_entries.npz", "w"):
        pass
    os.mkfifo(folder / "fifo.npz")
    (folder / "folder.npz").mkdir()
    os.symlink("/dev/zero", folder / "dev_zero.npz")
    dropped("missing_body_quat", "body_quat")
    dropped("missing_fps", "fps")
    for fps in (0.0, -50.0, math.nan, math.inf, 1e308, 0.02, 0.001, 1e6):
        case(f"fps_{fps}", fps=np.float64(fps))
    case("fps_text", fps=np.array("50"))
    case("fps_array", fps=np.ones(3))
    case("source_fps_nan", source_fps=np.float64(math.nan))
    case("source_not_text", source=np.ones(2))
    case("joint_names_numbers", joint_names=np.arange(29))
    case("joint_names_10MB", joint_names=np.array(["x" * (90 << 10)] * 29))
    case("joint_pos_scalar", joint_pos=np.float64(1.0))
    case("joint_pos_3d", joint_pos=good["joint_pos"][..., None])
    case("joint_pos_nan", joint_pos=np.where(np.arange(29) == 3, np.nan, good["joint_pos"]))
    case("joint_pos_int", joint_pos=good["joint_pos"].astype(np.int64))
    case("joint_pos_float16", joint_pos=good["joint_pos"].astype(np.float16))
    case("joint_pos_complex", joint_pos=good["joint_pos"].astype(np.complex128))
    case("body_quat_not_unit", body_quat=good["body_quat"] * 2)
    case("body_pos_inf", body_pos=np.where(np.arange(3) == 2, np.inf, good["body_pos"]))
    case("no_frames", **{k: v[:0] for k, v in good.items() if isinstance(v, np.ndarray) and v.ndim >= 2})
    case("frames_short", joint_vel=good["joint_vel"][:-1])
    case("body_names_short", body_names=good["body_names"][:-1])
    case("too_long_601s", fps=np.float64(1.0), source_fps=np.float64(1.0),
         **{k: np.concatenate([v] * 3)[:602] for k, v in good.items() if isinstance(v, np.ndarray) and v.ndim >= 2})  # fmt: skip
    case("joints_in_degrees", joint_pos=np.degrees(good["joint_pos"]) + 90)
    case("root_under_ground", body_pos=good["body_pos"] - [0, 0, 2.0])
    case("another_robot", joint_names=np.array([n.replace("knee", "kn") for n in good["joint_names"]]))
    return legit


def _npy_bytes(a) -> bytes:
    import io

    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.asanyarray(a))
    return buffer.getvalue()


def hostile_csvs(folder, squat: Motion) -> dict[str, int]:
    """The CSV corpus: a legitimate clip (its size returned) and at least 25 hostile ones; each
    case's arguments to `motion convert` beside it in <case>.json."""
    pos, quat, joints = squat.body_pos[:, 0], squat.body_quat[:, 0], squat.joint_pos
    xyzw = np.concatenate((pos, quat[:, [1, 2, 3, 0]], joints), 1)
    out = str(folder.parent.parent / "out")

    def case(name, rows=xyzw, fps="50", quat="xyzw", o=None, text=None):
        path = folder / f"{name}.csv"
        if text is not None:
            path.write_bytes(text)
        elif rows is not None:
            np.savetxt(path, rows, delimiter=",", fmt="%.17g")
        args = ["--fps", fps, "--quat", quat, "-o", o or f"{out}/{name}.npz"]
        (folder / f"{name}.json").write_text(json.dumps(args))

    case("legit")
    legit = {"legit.csv": (folder / "legit.csv").stat().st_size}
    case("wxyz_read_as_xyzw", rows=np.concatenate((pos, quat, joints), 1))
    # xyzw read as wxyz turns a clip heading along x half a turn about z (upright: plausible, and
    # g1_tracking aligns headings); heading along y, it lies the robot on its side, which is refused
    turned = np.concatenate((pos[:, [1, 0, 2]] * [-1, 1, 1], _yaw90(quat)[:, [1, 2, 3, 0]], joints), 1)
    case("xyzw_read_as_wxyz", rows=turned, quat="wxyz")
    case("degrees", rows=np.concatenate((xyzw[:, :7], np.degrees(joints)), 1))
    case("centimetres", rows=np.concatenate((xyzw[:, :3] * 100, xyzw[:, 3:]), 1))
    case("y_up", rows=np.concatenate((xyzw[:, [0, 2, 1]], xyzw[:, 3:]), 1))
    case("shifted_columns", rows=np.concatenate((xyzw[:, :7], joints[:, 1:], joints[:, :1]), 1))
    for fps in ("1e-6", "0", "-30", "nan", "inf", "1e6", "0.5"):
        case(f"fps_{fps}", fps=fps)
    case("too_long_601s", rows=np.concatenate([xyzw] * 4)[:602], fps="1")
    case("nan_row", rows=np.where(np.arange(36) == 9, np.nan, xyzw))
    case("columns_35", rows=xyzw[:, :-1])
    case("empty", text=b"")
    case("comments_only", text=b"# nothing\n# here\n")
    case("binary", text=np.random.default_rng(1).bytes(8192))
    case("one_line_8MB", text=b"1," * (4 << 20))
    case("field_8MB", text=b"x" * (8 << 20) + b",1\n")
    case("pickle", text=pickle.dumps(xyzw))
    os.mkfifo(folder / "fifo.csv")
    case("fifo", rows=None)
    (folder / "folder.csv").mkdir()
    case("folder", rows=None)
    os.symlink("/dev/zero", folder / "dev_zero.csv")
    case("dev_zero", rows=None)
    case("out_without_npz", o=f"{out}/mymotion")
    os.mkdir(os.path.join(out, "a_folder.npz"))
    case("out_folder", o=f"{out}/a_folder.npz")
    case("out_missing_folder", o=f"{out}/no/such/m.npz")
    os.mkfifo(os.path.join(out, "a_fifo.npz"))
    case("out_fifo", o=f"{out}/a_fifo.npz")
    return legit


def _yaw90(quat: np.ndarray) -> np.ndarray:
    """wxyz quaternions turned a quarter turn about the world's z (q90 * q)."""
    c = np.sqrt(0.5)
    w, x, y, z = quat.T
    return np.stack((c * (w - z), c * (x - y), c * (y + x), c * (z + w)), 1)


def hostile_contracts(folder, genuine: str) -> dict[str, int]:
    """The contract corpus: the genuine policy (its size returned) and at least 35 copies whose
    contract is wrong in one way each."""
    model = onnx.load(genuine)
    meta = json.loads(model.metadata_props[0].value)
    good = meta["contract"]
    onnx.save(model, str(folder / "legit.onnx"))
    legit = {"legit.onnx": (folder / "legit.onnx").stat().st_size}

    def case(name, change):
        contract = json.loads(json.dumps(good))
        change(contract)
        edited = onnx.ModelProto()
        edited.CopyFrom(model)
        edited.metadata_props[0].value = json.dumps({**meta, "contract": contract})
        onnx.save(edited, str(folder / f"{name}.onnx"))

    def put(path, value):
        def change(c):
            *parents, last = path.split(".")
            for p in parents:
                c = c[int(p)] if p.isdigit() else c[p]
            c[int(last) if last.isdigit() else last] = value

        return change

    joints = good["robot"]["joints"]
    case("offset_nan", put("action.offset.0", math.nan))
    case("offset_inf", put("action.offset.5", math.inf))
    case("scale_3_entries", put("action.scale", [0.25] * 3))
    case("scale_text", put("action.scale", "0.25"))
    case("scale_entry_text", put("action.scale.0", "0.25"))
    case("joint_missing_from_default_pose", lambda c: c["default_pose"].pop(joints[4]))
    case("default_pose_nan", put(f"default_pose.{joints[0]}", math.nan))
    case("block_without_quantity", lambda c: c["observation"][0].pop("quantity"))
    case("block_width_wrong", put("observation.0.width", 4))
    case("block_width_huge", put("observation.0.width", 1 << 40))
    case("block_width_negative", put("observation.3.width", -3))
    case("block_width_bool", put("observation.2.width", True))
    case("block_history_zero", put("observation.0.history", 0))
    case("block_scale_short", put("observation.3.scale", [1.0, 2.0]))
    case("block_scale_nan", put("observation.0.scale", math.nan))
    case("block_offset_on_velocity", put("observation.0.offset", "default_pose"))
    case("block_clip_negative", put("observation.0.clip", -1.0))
    case("block_points_bad", put("observation.0.points", [[0.0]]))
    case("block_not_a_dict", put("observation.1", "gravity"))
    case("block_names_twice", put("observation.1.name", good["observation"][0]["name"]))
    case("commands_low_above_high", put("commands.0.low", 5.0))
    case("command_name_number", put("commands.1.name", 7))
    case("joints_twice", put("robot.joints.1", joints[0]))
    case("joints_short", put("robot.joints", joints[:-1]))
    case("actuators_empty", put("robot.actuators", []))
    case("period_off", put("control.period", 0.5))
    case("sim_dt_negative", put("control.sim_dt", -0.004))
    case("decimation_zero", put("control.decimation", 0))
    case("decimation_huge", put("control.decimation", 1 << 40))
    case("control_missing", lambda c: c.pop("control"))
    case("schema_other", put("schema", "unienv.deploy/0"))
    case("root_500KB", put("robot.root", "x" * (500 << 10)))
    case("keyframe_500KB", put("default_pose_keyframe", "k" * (500 << 10)))
    case("kp_nested_deep", put("robot.kp", json.loads("[" * 50 + "]" * 50)))
    case("contract_empty", lambda c: c.clear())
    case("unknown_quantity", put("observation.0.quantity", "foot_contact"))
    case("frequency_on_velocity", put("observation.0.frequency", 2.0))
    clock = {"name": "clock", "quantity": "gait_clock", "width": 2}
    case("gait_clock_without_frequency", put("observation.0", clock))
    case("gait_clock_frequency_zero", put("observation.0", clock | {"frequency": 0.0}))
    case("gait_clock_frequency_text", put("observation.0", clock | {"frequency": "2"}))
    return legit


@pytest.fixture(scope="module")
def replayed(tmp_path_factory, g1, quadruped_policy):
    """The corpus, made and replayed once: (rows by case, sizes of the legitimate inputs by kind)."""
    root = tmp_path_factory.mktemp("surfaces")
    corpus = root / "corpus"
    for kind in ("motion", "csv", "contract"):
        (corpus / kind).mkdir(parents=True)
    (root / "out").mkdir()
    squat = clips.clip("squat", g1)
    legit = {"motion": hostile_motions(corpus / "motion", squat, g1)}
    legit["csv"] = hostile_csvs(corpus / "csv", squat)
    legit["contract"] = hostile_contracts(corpus / "contract", quadruped_policy)
    done = bounded.python(
        os.path.join(HERE, "surfaces_corpus.py"), str(corpus), str(bounded.MEMORY),
        timeout=300, env={**os.environ, "PYTHONPATH": os.pathsep.join([HERE, bounded.ROOT])},
    )  # fmt: skip
    return bounded.rows(done), legit, root


def test_a_corpus_of_hostile_motion_files_clips_and_contracts_is_refused_within_bounds(replayed):
    rows, legit, root = replayed
    if os.environ.get("SHOW_ROWS"):
        for name, row in rows.items():
            print(f"{name:45s} {row['rss'] >> 20:4d} MiB {row['seconds']:5.2f} s  {row['outcome'][:230]}")
    assert len(rows) >= 40 + 25 + 35
    for name, row in rows.items():
        kind, case = name.split("/")
        outcome = row["outcome"]
        assert row["seconds"] < bounded.CASE_SECONDS, (name, row)
        if case.startswith("legit"):
            assert outcome == "accepted", (name, outcome)
            continue
        assert outcome != "accepted" and not outcome.startswith(("BUG", "HANG")), (name, outcome)
        assert "\n" not in outcome.replace(" | ", "") and len(outcome) < 2000, (name, outcome[:3000])
        assert "allow_pickle" not in outcome and "weights_only" not in outcome, (name, outcome)
        bound = 2 * max(legit[kind].values()) + SLACK
        assert row["peak"] < bound, (name, row["peak"], bound)
    for name, row in rows.items():  # memory, C libraries' too: at most twice a legitimate input's
        kind = name.split("/")[0]
        costs = [r["rss"] for n, r in rows.items() if n.startswith(f"{kind}/legit")]
        if "legit" not in name:
            assert row["rss"] < 2 * max(*costs, *legit[kind].values()) + SLACK, (name, row["rss"], costs)
    written = sorted(os.listdir(root / "out"))
    assert written == ["a_fifo.npz", "a_folder.npz", "legit.npz"], written  # a refusal writes nothing


def test_motion_archives_are_read_by_name_stored_and_within_the_file(replayed):
    """Row 1: an unused deflated 256 MiB array, a deflated named one, an entry declaring more
    than it holds, a header declaring 21 TiB (or 29 names of 5e8 characters), objects, duplicates,
    70000 entries: each refused before its data is read (20000 extra entries are left unread)."""
    rows = replayed[0]
    assert "'unused.npy' is compressed" in rows["motion/bomb_unused_256MiB.npz"]["outcome"]
    assert "'joint_pos.npy' is compressed" in rows["motion/bomb_joint_pos_256MiB.npz"]["outcome"]
    assert "declares 2147483648 bytes in" in rows["motion/declares_more.npz"]["outcome"]
    assert "header declares shape (1099511627776, 3072)" in rows["motion/header_21TiB.npz"]["outcome"]
    assert "not a zip archive" in rows["motion/header_21TiB.npy"]["outcome"]
    assert (
        "joint_names: its header declares shape (29,) of <U500000000 (54.0 GiB), its entry holds 64.0 B"
        in rows["motion/header_54GiB_names.npz"]["outcome"]
    )
    assert "expected numbers or text, got dtype '|O'" in rows["motion/object_array.npz"]["outcome"]
    assert "'fps.npy' appears twice" in rows["motion/duplicate_entry.npz"]["outcome"]
    assert (
        "declares 70011 entries; a NumPy .npz archive (np.savez) has at most 65536"
        in rows["motion/entries_70000.npz"]["outcome"]
    )
    for case in (
        "bomb_unused_256MiB",
        "bomb_joint_pos_256MiB",
        "header_21TiB",
        "header_54GiB_names",
        "declares_more",
    ):
        assert rows[f"motion/{case}.npz"]["peak"] < SLACK


def test_fifos_devices_and_folders_are_refused_by_kind(replayed):
    """Row 4 (files; model folders in test_model_files.py): no read of a FIFO, /dev/zero or a folder."""
    rows = replayed[0]
    for name, kind in (("fifo", "a FIFO"), ("folder", "a folder"), ("dev_zero", "a device or socket")):
        for path in (f"motion/{name}.npz", f"csv/{name}.csv"):
            assert f"is not a regular file (it is {kind})" in rows[path]["outcome"], rows[path]


def test_frame_rates_and_lengths_are_bounded_and_checked_against_the_control_rate(replayed):
    """Row 5: a motion's fps and a clip's --fps in [1, 1000] frames/s and at most 600 s, checked
    before anything is resampled; a motion at 30 frames/s is resampled to 50, not used as is."""
    rows = replayed[0]
    for fps in ("0.0", "-50.0", "nan", "inf", "1e+308", "0.02", "0.001", "1000000.0"):
        assert "expected a frame rate in [1, 1000] frames/s" in rows[f"motion/fps_{fps}.npz"]["outcome"]
    for fps in ("1e-6", "0", "-30", "nan", "inf", "1e6", "0.5"):
        assert "expected a frame rate in [1, 1000] frames/s" in rows[f"csv/fps_{fps}.csv"]["outcome"]
    assert (
        "expected at most 600 s of motion, got 602 frames at 1" in rows["motion/too_long_601s.npz"]["outcome"]
    )
    assert "expected at most 600 s of motion" in rows["csv/too_long_601s.csv"]["outcome"]
    assert rows["motion/legit_30fps.npz"]["outcome"] == "accepted"  # resampled to 50 (test_motion_rates)


def test_converted_clips_are_plausible_and_written_where_named(replayed):
    """Row 6: quaternion orders swapped either way, degrees, centimetres, y up and shifted
    columns are refused by the plausibility check; -o without .npz, a folder, a missing folder
    or a FIFO is refused before anything is read, and no temporary is left."""
    rows = replayed[0]
    for case in ("wxyz_read_as_xyzw", "xyzw_read_as_wxyz"):
        assert "the root is upright" in rows[f"csv/{case}.csv"]["outcome"], rows[f"csv/{case}.csv"]
    assert "outside its range" in rows["csv/degrees.csv"]["outcome"]
    assert "the root at height 7" in rows["csv/centimetres.csv"]["outcome"]
    assert "outside its range" in rows["csv/shifted_columns.csv"]["outcome"]
    assert rows["csv/y_up.csv"]["outcome"] != "accepted"
    assert "-o: expected a path ending in .npz" in rows["csv/out_without_npz.csv"]["outcome"]
    assert "exists and is not a regular file" in rows["csv/out_folder.csv"]["outcome"]
    assert "does not exist" in rows["csv/out_missing_folder.csv"]["outcome"]
    assert "exists and is not a regular file" in rows["csv/out_fifo.csv"]["outcome"]


def test_deploy_check_and_the_runner_refuse_every_contract_the_runner_cannot_use(replayed):
    """Row 7: each hostile contract is refused by deploy check and by the runner, naming the field."""
    rows = replayed[0]
    for case, field in (
        ("offset_nan", "'action.offset'"), ("scale_3_entries", "'action.scale'"), ("scale_text", "'action.scale'"),
        ("joint_missing_from_default_pose", "'default_pose."), ("block_without_quantity", "'observation[0]'"),
        ("block_width_wrong", ".width'"), ("period_off", "'control.period'"), ("decimation_zero", "'control.decimation'"),
        ("block_offset_on_velocity", ".offset'"), ("commands_low_above_high", "'commands[0]'"),
    ):  # fmt: skip
        outcome = rows[f"contract/{case}.onnx"]["outcome"]
        assert outcome.count(field) == 2, (case, outcome)  # deploy check's line and the runner's


def test_refusals_never_echo_a_file_whole_nor_advise_loading_unsafely(replayed):
    """Row 10: /dev/zero is a device (not "pickled data"), a pickle renamed .npz is not a zip
    archive (and no allow_pickle advice), a 500 KB name is cut short."""
    rows = replayed[0]
    assert "pickled" not in rows["motion/dev_zero.npz"]["outcome"]
    pickled = rows["motion/pickle_renamed.npz"]["outcome"]
    assert "not a zip archive" in pickled and "allow_pickle" not in pickled and "pickled" not in pickled
    for case in ("root_500KB", "keyframe_500KB"):
        outcome = rows[f"contract/{case}.onnx"]["outcome"]
        assert "..." in outcome and len(outcome) < 1000, (case, len(outcome))
    assert len(rows["motion/joint_names_10MB.npz"]["outcome"]) < 1000
    assert len(rows["csv/field_8MB.csv"]["outcome"]) < 1000
