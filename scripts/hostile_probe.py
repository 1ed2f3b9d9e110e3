"""Issue 57's ten rows replayed against a unienv checkout, through entry points every version has:
`python -m unienv motion ...`, `python -m unienv.deploy run/check ...`, play.py, `unienv.make`,
`unienv.motion.load`, and play's viewer loop driven by a page over a real websocket.

    python scripts/hostile_probe.py --tree /path/to/checkout [--rows 1,5] [--out table.txt]

Each case runs in its own process under an address-space limit (--memory GiB) and a timeout
(--timeout s), with the checkout first on the path (its tasks/ and cfg/ too: the venv's editable
install maps unienv.tasks and unienv.cfg to its own checkout, so a small sitecustomize maps them to
--tree's). The inputs are generated in a temporary folder: hostile motion files, CSV clips, ONNX
graphs and contracts (from a motion and a policy that the checkout itself writes), FIFOs, model
folders, pixel options and page messages. One table line per case:

    row  case  outcome  peak RSS (MiB)  seconds  verdict

outcome: `refused: <the last line>` (exit status not 0, no traceback), `accepted[: what it
printed]`, `traceback: <its last line>`, `MemoryError`, `crash (signal N)` or `hang` (the timeout);
for the viewer, what the loop did (`crashed`, `frozen`, `accepted: speed ...`, `memory +N MiB`,
`refused`). verdict: `ok` where the outcome is what issue 57 asks (a one-line refusal under 1000
characters that does not advise loading unsafely, or the legitimate input accepted as meant),
`BAD` otherwise (a refusal that blames the wrong thing, such as "no OpenGL context" for a size,
included; and any case whose peak resident memory passes 1 GiB, where a legitimate one takes at
most 750 MiB). The exit status is the number of BAD cases.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import pickle
import resource
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import zipfile
from dataclasses import dataclass, field

import numpy as np

GIB = 1 << 30
MAX_PEAK = GIB  # resident memory a case may reach: a legitimate one takes at most 750 MiB
SHIM = """
import os, sys
from importlib.util import spec_from_file_location
_tree = os.environ["PROBE_TREE"]
class _TreeFinder:  # unienv.tasks and unienv.cfg from the probed checkout, not the editable install's
    MAP = {"unienv.tasks": os.path.join(_tree, "tasks"), "unienv.cfg": os.path.join(_tree, "cfg")}
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        folder = cls.MAP.get(fullname)
        if folder is None:
            return None
        init = os.path.join(folder, "__init__.py")
        return spec_from_file_location(fullname, init, submodule_search_locations=[folder])
sys.meta_path.insert(0, _TreeFinder)
"""
API = """
import sys, traceback
from unienv.errors import UnienvError
try:
    from unienv.deploy.runner import DeployError
except ImportError:
    DeployError = UnienvError
try:
{body}
except (UnienvError, DeployError) as e:
    print("error: " + str(e), file=sys.stderr)
    sys.exit(2)
