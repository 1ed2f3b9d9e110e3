"""The two ways the viewer is fed: play (it drives the env) and train (it watches one).

`play`: the viewer's loop steps the env under a policy in real time times the page's speed,
honouring pause, step, reset and the command typed on the page (written to the shown envs' task
memory, and held there across their resets); it sends a frame after each step, at most
`options.fps` per second, with the first shown env's reward terms and the episode statistics.

`Watch`: during training, a daemon thread wakes `fps` times a second (fewer where a frame would
take more than `budget` of a core's time) and, while a page is open, sends the shown envs'
current poses; the training loop never calls it and never waits for it (the slot it reads is the
env's own live state, the latest there is; nothing queues). A frame read while the engine writes
may mix two consecutive physics steps: a visual blemish only, since nothing is written back.

The page's "Play the latest policy" asks the training loop, at its next iteration's end (where
the weights are whole), for a policy file (`wants_policy`, then `play`): `Player` plays it on
the next port, a second tab, in a thread of its own, on a few mujoco envs on the CPU built with
the task and options the file names, in real time. A newer click replaces the playing policy.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import threading
import time

import numpy as np
import torch

import unienv
from unienv.errors import UnienvError
from unienv.training.policy import load_policy
from unienv.training.rollout import make_policy
from unienv.viewer.server import Options, Viewer, check


def play(
    env,
    policy,
    options: Options,
    *,
    seed: int | None = None,
    steps: int | None = None,
    stop: threading.Event | None = None,
    title: str = "",
) -> int:
    """Step env under policy with the page's controls until Ctrl-C, `stop` is set or `steps` env
    steps are done (for tests); returns the steps done. `title` heads the status line."""
    stop = threading.Event() if stop is None else stop
    with _ctrl_c_sets(stop):
        return _play(env, policy, options, seed, steps, stop, title)


@contextlib.contextmanager
def _ctrl_c_sets(stop: threading.Event):
    """In the main thread, a first Ctrl-C sets `stop` (the loop ends after its step and closes
    the page) instead of raising wherever the loop is: a KeyboardInterrupt inside the page's
    server calls could leave it holding a lock its shutdown waits for. A second Ctrl-C raises."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)

    def first(signum, frame):
        stop.set()
        signal.signal(signal.SIGINT, previous)

    signal.signal(signal.SIGINT, first)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _play(env, policy, options: Options, seed, steps, stop: threading.Event, title: str) -> int:
    viewer = Viewer(env, options)
    done_steps, episodes, returns, command = 0, 0, [], None
    last_frame = 0.0
    try:  # from the page's start on: a Ctrl-C during the first reset must close it too
        ids = torch.as_tensor(viewer.env_ids, device=env.device)
        obs, _ = env.reset(seed=seed)
        while (steps is None or done_steps < steps) and not stop.is_set():
            start = time.perf_counter()
            if viewer.take_reset():
                obs, _ = env.reset(seed=seed)
            if (new := viewer.take_command()) is not None:
                command = new
            if command is not None:
                _write_command(env, viewer.env_ids, command)
            if viewer.paused and not viewer.take_step():
                viewer.refresh()
                time.sleep(0.05)
                continue
            obs, reward, terminated, truncated, info = env.step(policy(obs))
            done_steps += 1
            if "final_info" in info:
                done = np.asarray(torch.as_tensor(info["_final_info"]).cpu())
                finished = torch.as_tensor(info["final_info"]["episode_stats"]["r"]).cpu().numpy()[done]
                episodes += len(finished)
                returns = (returns + finished.tolist())[-100:]
            if time.perf_counter() - last_frame >= 1.0 / options.fps:
                last_frame = time.perf_counter()
                viewer.refresh()
                terms = {k: float(torch.as_tensor(v)[ids[0]]) for k, v in info["reward_terms"].items()}
                mean = f"{np.mean(returns):.2f}" if returns else "-"
                viewer.report(
                    f"{title}**{env.task.name}** step {done_steps}, {episodes} episodes ended, "
                    f"mean return (last 100) {mean}, reward of env {int(ids[0])} "
                    f"{float(torch.as_tensor(reward)[ids[0]]):+.4f}",
                    terms,
                )
            time.sleep(max(0.0, env.task.dt / viewer.speed - (time.perf_counter() - start)))
    finally:
        viewer.close()
    return done_steps


