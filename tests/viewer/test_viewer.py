"""The web viewer: a page in headless Chromium shows the robot; the poses it sends are MuJoCo's
xpos/xquat on every engine; bad options stop the run before anything starts; a training watcher
sends frames without the loop calling it."""

import os
import shutil
import socket
import subprocess
import sys
import time

import mujoco
import numpy as np
import pytest

pytest.importorskip("viser")

import unienv  # noqa: E402
from unienv.errors import ArgumentError  # noqa: E402
from unienv.training.rollout import make_policy  # noqa: E402
from unienv.viewer import from_cfg  # noqa: E402
from unienv.viewer.live import Watch  # noqa: E402
from unienv.viewer.scene import Poses  # noqa: E402
from unienv.viewer.server import Options, Viewer, check  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(__file__))
import browser  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def quadruped():
    env = unienv.make("quadruped", num_envs=6, seed=3)
    env.reset(seed=3)
    policy = make_policy("random", env)
    for _ in range(5):
        env.step(policy(None))
    yield env
    env.close()


@pytest.mark.skipif(
    browser.chromium() is None, reason="needs chromium (apt-get install chromium; .ci/run does)"
)
def test_page_shows_the_robot(quadruped, tmp_path):
    """One env, centred: the middle of the page holds the robot's pixels, the floor's edge holds none."""
    viewer = Viewer(quadruped, check(Options(port=free_port(), envs=(2,)), quadruped.num_envs))
    import threading

    done = threading.Event()

    def frames():  # what play's loop does: poses sent while a page is open
        while not done.wait(0.1):
            viewer.refresh()

    sender = threading.Thread(target=frames)
    sender.start()
    try:
        shot = tmp_path / "viewer.png"
        browser.screenshot(f"http://127.0.0.1:{viewer.options.port}/", str(shot), wait_s=20)
    finally:
        done.set()
        sender.join()
        viewer.close()
    image = np.asarray(__import__("imageio").v2.imread(shot))[..., :3].astype(int)
    h, w = image.shape[:2]
    below = image[int(0.75 * h) :, int(0.1 * w) : int(0.4 * w)]  # floor only (right of the axes gizmo)
    floor = np.median(below.reshape(-1, 3), 0)
    centre = image[int(0.3 * h) : int(0.75 * h), int(0.3 * w) : int(0.65 * w)]
    robot = np.abs(centre - floor).sum(-1) > 60
    assert robot.mean() > 0.02, f"robot pixels: {robot.mean():.4f} of the page's centre"
    assert (np.abs(below - floor).sum(-1) > 60).mean() < 0.01
    if os.environ.get("UNIENV_DOCS_SCREENSHOT"):  # refresh the docs' picture
        shutil.copy(shot, os.path.join(ROOT, "docs", "viewer.png"))


ENGINES = ["mujoco", "mjwarp", pytest.param("genesis", marks=pytest.mark.slow)]  # genesis: one build


@pytest.mark.parametrize("backend", ENGINES)
def test_sent_poses_are_mujocos(backend):
    """The poses the viewer sends for envs 1 and 3 after a few random steps equal MuJoCo's xpos and
    xquat for the state that engine reports, to 1e-6, and its own body views to float precision."""
    pytest.importorskip({"mujoco": "mujoco", "mjwarp": "mujoco_warp", "genesis": "genesis"}[backend])
    device = None if backend == "mujoco" else "cpu"  # Warp's and Genesis's CPU devices here
    env = unienv.make("quadruped", backend=backend, num_envs=4, seed=1, device=device)
    try:
        env.reset(seed=1)
        policy = make_policy("random", env)
        for _ in range(8):
            env.step(policy(None))
        model = mujoco.MjModel.from_xml_path(env.task.scene)
        pos, quat = Poses(env.backend, model)(np.array([1, 3]))
        data = mujoco.MjData(model)
        qpos = env.backend.get_state_views()["qpos"].double().cpu().numpy()
        for k, i in enumerate((1, 3)):
            data.qpos[:] = qpos[i]
            mujoco.mj_forward(model, data)
            np.testing.assert_allclose(pos[k], data.xpos, atol=1e-6)
            np.testing.assert_allclose(quat[k], data.xquat, atol=1e-6)
        views = env.backend.get_body_views(np.arange(model.nbody))
        np.testing.assert_allclose(pos, views.pos[[1, 3]].double().cpu().numpy(), atol=2e-4)
        assert np.abs(pos[0] - pos[1]).max() > 1e-3  # two envs, two states
    finally:
        env.close()


