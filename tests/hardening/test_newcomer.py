"""What a new user meets first: each command and snippet does what the README says, and a mistake
gets one line that says how to fix it."""

import os
import subprocess
import sys

import pytest

from unienv.backends.base import load_mjmodel
from unienv.dynamics.__main__ import resolve_scene, shipped_scenes
from unienv.errors import UnknownNameError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(args, cwd):
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


def test_a_shipped_robot_is_found_by_name_or_by_its_checkout_path_from_anywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    arm = shipped_scenes()["arm7"]
    assert os.path.isfile(arm)
    assert resolve_scene("arm7") == resolve_scene("tasks/assets/arm7.xml") == resolve_scene("arm7.xml") == arm
    assert os.path.basename(resolve_scene("ant")) == "ant.xml"  # Gymnasium's
    with pytest.raises(UnknownNameError, match="did you mean 'arm7'"):
        resolve_scene("arm77")


def test_dynamics_check_of_an_unknown_scene_is_one_line(tmp_path):
    done = run(["-m", "unienv.dynamics", "check", "arm77"], tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: unknown scene") and "did you mean 'arm7'" in done.stderr


def test_bench_says_did_you_mean_for_a_misspelled_task(tmp_path):
    done = run(["-m", "unienv.bench", "--task", "cartpol"], tmp_path)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "usage" not in done.stderr
    assert "did you mean 'cartpole'" in done.stderr


def test_play_writes_its_video_and_nothing_else_even_when_it_fails(tmp_path):
    done = run([os.path.join(ROOT, "play.py"), "steps=2", "num_envs=1", "video.envs=1"], tmp_path)
    assert done.returncode == 0, done.stderr
    failed = run([os.path.join(ROOT, "play.py"), "num_envs=0"], tmp_path)
    assert failed.returncode == 1
    assert sorted(os.listdir(tmp_path)) == ["videos"]
    assert os.listdir(tmp_path / "videos") == ["cartpole_mujoco_random.mp4"]


def test_a_comma_list_without_m_says_to_sweep_or_write_a_list(tmp_path):
    done = run([os.path.join(ROOT, "play.py"), "dr=default", "dr.friction.range=0.5,1.0"], tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "add -m" in done.stderr and '"dr.friction.range=[0.5,1.0]"' in done.stderr
    assert os.listdir(tmp_path) == []


def test_list_shows_terrain_tasks_only_on_backends_with_heightfields_and_mjwarp_on_the_cpu(monkeypatch):
    import io

    from unienv import __main__ as command
    from unienv.tasks import task_class

    rough, flat = task_class("quadruped_rough")(), task_class("quadruped")()
    assert "height_scan" in command.needs(rough, load_mjmodel(rough.scene))
    assert "height_scan" not in command.needs(flat, load_mjmodel(flat.scene))
    features = {"body_views": True, "contact_forces": True, "mj_fields": True, "height_scan": True}
    monkeypatch.setattr(
        command,
        "backend_features",
        lambda: {
            "mujoco": features,
            "genesis": {**features, "mj_fields": False, "height_scan": False},
            "mjwarp": {**features, "device": "cpu"},
        },
    )
    out = io.StringIO()
    command.list_tasks(out)
    rows = {line.split()[0]: line for line in out.getvalue().splitlines()}
    assert rows["quadruped_rough"].endswith("mujoco, mjwarp (device=cpu)")
    assert rows["quadruped"].endswith("mujoco, genesis, mjwarp (device=cpu)")
    assert rows["go1_velocity"].endswith("mujoco, genesis, mjwarp (device=cpu)")
    assert rows["g1_velocity"].endswith(
        "mujoco, mjwarp (device=cpu)"
    )  # its contact pairs: Genesis refuses them
    assert "mjwarp: no CUDA GPU here; runs on the CPU with device=cpu" in out.getvalue()


PAIRED = """<mujoco><worldbody><geom name="floor" type="plane" size="1 1 .1"/>
<body><freejoint/><geom name="ball" size=".1"/></body></worldbody>{pairs}</mujoco>"""


def test_genesis_scene_check_names_what_it_refuses_without_starting_genesis():
    code = f"""
import sys, mujoco
from unienv.backends import BACKENDS
from unienv.backends.genesis_checks import check_scene
from unienv.errors import CapabilityError
xml = {PAIRED!r}
genesis = BACKENDS["genesis"]
assert genesis.accepts(mujoco.MjModel.from_xml_string(xml.format(pairs="")), "ball")
paired = mujoco.MjModel.from_xml_string(xml.format(pairs='<contact><pair geom1="floor" geom2="ball"/></contact>'))
assert not genesis.accepts(paired, "ball") and BACKENDS["mujoco"].accepts(paired, "ball")
try:
    check_scene(paired, "ball")
except CapabilityError as e:
    assert "explicit contact pairs" in str(e) and "'ball'" in str(e), e
else:
    raise AssertionError("accepted")
assert "genesis" not in sys.modules
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


def test_list_without_dm_control_names_the_dmc_tasks_and_their_install(monkeypatch):
    import io

    from unienv import __main__ as command
    from unienv.errors import install_command
    from unienv.tasks import DMC_TASKS, TASKS

    monkeypatch.setattr(command, "backend_features", lambda: {"mujoco": {}})
    core = {name: path for name, path in TASKS.items() if name not in DMC_TASKS}
    monkeypatch.setattr(command, "TASKS", core)  # as on an install without the dmc extra
    out = io.StringIO()
    command.list_tasks(out)
    line = f"dmc_*: the 25 DeepMind Control Suite tasks are available with {install_command('dmc')}"
    assert line in out.getvalue().splitlines() and "dmc_walker_walk" not in out.getvalue()
    monkeypatch.setattr(command, "TASKS", {**core, **DMC_TASKS})  # with it: the tasks, no hint
    out = io.StringIO()
    command.list_tasks(out)
    assert "dmc_walker_walk" in out.getvalue() and "are available with" not in out.getvalue()