def _write_command(env, env_ids: np.ndarray, command: tuple[float, ...]) -> None:
    """The page's command into the shown envs' task memory: a task that declares commands
    (`Task.deployment()`) keeps them in memory["command"], in their declared order, and reads
    them at every step."""
    memory = env._memory["command"]  # the env's per-env task memory: no public setter exists
    if isinstance(memory, torch.Tensor):
        memory[torch.as_tensor(env_ids, device=memory.device)] = torch.tensor(
            command, dtype=memory.dtype, device=memory.device
        )
    else:
        memory[env_ids] = command


class Watch:
    """A viewer of a running env that no one drives: `fps` frames a second from a daemon thread,
    and a button that plays the latest policy on the next port (`Player`)."""

    def __init__(self, env, options: Options):
        self.viewer = Viewer(env, options, controls=False, play_button=True)
        self.options = options
        self.frames = 0
        self.player: Player | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="unienv-viewer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        wait = period = 1.0 / self.options.fps
        while not self._stop.wait(wait):
            start = time.thread_time()  # this thread's CPU time: waiting for the GIL is not its cost
            try:
                self.viewer.refresh()
            except Exception as error:  # the env closed under it, or the engine refused: stop watching
                self.viewer.report(f"stopped: {type(error).__name__}: {error}")
                return
            # the frame's cost is at most `budget` of the time between frames: fewer frames, not a slower run
            wait = max(period, (time.thread_time() - start) / self.options.budget)
            self.frames += self.viewer.watched
            if self.frames % round(self.options.fps) == 1:  # the status line about once a second
                self.viewer.report(f"training: {self.frames} frames sent{self._playing()}")

    def wants_policy(self) -> bool:
        """Whether the page asked to play the latest policy since the last call (the training
        loop asks at each iteration's end)."""
        return self.viewer.take_play()

    def play(self, path: str, label: str) -> None:
        """Play the policy file at path (the training's `label`, e.g. its iteration) on the next
        port, in place of the one playing; a port in use or a refused file is reported on the page."""
        if self.player is not None:
            self.player.close()
        port = self.options.port + 1
        self.player = Player(path, dataclasses.replace(self.options, port=port), label)
        self.viewer.report(f"training: {self.frames} frames sent{self._playing()}")

    def _playing(self) -> str:
        player = self.player
        if player is None:
            return ""
        if player.error is not None:
            return f"; the policy of {player.label} did not start: {player.error}"
        return f"; playing the policy of {player.label} at [{player.url}]({player.url})"

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        if self.player is not None:
            self.player.close()
        self.viewer.close()


class Player:
    """A policy file played in real time on `options.envs`' count of mujoco envs on the CPU, with
    its own page (`play`), all in a daemon thread (the caller waits for nothing); `error` says why
    it stopped, if it could not start."""

    def __init__(self, path: str, options: Options, label: str):
        self.label, self.error = label, None
        host = "localhost" if options.host in ("127.0.0.1", "::1") else options.host
        self.url = f"http://{host}:{options.port}"
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(path, options), name="unienv-player", daemon=True
        )
        self._thread.start()

    def _run(self, path: str, options: Options) -> None:
        try:
            _, meta = load_policy(path)
            env = unienv.make(
                meta["task"], num_envs=len(options.envs), task_options=meta["task_options"], seed=0
            )
        except (UnienvError, OSError) as error:
            self.error = str(error)
            return
        try:
            options = check(dataclasses.replace(options, envs=()), env.num_envs)
            policy = make_policy(path, env)
            play(env, policy, options, stop=self._stop, title=f"policy of {self.label}: ")
        except (UnienvError, OSError) as error:
            self.error = str(error)
        finally:
            env.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)