def test_bad_options_are_one_line_each():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ArgumentError, match=rf"viewer.port: 127.0.0.1:{port} is not free"):
            check(Options(port=port), 4)
    with pytest.raises(ArgumentError, match=r"viewer.envs: expected env indices in 0..3, got 7"):
        check(Options(port=free_port(), envs=(0, 7)), 4)
    with pytest.raises(ArgumentError, match=r"viewer.host: expected an IP address .* got 'my laptop'"):
        check(Options(host="my laptop", port=free_port()), 4)
    with pytest.raises(ArgumentError, match=r"viewer.port: expected a port number"):
        check(Options(port=70000), 4)
    with pytest.raises(ArgumentError, match=r"viewer: expected none or web, got 'gui'"):
        from_cfg({"name": "gui"}, 4)
    assert from_cfg({"name": "none"}, 4) is None
    assert from_cfg({"name": "web", "port": free_port(), "envs": 2}, 4).envs == (2,)


def test_play_refuses_a_taken_port_before_it_starts():
    """play.py viewer=web on a port in use: one error line, exit status 1, no env built, no video."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = subprocess.run(
            [sys.executable, "play.py", "task=quadruped", "viewer=web", f"viewer.port={port}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert out.returncode == 1, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert lines == [
        f"error: viewer.port: 127.0.0.1:{port} is not free (Address already in use); choose another viewer.port="
    ]
    assert "viewer: http" not in out.stdout


def test_watch_sends_frames_while_the_loop_steps(quadruped):
    """The watcher sends nothing with no page open, then frames at its rate to a page while the
    env steps; closing it leaves the env usable (the run goes on)."""
    import threading

    from unienv.viewer.__main__ import remote_page

    watch = Watch(quadruped, check(Options(port=free_port(), fps=50.0), quadruped.num_envs))
    policy = make_policy("random", quadruped)
    start = time.monotonic()
    while time.monotonic() - start < 0.5:
        quadruped.step(policy(None))
    assert watch.frames == 0
    received = []
    page = threading.Thread(
        target=lambda: received.append(remote_page(f"ws://127.0.0.1:{watch.options.port}", 60.0))
    )
    page.start()
    while not watch.viewer.watched and time.monotonic() - start < 30:
        time.sleep(0.05)
    # frames come at fps=50 at most, fewer where a frame's cost binds the watcher's CPU budget
    # (a loaded machine): step for a second and until three were sent; the rate never passes fps
    first, start = watch.frames, time.monotonic()
    while (watch.frames - first < 3 or time.monotonic() - start < 1.0) and time.monotonic() - start < 30:
        quadruped.step(policy(None))
    sent, elapsed = watch.frames - first, time.monotonic() - start
    watch.close()
    page.join()
    assert 3 <= sent <= 50 * elapsed + 2 and received[0] > 0
    quadruped.step(policy(None))


def _serve_page(args, cwd, stop=True):
    """Run a command that starts a viewer; once it prints its URL, fetch the page; then SIGINT
    it if `stop`. Returns (the page's first bytes, stdout, stderr, exit status)."""
    import signal
    import urllib.request

    environ = {**os.environ, "PYTHONFAULTHANDLER": "1"}  # a hung run's SIGABRT prints every thread's stack
    process = subprocess.Popen(
        args, cwd=cwd, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lines = []
    for line in process.stdout:
        lines.append(line)
        if line.startswith("viewer: from another machine"):  # printed with the URL, just before it
            break
    url = lines[-2].split()[1]
    page = urllib.request.urlopen(url, timeout=30).read(200)
    if stop:
        process.send_signal(signal.SIGINT)
    try:
        out, err = process.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)
        out, err = process.communicate(timeout=60)
        pytest.fail(
            f"{args[1]} did not end within 300 s; its threads:\n{err.split('Extension modules')[0][-8000:]}"
        )
    return page, "".join(lines) + out, err, process.returncode


def test_play_serves_until_ctrl_c():
    page, out, err, status = _serve_page(
        [sys.executable, "play.py", "task=quadruped", "viewer=web", f"viewer.port={free_port()}"], ROOT
    )
    assert b"<" in page and status == 0, err
    assert "ssh -L" in out and "warning" not in err


@pytest.mark.slow
def test_train_goes_on_with_a_viewer(tmp_path):
    """train.py viewer=web serves its page while it trains and ends as it would without it."""
    rsl = pytest.importorskip("rsl_rl")
    del rsl
    args = [sys.executable, os.path.join(ROOT, "train.py"), "num_envs=16", "train.iterations=30"]
    args += ["train.runner.num_steps_per_env=16", "train.eval_steps=0", f"hydra.run.dir={tmp_path}/run"]
    args += ["viewer=web", f"viewer.port={free_port()}", f"train.policy_path={tmp_path}/policy.safetensors"]
    page, out, err, status = _serve_page(args, tmp_path, stop=False)
    assert b"<" in page and status == 0, err
    assert os.path.exists(tmp_path / "policy.safetensors")


def click(url: str, label: str, until: str, seconds: float = 120.0) -> str:
    """Be a page at url (ws://), click the button labelled `label` as viser's client does, and
    return the first text the server then shows that contains `until`."""
    from page import Page

    page, end = Page(url), time.monotonic() + seconds
    try:
        page.read(seconds, until=lambda p: label in p.controls)
        if label in page.controls:
            page.set(label, True)
            page.texts.clear()
            page.read(end - time.monotonic(), until=lambda p: any(until in t for t in p.texts))
            found = [t for t in page.texts if until in t]
            if found:
                return found[0]
    finally:
        page.close()
    raise AssertionError(
        f"{'no text ' + repr(until) if label in page.controls else 'no button ' + repr(label)} at {url}"
    )


@pytest.mark.slow
def test_the_page_plays_the_latest_policy_while_training_goes_on(tmp_path):
    """train.py viewer=web: "Play the latest policy" on the page writes the policy as it is at the
    next iteration's end and plays it on the next port, a second page; training goes on and ends
    as asked (here by Ctrl-C after both pages were served)."""
    import signal
    import threading
    import urllib.request

    pytest.importorskip("rsl_rl")
    port = free_port()
    while not _free(port + 1):
        port = free_port()
    args = [sys.executable, os.path.join(ROOT, "train.py"), "task=quadruped", "num_envs=8"]
    args += ["train.iterations=100000", "train.runner.num_steps_per_env=8", f"hydra.run.dir={tmp_path}/run"]
    args += ["viewer=web", f"viewer.port={port}", "train.eval_steps=0"]
    process = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout), daemon=True)
    reader.start()
    try:
        wait_for(lambda: f"viewer: http://localhost:{port}\n" in lines, process, lines)
        status = click(f"ws://127.0.0.1:{port}", "Play the latest policy", until="playing the policy of")
        assert "playing the policy of iteration " in status and f"http://localhost:{port + 1}" in status
        wait_for(lambda: f"viewer: http://localhost:{port + 1}\n" in lines, process, lines)
        page = urllib.request.urlopen(f"http://127.0.0.1:{port + 1}", timeout=30).read(200)
        assert b"<" in page and process.poll() is None  # the second page is served; training goes on
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=300)
    assert process.returncode == 128 + signal.SIGINT, err[-3000:]
    env = unienv.make("quadruped", num_envs=2)
    make_policy(str(tmp_path / "run" / "viewer_policy.safetensors"), env)  # a whole policy file of this task
    env.close()


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def wait_for(condition, process, lines, seconds: float = 240.0) -> None:
    end = time.monotonic() + seconds
    while not condition():
        assert process.poll() is None and time.monotonic() < end, "".join(lines)[-3000:]
        time.sleep(0.1)