"""


@dataclass
class Case:
    row: int
    name: str
    args: list[str]  # python's arguments (a script, -m module, or -c code)
    want: str = "refused"  # or "accepted"
    stdout_has: str = ""  # what an accepted case must print
    ours: bool = False  # a case of the probe's own, beyond the issue's
    misleading: str = ""  # a refusal that says this blames the wrong thing
    environ: dict[str, str] = field(default_factory=dict)  # set for this case


@dataclass
class Result:
    outcome: str
    peak: int
    seconds: float
    ok: bool


# --- running one case ----------------------------------------------------------------------


def run(
    args: list[str], env: dict, cwd: str, memory: int, timeout: float
) -> tuple[object, str, str, int, float]:
    """(exit status, or "hang", stdout, stderr, peak RSS bytes, seconds) of python args."""

    def limit():
        os.setsid()
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        began = time.monotonic()
        child = subprocess.Popen(
            [sys.executable, *args], stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd, env=env,
            preexec_fn=limit,
        )  # fmt: skip
        while True:
            pid, code, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                status: object = os.waitstatus_to_exitcode(code)
                break
            if time.monotonic() - began > timeout:
                os.killpg(child.pid, signal.SIGKILL)
                _, code, usage = os.wait4(child.pid, 0)
                status = "hang"
                break
            time.sleep(0.05)
        child.returncode = 0  # reaped above
        seconds = time.monotonic() - began
        texts = []
        for f in (out, err):
            f.seek(0)
            texts.append(f.read().decode(errors="replace"))
    return status, texts[0], texts[1], usage.ru_maxrss * 1024, seconds


def classify(case: Case, status, stdout: str, stderr: str) -> tuple[str, bool]:
    lines = [line for line in stderr.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    if status == "hang":
        return "hang", False
    if "MemoryError" in stderr or "bad_alloc" in stderr or "Failed to allocate" in stderr:
        return f"MemoryError: {last[:150]}", False
    if "Traceback (most recent call last)" in stderr:
        return f"traceback: {last[:150]}", False
    if isinstance(status, int) and status < 0:
        return f"crash (signal {-status}): {last[:120]}", False
    if status != 0 and not lines and stdout.strip():  # deploy check's mismatches, one a line
        said = [line for line in stdout.splitlines() if line.strip()]
        ok = case.want == "refused" and all(len(line) < 1000 for line in said)
        return f"refused ({len(said)} mismatches): {said[0][:150]}", ok
    if status == 0:
        said = [line for line in stdout.splitlines() if line.strip()]
        outcome = "accepted" + (f": {said[-1][:150]}" if said else "")
        ok = case.want == "accepted" and case.stdout_has in stdout
        return outcome, ok
    refusal = [line for line in lines if not line.startswith(("WARNING", "Warning", "  warnings.warn"))]
    one_line = len(refusal) == 1 and refusal[0].startswith("error:")
    shown = last if len(last) < 300 else f"{last[:150]} ... ({len(last)} characters)"
    unsafe = any(w in last for w in ("allow_pickle", "weights_only", "pickled"))
    wrong = bool(case.misleading) and case.misleading in last
    ok = case.want == "refused" and one_line and len(last) < 1000 and not unsafe and not wrong
    return f"refused: {shown}" if one_line else f"refused ({len(refusal)} lines): {shown}", ok


# --- the inputs ----------------------------------------------------------------------------


def npz(path: str, arrays: dict, compressed=()) -> None:
    """arrays written as np.savez writes them, those named in `compressed` deflated."""
    with zipfile.ZipFile(path, "w") as z:
        for name, a in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy")
            info.compress_type = zipfile.ZIP_DEFLATED if name in compressed else zipfile.ZIP_STORED
            with z.open(info, "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asanyarray(a), allow_pickle=True)


def deflated(path: str, arrays: dict, name: str, nbytes: int, append: bool = True) -> None:
    """arrays stored, plus `name`: a .npy of nbytes of float64 zeros, deflated (about 1/1000)."""
    npz(path, arrays)
    with zipfile.ZipFile(path, "a") as z:
        info = zipfile.ZipInfo(f"{name}.npy")
        info.compress_type = zipfile.ZIP_DEFLATED
        with z.open(info, "w", force_zip64=True) as f:
            np.lib.format.write_array_header_1_0(
                f, {"descr": "<f8", "fortran_order": False, "shape": (nbytes // 8,)}
            )
            chunk = bytes(1 << 22)
            for _ in range(nbytes >> 22):
                f.write(chunk)


def npy_bytes(a=None, header: dict | None = None, data: bytes = b"") -> bytes:
    buffer = io.BytesIO()
    if header is None:
        np.lib.format.write_array(buffer, np.asanyarray(a))
    else:
        np.lib.format.write_array_header_1_0(buffer, header)
        buffer.write(data)
    return buffer.getvalue()


def replaced(path: str, arrays: dict, entries: dict[str, bytes]) -> None:
    """arrays stored, their entries named in `entries` holding those bytes instead."""
    with zipfile.ZipFile(path, "w") as z:
        for name, a in arrays.items():
            z.writestr(f"{name}.npy", entries.get(name) or npy_bytes(a))


def motion_fields(path: str) -> dict:
    with np.load(path) as f:  # the checkout's own file: trusted
        return {k: f[k] for k in f.files}


def policy_with(genuine: str, out: str, contract_change=None, nodes=(), weights=(), outputs=()) -> str:
    """A copy of the genuine ONNX policy with its contract changed, or nodes and weights added."""
    import onnx

    model = onnx.load(genuine)
    if contract_change is not None:
        meta = json.loads(model.metadata_props[0].value)
        contract_change(meta["contract"])
        model.metadata_props[0].value = json.dumps(meta)
    model.graph.node.extend(nodes)
    model.graph.initializer.extend(weights)
    model.graph.output.extend(outputs)
    onnx.save(model, out)
    return out


def put(path: str, value):
    def change(c):
        *parents, last = path.split(".")
        for p in parents:
            c = c[int(p)] if p.isdigit() else c[p]
        c[int(last) if last.isdigit() else last] = value

    return change


def api(body: str) -> list[str]:
    return ["-c", API.format(body=textwrap.indent(textwrap.dedent(body).strip(), "    "))]


def cases(tree: str, work: str, env: dict, rows: set[int]) -> list[Case]:
    """Every row's cases, their inputs made in `work` from a motion and a policy the tree writes
    (row 1's archives of gigabytes only where row 1 is run: they take a minute to deflate)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    d = lambda *p: os.path.join(work, *p)  # noqa: E731
    for sub in ("motion", "csv", "onnx", "out", "robot"):
        os.makedirs(d(sub), exist_ok=True)
    squat, genuine = d("motion", "legit_squat.npz"), d("onnx", "genuine")
    made = [
        ["-m", "unienv", "motion", "clip", "squat", "-o", squat],
        ["-c", MAKE_POLICY, genuine],
    ]
    for args in made:
        status, out, err, _, _ = run(args, env, work, 8 * GIB, 600)
        assert status == 0, (args, err[-3000:])
    genuine += ".onnx"
    scene = os.path.join(tree, "tasks", "assets", "quadruped.xml")
    good = motion_fields(squat)
    frames = len(good["joint_pos"])
    out: list[Case] = []

    def motion_case(row, name, path, ours=False, want="refused"):
        out.append(
            Case(row, name, api(f"from unienv.motion import load\nload({path!r})"), want=want, ours=ours)
        )

    def tracking_case(row, name, path, ours=False, want="refused", stdout_has=""):
        body = f"""
            import unienv
            env = unienv.make("g1_tracking", num_envs=1, task_options={{"motion": {path!r}}})
            ref, dt = env.unwrapped.task.reference, env.unwrapped.task.dt
            seconds = (len(ref.joint_pos) - 1) / ref.fps
            meant = {(frames - 1)} / {{fps}}
            rate = "rate ok" if abs(ref.fps * dt - 1) < 1e-9 and abs(seconds - meant) <= dt else "rate wrong"
            print(f"{{rate}}: {{len(ref.joint_pos)}} frames at {{ref.fps:g}} fps, played every {{dt:g}} s ({{(len(ref.joint_pos) - 1) * dt:.3g}} s for a {{meant:.3g}} s clip)")
        """
        out.append(
            Case(row, name, api(body.replace("{fps}", str(fps_of.get(name, 50.0)))), want, stdout_has, ours)
        )

    def cli(row, name, *args, ours=False, want="refused", environ=None):
        out.append(Case(row, name, list(args), want=want, ours=ours, environ=environ or {}))

    fps_of: dict[str, float] = {}

    # row 1: archives read whole, without bound
    m = lambda name: d("motion", name)  # noqa: E731
    motion_case(1, "legit squat.npz (control)", squat, want="accepted")
    if 1 in rows:
        deflated(m("bomb_unused_4GiB.npz"), good, "unused", 4 * GIB)
    motion_case(1, "deflated 4 GiB unused array (4 MB file)", m("bomb_unused_4GiB.npz"))
    replaced(m("header_21TiB.npz"), good, {"joint_pos": npy_bytes(header={"descr": "<f8", "fortran_order": False, "shape": (1 << 40, 3 << 10)}, data=bytes(64))})  # fmt: skip
    motion_case(1, "a .npy header declaring 24 PiB (issue: 21 TiB)", m("header_21TiB.npz"))
    if 1 in rows:
        named = {k: v for k, v in good.items() if k != "body_pos"}
        deflated(m("bomb_body_pos_2GiB.npz"), named, "body_pos", 2 * GIB)
    motion_case(1, "named array body_pos deflated, 2 GiB", m("bomb_body_pos_2GiB.npz"), ours=True)
    names = npy_bytes(header={"descr": "<U500000000", "fortran_order": False, "shape": (29,)}, data=bytes(64))
    replaced(m("names_8GB_each.npz"), good, {"joint_names": names})
    motion_case(
        1, "joint_names header: 29 strings of 5e8 characters (54 GiB)", m("names_8GB_each.npz"), ours=True
    )
    with zipfile.ZipFile(m("entries_200k.npz"), "w") as archive:
        for k, v in good.items():
            archive.writestr(f"{k}.npy", npy_bytes(v))
        for i in range(200_000 if 1 in rows else 0):
            archive.writestr(f"e{i}", b"")
    motion_case(1, "200000 empty entries beside the arrays", m("entries_200k.npz"), ours=True)

    # row 2: the runner's command line and the graph's operators
    big = numpy_helper.from_array(np.array([1 << 31], np.int64), "huge_shape")
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, None)
    o = lambda name: d("onnx", name)  # noqa: E731
    cos = policy_with(genuine, o("constant_of_shape.onnx"), nodes=[helper.make_node("ConstantOfShape", ["huge_shape"], ["z"])], weights=[big], outputs=[z])  # fmt: skip
    expand = policy_with(genuine, o("expand.onnx"), nodes=[helper.make_node("Expand", ["obs", "huge_shape"], ["z"])], weights=[big], outputs=[z])  # fmt: skip
    reps = numpy_helper.from_array(np.array([1, 1 << 26], np.int64), "reps")
    tile = policy_with(genuine, o("tile.onnx"), nodes=[helper.make_node("Tile", ["obs", "reps"], ["z"])], weights=[reps], outputs=[z])  # fmt: skip
    run_ = lambda p, *more: ["-m", "unienv.deploy", "run", p, "--model", scene, "--steps", "5", *more]  # noqa: E731
    on = lambda spec, *more: ["-m", "unienv.deploy", "run", genuine, "--model", spec, "--steps", "1", *more]  # noqa: E731
    cli(2, "deploy run: genuine policy (control)", *run_(genuine), want="accepted")
    cli(2, "deploy run: ConstantOfShape of 2^31 floats", *run_(cos))
    cli(2, "deploy run: Expand obs to 2^31", *run_(expand), ours=True)
    cli(2, "deploy run: Tile obs 2^26 times", *run_(tile), ours=True)
    cli(
        2,
        "deploy check: ConstantOfShape (reference)",
        "-m",
        "unienv.deploy",
        "check",
        cos,
        "--model",
        scene,
        ours=True,
    )

    # row 3: the viewer (run separately: see viewer_cases)

    # row 4: FIFOs
    fifo_npz, fifo_csv = d("motion", "fifo.npz"), d("csv", "fifo.csv")
    os.mkfifo(fifo_npz)
    os.mkfifo(fifo_csv)
    tracking_case(4, "g1_tracking task.motion=<fifo>", fifo_npz)
    cli(4, "motion convert fifo.csv", "-m", "unienv", "motion", "convert", fifo_csv, "--robot", "g1", "--fps", "30", "-o", d("out", "fifo.npz"))  # fmt: skip
    motion_case(4, "motion.load(<fifo>)", fifo_npz, ours=True)
    menagerie = d("menagerie")
    from_dir = subprocess.run(
        [sys.executable, "-c", "from unienv import robots; print(robots.model_dir('unitree_go1'))"],
        env=env, cwd=work, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    if from_dir:
        for base, _, names_ in os.walk(from_dir):
            target = os.path.join(menagerie, "unitree_go1", os.path.relpath(base, from_dir))
            os.makedirs(target, exist_ok=True)
            for f in names_:
                os.symlink(os.path.join(base, f), os.path.join(target, f))
        mesh = os.path.join(menagerie, "unitree_go1", "assets", "calf.stl")
        os.remove(mesh)
        os.mkfifo(mesh)
        there = {"UNIENV_MENAGERIE_DIR": menagerie}
        cli(4, "deploy check: Go1 folder whose calf.stl is a FIFO", "-m", "unienv.deploy", "check", genuine, "--model", "unitree_go1", environ=there)  # fmt: skip
        cli(4, "play.py task=go1_velocity: calf.stl a FIFO", os.path.join(tree, "play.py"), "task=go1_velocity", "steps=1", "video.enabled=false", f"hydra.run.dir={d('hydra')}", environ=there)  # fmt: skip
        cli(
            4, "deploy run: Go1 folder whose calf.stl is a FIFO", *on("unitree_go1"), ours=True, environ=there
        )
    os.mkfifo(d("robot", "part.xml"))
    with open(d("robot", "include_fifo.xml"), "w") as f:
        f.write('<mujoco><include file="part.xml"/><worldbody/></mujoco>')
    cli(4, "deploy run: --model includes a FIFO", *on(d("robot", "include_fifo.xml")), ours=True)
    os.mkfifo(d("onnx", "fifo.onnx"))
    cli(4, "deploy run: the policy is a FIFO", *run_(d("onnx", "fifo.onnx")), ours=True)

    # row 5: frame rates
    def motion_at(name, fps, **more):
        path = m(name)
        np.savez(path, **{**good, "fps": np.float64(fps), **more})
        return path

    fps_of["motion fps=30 (played at 50 Hz?)"] = 30.0
    tracking_case(
        5,
        "motion fps=30 (played at 50 Hz?)",
        motion_at("fps30.npz", 30.0),
        want="accepted",
        stdout_has="rate ok",
    )
    tracking_case(5, "motion fps=1e308", motion_at("fps1e308.npz", 1e308))
    tracking_case(5, "motion fps=0.02", motion_at("fps0.02.npz", 0.02))
    tracking_case(5, "motion fps=0.001", motion_at("fps0.001.npz", 0.001))
    tracking_case(5, "motion fps=nan", motion_at("fpsnan.npz", math.nan), ours=True)
    tracking_case(5, "motion fps=-50", motion_at("fps-50.npz", -50.0), ours=True)
    fps_of["motion fps=100 (resampled to 50)"] = 100.0
    tracking_case(5, "motion fps=100 (resampled to 50)", motion_at("fps100.npz", 100.0), want="accepted", stdout_has="rate ok", ours=True)  # fmt: skip
    rows = np.concatenate(
        (good["body_pos"][:, 0], good["body_quat"][:, 0][:, [1, 2, 3, 0]], good["joint_pos"]), 1
    )
    legit_csv = d("csv", "legit.csv")
    np.savetxt(legit_csv, rows, delimiter=",", fmt="%.17g")

    def convert(csv, fps="50", *more):
        return ["-m", "unienv", "motion", "convert", csv, "--robot", "g1", "--fps", fps, *more]

    cli(5, "motion convert legit.csv --fps 50 (control)", *convert(legit_csv, "50", "-o", d("out", "legit.npz")), want="accepted")  # fmt: skip
    cli(5, "motion convert --fps 1e-6", *convert(legit_csv, "1e-6", "-o", d("out", "slow.npz")))  # fmt: skip
    cli(5, "motion convert /dev/zero", *convert("/dev/zero", "30", "-o", d("out", "zero.npz")))
    cli(5, "motion convert --fps 0", *convert(legit_csv, "0", "-o", d("out", "f0.npz")), ours=True)  # fmt: skip
    cli(5, "motion convert --fps nan", *convert(legit_csv, "nan", "-o", d("out", "fnan.npz")), ours=True)  # fmt: skip
    two = d("csv", "two_frames.csv")
    np.savetxt(two, rows[:2], delimiter=",", fmt="%.17g")
    cli(5, "motion convert 2 frames --fps 0.0001 (3 h)", *convert(two, "0.0001", "-o", d("out", "two.npz")), ours=True)  # fmt: skip

    # row 6: convert's output and plausibility
    cli(6, "motion convert -o mymotion (no .npz)", *convert(legit_csv, "50", "-o", d("out", "mymotion")))  # fmt: skip
    os.mkdir(d("out", "folder"))
    cli(6, "motion convert -o <folder>", *convert(legit_csv, "50", "-o", d("out", "folder")))
    os.mkdir(d("out", "folder.npz"))
    cli(6, "motion convert -o <folder named .npz>", *convert(legit_csv, "50", "-o", d("out", "folder.npz")), ours=True)  # fmt: skip
    wxyz = np.concatenate((good["body_pos"][:, 0], good["body_quat"][:, 0], good["joint_pos"]), 1)
    np.savetxt(d("csv", "wxyz.csv"), wxyz, delimiter=",", fmt="%.17g")
    cli(6, "motion convert wxyz.csv as xyzw (upside down)", *convert(d("csv", "wxyz.csv"), "50", "-o", d("out", "wxyz.npz")))  # fmt: skip
    cli(6, "motion convert -o missing/folder/m.npz", *convert(legit_csv, "50", "-o", d("out", "no", "m.npz")), ours=True)  # fmt: skip
    degrees = np.concatenate((rows[:, :7], np.degrees(rows[:, 7:]) + 90), 1)
    np.savetxt(d("csv", "degrees.csv"), degrees, delimiter=",", fmt="%.17g")
    cli(6, "motion convert joints in degrees", *convert(d("csv", "degrees.csv"), "50", "-o", d("out", "deg.npz")), ours=True)  # fmt: skip
    cm = np.concatenate((rows[:, :3] * 100, rows[:, 3:]), 1)
    np.savetxt(d("csv", "cm.csv"), cm, delimiter=",", fmt="%.17g")
    cli(6, "motion convert positions in cm", *convert(d("csv", "cm.csv"), "50", "-o", d("out", "cm.npz")), ours=True)  # fmt: skip

    # row 7: contracts deploy check said fit
    contract = json.loads(onnx.load(genuine).metadata_props[0].value)["contract"]
    joints = contract["robot"]["joints"]
    check = lambda p: ["-m", "unienv.deploy", "check", p, "--model", scene]  # noqa: E731
    cli(7, "deploy check: genuine (control)", *check(genuine), want="accepted")
    for name, change, ours in (
        ("action.offset[0] NaN", put("action.offset.0", math.nan), False),
        ("action.scale of 3 entries", put("action.scale", [0.25] * 3), False),
        ("a joint missing from default_pose", lambda c: c["default_pose"].pop(joints[4]), False),
        ("action.scale a string", put("action.scale", "0.25"), False),
        ("observation block without quantity", lambda c: c["observation"][0].pop("quantity"), False),
        ("action.offset[5] inf", put("action.offset.5", math.inf), True),
        ("default_pose NaN", put(f"default_pose.{joints[0]}", math.nan), True),
        ("observation[0].scale NaN", put("observation.0.scale", math.nan), True),
        ("commands[0] low > high", put("commands.0.low", 5.0), True),
        ("control.decimation 0", put("control.decimation", 0), True),
        ("observation[0].width 1e12", put("observation.0.width", 10**12), True),
    ):
        path = policy_with(genuine, o(f"contract_{len(out)}.onnx"), contract_change=change)
        cli(7, f"deploy check: {name}", *check(path), ours=ours)
        if name.startswith("action.offset[0]"):
            cli(7, f"deploy run: {name}", *run_(path), ours=True)

    # row 8: the runner's command line
    bad = d("robot", "bad.xml")
    with open(bad, "w") as f:
        f.write('<mujoco><worldbody><geom size="1"')
    os.makedirs(d("robot", "inner"))
    with open(d("robot", "outside.xml"), "w") as f:
        f.write("<mujoco><worldbody/></mujoco>")
    with open(d("robot", "inner", "include_outside.xml"), "w") as f:
        f.write('<mujoco><include file="../outside_missing.xml"/></mujoco>')
    with open(d("robot", "empty.xml"), "w") as f:
        pass
    model = on
    cli(8, "deploy run --model unitree_go1x (typo)", *model("unitree_go1x"))
    cli(8, "deploy run --model malformed XML", *model(bad))
    cli(
        8, "deploy run --model include outside its folder", *model(d("robot", "inner", "include_outside.xml"))
    )
    with open(d("robot", "inner", "include_outside_there.xml"), "w") as f:
        f.write('<mujoco><include file="../outside.xml"/></mujoco>')
    cli(8, "deploy run --model includes a file outside, there", *model(d("robot", "inner", "include_outside_there.xml")), ours=True)  # fmt: skip
    cli(8, "deploy run --model an empty file", *model(d("robot", "empty.xml")), ours=True)
    cli(8, "deploy run --model a folder", *model(d("robot")), ours=True)
    cli(8, "deploy run: a policy that is not there", *run_(d("onnx", "no_such.onnx")), ours=True)
    cli(8, "deploy run --steps -1", *on(scene)[:-1], "-1", ours=True)

    # row 9: pixel sizes
    free = {"camera": None, "pos": [0, -3, 1], "target": [0, 0, 0]}

    def pixels(name, num_envs, ours=False, want="refused", task="cartpole", **options):
        kwargs = {"obs": "pixels", "pixels": {"camera": free, **options}} if task == "cartpole" else options
        body = f"import unienv\nunienv.make({task!r}, num_envs={num_envs}, **{kwargs!r}).close()"
        out.append(Case(9, name, api(body), want=want, ours=ours, misleading="no OpenGL context"))

    pixels("pixels 84x84, 2 envs (control)", 2, want="accepted", render_threads=1)
    pixels("render_threads=10000, 2 envs", 2, render_threads=10000)
    pixels("frame_stack=10**12", 2, frame_stack=10**12)
    pixels("16384x16384 image, 64 envs", 64, width=16384, height=16384)
    pixels("g1_tracking future_frames=10**9", 1, task="g1_tracking", task_options={"future_frames": 10**9})
    pixels("8192x8192 image, 1 env, frame_stack 1", 1, ours=True, width=8192, height=8192, frame_stack=1)
    pixels("frame_stack=0", 2, ours=True, frame_stack=0)
    pixels("render_threads=0", 2, ours=True, render_threads=0)
    pixels(
        "g1_tracking future_frames=1e9 (a float)",
        1,
        ours=True,
        task="g1_tracking",
        task_options={"future_frames": 1e9},
    )

    # row 10: messages
    os.symlink("/dev/zero", m("dev_zero.npz"))
    motion_case(10, "/dev/zero as a motion file", m("dev_zero.npz"))
    with open(m("pickle.npz"), "wb") as f:
        f.write(pickle.dumps({"joint_pos": [1.0]}))
    motion_case(10, "a pickle renamed .npz", m("pickle.npz"))
    huge = policy_with(genuine, o("root_20MB.onnx"), contract_change=put("robot.root", "x" * (20 << 20)))
    cli(10, "deploy check: contract with a 20 MB string", *check(huge))
    cli(10, "deploy run: contract with a 20 MB string", *run_(huge), ours=True)
    npz(m("object_array.npz"), {**good, "joint_pos": np.array([None, 1], dtype=object)})
    motion_case(10, "an object (pickled) array in a motion", m("object_array.npz"), ours=True)
    np.savez(m("names_10MB.npz"), **{**good, "joint_names": np.array(["x" * (400 << 10)] * 29)})
    tracking_case(10, "g1_tracking: joint names of 400 K characters each", m("names_10MB.npz"), ours=True)
    return out


MAKE_POLICY = """
import sys, torch, unienv
from unienv.training.export import export_onnx
from unienv.training.policy import save_policy
env = unienv.make("quadruped", num_envs=1, seed=0)
torch.manual_seed(0)
obs, act = env.single_observation_space.shape[0], env.single_action_space.shape[0]
actor = torch.nn.Sequential(torch.nn.Linear(obs, 64), torch.nn.ELU(), torch.nn.Linear(64, act))
with torch.no_grad():
    for p in actor.parameters():
        p.mul_(0.6)
save_policy(sys.argv[1] + ".safetensors", actor, env, backend="mujoco")
export_onnx(sys.argv[1] + ".safetensors", sys.argv[1] + ".onnx")
env.close()
"""


# --- row 3: the viewer's loop and a page ---------------------------------------------------

LOOP = """
import json, resource, sys, threading, torch, unienv
from unienv.viewer import live
from unienv.viewer.server import Options, Viewer, check
viewers = []
class Watched(Viewer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        viewers.append(self)
def rss():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
live.Viewer = Watched
env = unienv.make("quadruped", num_envs=2, seed=0)
env.reset(seed=0)
steps = [0]
def policy(obs):
    steps[0] += 1
    return torch.zeros(2, 12)
stop = threading.Event()
loop = threading.Thread(target=lambda: live.play(env, policy, check(Options(port=int(sys.argv[1])), 2), stop=stop), daemon=True)
loop.start()
while not viewers:
    stop.wait(0.05)
print("ready", flush=True)
for _ in sys.stdin:
    v = viewers[0]
    command = getattr(env.unwrapped, "_memory", {}).get("command")
    state = {"steps": steps[0], "alive": loop.is_alive(), "speed": repr(v.speed), "paused": repr(v.paused), "rss": rss()}
    state["command"] = None if command is None else [float(x) for x in command[0]]
    print(json.dumps(state), flush=True)
stop.set()
"""
PAGE_CAMERA = {"type": "ViewerCameraMessage", "wxyz": (1.0, 0.0, 0.0, 0.0), "position": (3.0, 3.0, 3.0)}
PAGE_CAMERA |= {"fov": 1.0, "near": 0.01, "far": 100.0, "image_height": 600, "image_width": 800}
PAGE_CAMERA |= {"look_at": (0.0, 0.0, 0.0), "up_direction": (0.0, 0.0, 1.0)}


class Page:
    """A page of the viewer without a browser: viser's subprotocol, its messages as it sends them."""

    def __init__(self, url: str):
        import viser
        from websockets.sync.client import connect

        self.ws = connect(url, subprotocols=[f"viser-v{viser.__version__}"], max_size=None)
        self.controls: dict[str, str] = {}
        self.send(PAGE_CAMERA)

    def read(self, seconds: float, until=lambda page: False) -> None:
        import msgspec
        import zstandard

        end = time.monotonic() + seconds
        while not until(self) and (left := end - time.monotonic()) > 0:
            try:
                raw = self.ws.recv(timeout=left)
            except TimeoutError:
                return
            size, packed = (int.from_bytes(raw[i : i + 8], "little") for i in (0, 8))
            payload = zstandard.ZstdDecompressor().decompress(raw[16 : 16 + packed], max_output_size=size)
            for message in msgspec.msgpack.decode(payload)["messages"]:
                label = (message.get("props") or {}).get("label")
                if label and "uuid" in message:
                    self.controls[label] = message["uuid"]

    def send(self, message: dict) -> None:
        import msgspec

        self.ws.send(msgspec.msgpack.encode(message))

    def update(self, label: str, updates) -> None:
        self.send({"type": "GuiUpdateMessage", "uuid": self.controls[label], "updates": updates})

    def upload(self, label: str, transfer: str, parts: int, part_bytes: int, sent: int) -> None:
        """An upload of parts x part_bytes aimed at the control `label`, `sent` of its parts sent."""
        ids = {"source_component_uuid": self.controls[label], "transfer_uuid": transfer}
        size = {"filename": "x.bin", "mime_type": "application/octet-stream", "part_count": parts, "size_bytes": parts * part_bytes}  # fmt: skip
        self.send({"type": "FileTransferStartUpload", **ids, **size})
        content = b"\0" * part_bytes
        for i in range(sent):
            self.send({"type": "FileTransferPart", **ids, "part_index": i, "content": content})

    def close(self) -> None:
        self.ws.close()


def command_label(controls: dict) -> str:
    return next(k for k in controls if k.startswith("Command") or k == "lin_vel_x")


def viewer_cases() -> list[tuple[str, bool, object]]:
    """(name, ours, what the page does) of row 3."""

    def speed(v):
        return lambda p: p.update("Speed", {"value": v})

    def uploads(p):  # 10 unfinished uploads of 20 MB to a slider, in parts a socket takes, then away
        for k in range(10):
            p.upload("Speed", f"t{k}", 334, 60000, 333)
        p.close()

    def command_nan(p):
        label = command_label(p.controls)
        p.update(label, {"value": (math.nan,) * 3 if label.startswith("Command") else math.nan})
        p.update("Apply command", {"value": True})

    return [
        ("nothing sent (control)", False, lambda p: None),
        ("speed 0", False, speed(0)),
        ("speed 1e-7", False, speed(1e-7)),
        ("speed -5", False, speed(-5)),
        ("speed nan", False, speed(math.nan)),
        ("speed inf", False, speed(math.inf)),
        ("10 unfinished 20 MB uploads to Speed, then away", False, uploads),
        ("speed '2.0' (text)", True, speed("2.0")),
        ("speed 1e308", True, speed(1e308)),
        (
            "speed's min set to 0, then 0.05",
            True,
            lambda p: (speed(0.05)(p), p.update("Speed", {"min": 0.0}), speed(0.05)(p)),
        ),
        ("pause 'yes' (text)", True, lambda p: p.update("Pause", {"value": "yes"})),
        ("a whole 1-part upload to Pause", True, lambda p: p.upload("Pause", "t", 1, 1000, 1)),
        ("command NaN, then Apply command", True, command_nan),
    ]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def viewer_case(act, env: dict, work: str, memory: int) -> tuple[str, bool, int, float]:
    """(outcome, ok, peak RSS, seconds): a fresh loop, a page that does `act`, the loop's state after."""
    with open(os.path.join(work, "loop.log"), "w+") as log:
        return _viewer_case(act, env, work, memory, log)


def _viewer_case(act, env: dict, work: str, memory: int, log) -> tuple[str, bool, int, float]:
    port, began = free_port(), time.monotonic()
    loop = subprocess.Popen(
        [sys.executable, "-c", LOOP, str(port)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
        text=True, cwd=work, env=env, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (memory, memory)),
    )  # fmt: skip

    def state() -> dict | None:
        try:
            loop.stdin.write("\n")
            loop.stdin.flush()
        except (BrokenPipeError, OSError):
            return None
        with selectors.DefaultSelector() as ready:
            ready.register(loop.stdout, selectors.EVENT_READ)
            line = loop.stdout.readline() if ready.select(timeout=10) else ""
        return json.loads(line) if line.startswith("{") else None

    page = None
    try:
        line, end = "", time.monotonic() + 90
        with selectors.DefaultSelector() as ready:  # the viewer prints its address first
            ready.register(loop.stdout, selectors.EVENT_READ)
            while line.strip() != "ready" and ready.select(timeout=max(0.0, end - time.monotonic())):
                if not (line := loop.stdout.readline()):
                    break
        if line.strip() != "ready":
            log.seek(0)
            return f"loop did not start: {log.read()[-300:]}", False, 0, time.monotonic() - began
        page = Page(f"ws://127.0.0.1:{port}")
        page.read(30, until=lambda p: {"Speed", "Pause"} <= set(p.controls))
        time.sleep(1.0)
        before = state()
        try:
            act(page)
        except Exception as e:  # noqa: BLE001 (the server closed the page: what it may do)
            sent = f" (page closed: {type(e).__name__})"
        else:
            sent = ""
        time.sleep(3.0)
        mid = state()
        time.sleep(2.0)
        after = state()
        log.seek(0)
        errors = [line for line in log.read().splitlines() if line.strip()]
        peak = _peak(loop.pid)
        if after is None:
            return f"hang or crash: no answer from the loop{sent}", False, peak, time.monotonic() - began
        problems = []
        if not after["alive"]:
            problems.append(f"crashed: {errors[-1][:150] if errors else 'loop thread ended'}")
        elif after["steps"] <= mid["steps"]:
            problems.append(f"frozen (no step in 2 s; speed {after['speed']}, paused {after['paused']})")
        if after["speed"] != "1.0":
            problems.append(f"accepted: speed {after['speed']}")
        if after["paused"] != "False":
            problems.append(f"accepted: paused {after['paused']}")
        if after["command"] is not None and not all(map(math.isfinite, after["command"])):
            problems.append(f"accepted: command {after['command']}")
        grown = after["rss"] - before["rss"]
        if grown > 64 << 20 or peak > MAX_PEAK:
            problems.append(f"memory +{grown >> 20} MiB after the page left")
        if problems:
            return "; ".join(problems) + sent, False, peak, time.monotonic() - began
        return f"refused (loop unchanged, +{grown >> 20} MiB){sent}", True, peak, time.monotonic() - began
    finally:
        with contextlib.suppress(Exception):
            page and page.close()
        with contextlib.suppress(Exception):
            loop.kill()
            loop.wait(10)


def _peak(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return 0


# --- the table ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--rows", default="1,2,3,4,5,6,7,8,9,10", help="comma-separated rows to run")
    parser.add_argument("--memory", type=float, default=3.0, help="GiB of address space per case")
    parser.add_argument("--timeout", type=float, default=30.0, help="s per case, imports included")
    parser.add_argument("--out", help="also write the table here")
    args = parser.parse_args(argv)
    tree, rows, memory = (
        os.path.abspath(args.tree),
        {int(r) for r in args.rows.split(",")},
        int(args.memory * GIB),
    )
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the inputs' folder removed all the same
    work = tempfile.mkdtemp(prefix="hostile_probe_")
    with open(os.path.join(work, "sitecustomize.py"), "w") as f:
        f.write(SHIM)
    env = {**os.environ, "PROBE_TREE": tree, "PYTHONPATH": os.pathsep.join([tree, work]), "TMPDIR": work}
    found = subprocess.run([sys.executable, "-c", "import unienv, unienv.tasks as t; print(unienv.__file__, t.__file__)"], env=env, cwd=work,
                           capture_output=True, text=True)  # fmt: skip
    assert all(p.startswith(tree + os.sep) for p in found.stdout.split()), (
        found.stdout,
        found.stderr[-2000:],
    )
    head = f"# {tree} ({_commit(tree)}), {args.memory:g} GiB address space, {args.timeout:g} s per case"
    lines = [head, f"{'row':>3}  {'case':58s} {'peak MiB':>8} {'s':>6}  verdict  outcome"]
    print("\n".join(lines), flush=True)
    bad = 0

    def report(row, name, ours, outcome, ok, peak, seconds):
        nonlocal bad
        bad += not ok
        mark = "*" if ours else " "
        line = f"{row:>3}{mark} {name[:58]:58s} {peak / 2**20:8.0f} {seconds:6.1f}  {'ok ' if ok else 'BAD'}      {outcome}"
        lines.append(line)
        print(line, flush=True)

    try:
        for case in cases(tree, work, env, rows):
            if case.row not in rows:
                continue
            before = set(os.listdir(os.path.join(work, "out")))
            status, stdout, stderr, peak, seconds = run(
                case.args, {**env, **case.environ}, work, memory, args.timeout
            )
            outcome, ok = classify(case, status, stdout, stderr)
            left = sorted(set(os.listdir(os.path.join(work, "out"))) - before)
            if left and case.want == "refused":  # a refusal writes nothing
                outcome, ok = f"{outcome} (wrote {', '.join(left)})", False
            if peak > MAX_PEAK:  # the interpreter, torch and MuJoCo take 250-750 MiB
                outcome, ok = f"{outcome} (peak over {MAX_PEAK >> 20} MiB)", False
            report(case.row, case.name, case.ours, outcome, ok, peak, seconds)
        if 3 in rows:
            for name, ours, act in viewer_cases():
                outcome, ok, peak, seconds = viewer_case(act, env, work, memory)
                report(3, name, ours, outcome, ok, peak, seconds)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lines.append(f"# {bad} BAD; * marks the probe's own cases (beyond the issue's)")
    print(lines[-1])
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return bad


def _commit(tree: str) -> str:
    done = subprocess.run(["git", "-C", tree, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "?"


if __name__ == "__main__":
    sys.exit(min(main(), 100))