def test_a_policy_that_cannot_play_is_reported_on_the_page(quadruped, tmp_path):
    """A player whose file does not load says why in the training page's status; nothing else stops."""
    watch = Watch(quadruped, check(Options(port=free_port()), quadruped.num_envs))
    try:
        watch.play(str(tmp_path / "missing.safetensors"), "iteration 7")
        watch.player._thread.join(timeout=30)
        assert watch.player.error is not None and "missing.safetensors" in watch.player.error
        assert watch._playing().startswith("; the policy of iteration 7 did not start: ")
    finally:
        watch.close()


def test_entry_points_stay_thin():
    for name in ("play.py", "train.py"):
        with open(os.path.join(ROOT, name)) as f:
            assert len(f.read().splitlines()) <= 150, name


COMMAND_BOX = """(() => {
  const labels = [...document.querySelectorAll('label, p, span')].map(e => e.innerText.trim());
  const thumbs = [...document.querySelectorAll('[role=slider]')].map(t => ({
    min: Number(t.getAttribute('aria-valuemin')), max: Number(t.getAttribute('aria-valuemax')),
    now: Number(t.getAttribute('aria-valuenow'))}));
  const apply = [...document.querySelectorAll('button')].some(b => b.innerText.trim() === 'Apply command');
  return {labels, thumbs, apply};
})()"""


@pytest.mark.skipif(
    browser.chromium() is None, reason="needs chromium (apt-get install chromium; .ci/run does)"
)
def test_the_pages_command_box_sets_the_envs_command(quadruped):
    """In a real browser the page shows a slider per command the task declares, in its range, and
    "Apply command"; a key press moves the first command's slider and a click applies it: the
    viewer hands that command to the loop, which writes it into the shown env's task memory."""
    from unienv.viewer.live import _write_command

    commands = quadruped.task.deployment()["commands"]
    viewer = Viewer(quadruped, check(Options(port=free_port(), envs=(2,)), quadruped.num_envs))
    try:
        with browser.devtools(f"http://127.0.0.1:{viewer.options.port}/", wait_s=15) as call:

            def page(expression: str):
                reply = call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
                return reply["result"].get("value")  # none for an expression of no value

            box = page(COMMAND_BOX)
            assert box["apply"] and all(name in box["labels"] for name in commands), box["labels"]
            ranges = [(t["min"], t["max"]) for t in box["thumbs"]]
            first = ranges.index(tuple(commands["lin_vel_x"]))
            assert ranges[first : first + len(commands)] == [tuple(r) for r in commands.values()], ranges
            page(f"document.querySelectorAll('[role=slider]')[{first}].focus()")
            for kind in ("keyDown", "keyUp"):  # a trusted key press, as a user's
                call("Input.dispatchKeyEvent", {"type": kind, "key": "ArrowRight", "code": "ArrowRight",
                                                "windowsVirtualKeyCode": 39})  # fmt: skip
            page(
                "[...document.querySelectorAll('button')].find(b => b.innerText.trim() === 'Apply command').click()"
            )
            deadline, command = time.monotonic() + 10, None
            while command is None and time.monotonic() < deadline:
                command = viewer.take_command()
                time.sleep(0.05)
    finally:
        viewer.close()
    assert command == pytest.approx((0.05, 0.0, 0.0)), command  # one step (0.05) of vx from 0
    before = np.array(quadruped._memory["command"], copy=True)
    _write_command(quadruped, viewer.env_ids, command)
    after = np.asarray(quadruped._memory["command"])
    np.testing.assert_allclose(after[2], [0.05, 0.0, 0.0], rtol=1e-6)
    np.testing.assert_array_equal(np.delete(after, 2, 0), np.delete(before, 2, 0))


def test_page_command_reaches_the_shown_envs_only(quadruped):
    from unienv.viewer.live import _write_command

    before = np.array(quadruped._memory["command"], copy=True)
    _write_command(quadruped, np.array([1, 4]), (0.7, -0.2, 0.3))
    after = np.asarray(quadruped._memory["command"])
    np.testing.assert_allclose(after[[1, 4]], [[0.7, -0.2, 0.3]] * 2, rtol=1e-6)
    np.testing.assert_array_equal(after[[0, 2, 3, 5]], before[[0, 2, 3, 5]])
    obs = quadruped.observe()  # the task observes it: command x (2, 2, 0.25) in its command block
    command = quadruped.task.observation_layout["command"]
    np.testing.assert_allclose(np.asarray(obs)[1, command], [1.4, -0.4, 0.075], rtol=1e-5)


def test_loopback_by_default_and_a_warning_elsewhere(capsys):
    from unienv.viewer.server import announce

    assert Options().host == "127.0.0.1"
    announce("127.0.0.1", 8080)
    out, err = capsys.readouterr()
    assert "ssh -L 8080:localhost:8080" in out and not err
    announce("0.0.0.0", 8080)
    out, err = capsys.readouterr()
    assert out == "viewer: http://0.0.0.0:8080\n" and err.startswith("viewer: warning: listening on 0.0.0.0")


def test_mocap_markers_follow_each_env():
    """reach's target is a mocap body that each reset moves per env: the viewer poses it there."""
    env = unienv.make("reach", num_envs=3, seed=5)
    try:
        env.reset(seed=5)
        model = mujoco.MjModel.from_xml_path(env.task.scene)
        pos, _ = Poses(env.backend, model)(np.array([0, 2]))
        target = np.asarray(env._memory["target"])[[0, 2]]
        np.testing.assert_allclose(pos[:, model.body("target").id], target, atol=1e-6)
        assert np.abs(target[0] - target[1]).max() > 1e-3
    finally:
        env.close()


def test_terrain_is_drawn_as_a_heightfield():
    """quadruped_rough's generated terrain becomes a grid mesh of the heightfield's size and heights."""
    from unienv.viewer.scene import geom_mesh

    env = unienv.make("quadruped_rough", num_envs=1, seed=0)
    try:
        model = mujoco.MjModel.from_xml_path(env.task.scene)  # the scene written with the generated terrain
        hfields = [g for g in range(model.ngeom) if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_HFIELD]
        assert hfields
        mesh = geom_mesh(model, hfields[0])
        h = model.geom_dataid[hfields[0]]
        assert len(mesh.vertices) == model.hfield_nrow[h] * model.hfield_ncol[h]
        rx, ry, top, _ = model.hfield_size[h]
        extent = mesh.vertices.max(0) - mesh.vertices.min(0)
        np.testing.assert_allclose(extent[:2], [2 * rx, 2 * ry], rtol=1e-6)
        assert 0 < extent[2] <= top + 1e-9
    finally:
        env.close()


def test_without_viser_one_line_says_what_to_install():
    code = (
        "import runpy, sys; sys.modules['viser'] = None; sys.argv = ['play.py', 'viewer=web']; "
        "runpy.run_path('play.py', run_name='__main__')"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    assert out.stderr.strip() == "error: viewer=web: needs viser; pip install 'unienv[viewer]'"


def test_cost_command_measures_each_setting_by_wall_and_cpu_time(capsys):
    from unienv.viewer.__main__ import main

    port = free_port()
    result = main(
        ["--task", "cartpole", "--num-envs", "4", "--seconds", "0.5", "--rounds", "1", "--port", str(port)]
    )
    assert result["frames_per_s"] > 0  # the page connected and was sent frames while the env stepped
    for setting in ("headless", "watched, no page", "watched, a page open"):
        assert result[setting] > 0
    assert result["headless, viewer cpu"] == 0  # no viewer threads exist then
    assert 0 < result["watched, a page open, viewer cpu"] < 1  # the frames' reads and sends, within a core
    assert "% of a core" in capsys.readouterr().out


def test_a_ctrl_c_during_the_first_reset_closes_the_page(quadruped, monkeypatch):
    """play's page starts before its first reset; a Ctrl-C there (a user, or a test that sends
    SIGINT as soon as the URL is printed) closes the page's server too: its port is free after."""
    from unienv.viewer.live import play

    port = free_port()

    def interrupted(**_):
        raise KeyboardInterrupt

    monkeypatch.setattr(quadruped, "reset", interrupted)
    with pytest.raises(KeyboardInterrupt):
        play(quadruped, make_policy("random", quadruped), check(Options(port=port), quadruped.num_envs))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))  # OSError if the server still listened


def test_a_ctrl_c_in_play_ends_its_loop_after_the_step_and_closes_the_page(quadruped):
    """A Ctrl-C while play runs (here raised inside the policy's call, in the main thread) ends
    the loop after that step instead of raising inside the page's server calls; play returns
    its steps, the page's port is free, and Ctrl-C's own handler is back."""
    import signal

    from unienv.viewer.live import play

    port, random_policy, calls = free_port(), make_policy("random", quadruped), []

    def policy(obs):
        calls.append(1)
        if len(calls) == 3:
            signal.raise_signal(signal.SIGINT)
        return random_policy(obs)

    before = signal.getsignal(signal.SIGINT)
    steps = play(quadruped, policy, check(Options(port=port), quadruped.num_envs))
    assert steps == 3 and signal.getsignal(signal.SIGINT) is before
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))  # OSError if the server still listened
