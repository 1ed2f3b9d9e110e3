"""The viser server: where it listens, the scene of the shown envs, and the page's controls.

Safe by default: it binds to 127.0.0.1 and prints the URL with the `ssh -L` line that reaches
it from another machine; a host other than a loopback address prints a warning. Whatever a page
sends is checked on the server before viser applies it (unienv.viewer.gate): only a control's
value, of its type and within its bounds, reaches the run. Everything that
can be wrong (viser missing, a host that is not an address, a port in use, an env index out of
range) is checked by `check` before anything starts, so a run either starts with its viewer or not
at all. The server runs in viser's own threads: closing the page never stops the run, and the
run never waits for a page.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
import socket
import sys
import threading

import numpy as np

from unienv.backends.scene import load_mjmodel
from unienv.errors import ArgumentError
from unienv.viewer.gate import Gate, check_viser

DEFAULT_ENVS = 4  # envs tiled when none are chosen, as play.py's videos tile video.envs
SPEEDS = (0.1, 4.0)  # the page's speed slider: real time times this


@dataclasses.dataclass(frozen=True)
class Options:
    """Where the viewer listens and what it shows (cfg/viewer/web.yaml)."""

    host: str = "127.0.0.1"
    port: int = 8080
    envs: tuple[int, ...] = ()  # env indices shown; () tiles the first DEFAULT_ENVS
    fps: float = 30.0  # frames sent per second at most
    budget: float = 0.05  # while training: sending frames takes at most this share of a core's time
    spacing: float = 1.5  # m between the tiled envs


def check(options: Options, num_envs: int) -> Options:
    """options with its envs resolved, or one ArgumentError naming what is wrong; starts nothing."""
    try:
        import viser  # noqa: F401
    except ImportError:
        raise ArgumentError("viewer=web: needs viser; pip install 'unienv[viewer]'") from None
    check_viser()
    host = options.host
    if host != "localhost":
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise ArgumentError(
                f"viewer.host: expected an IP address (127.0.0.1, 0.0.0.0, ::1) or localhost, got {host!r}"
            ) from None
    port = options.port
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ArgumentError(f"viewer.port: expected a port number in 1..65535, got {port!r}")
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a listener refuses; TIME_WAIT not
        try:
            probe.bind((host, port))
        except OSError as error:
            raise ArgumentError(
                f"viewer.port: {host}:{port} is not free ({error.strerror}); choose another viewer.port="
            ) from None
    envs = tuple(options.envs) or tuple(range(min(DEFAULT_ENVS, num_envs)))
    bad = [e for e in envs if isinstance(e, bool) or not isinstance(e, int) or not 0 <= e < num_envs]
    if bad:
        raise ArgumentError(f"viewer.envs: expected env indices in 0..{num_envs - 1}, got {bad[0]!r}")
    return dataclasses.replace(options, envs=envs)


def announce(host: str, port: int) -> None:
    """Print the URL, how to reach it over SSH, and a warning for a host other than loopback."""
    local = host in ("localhost", "::1") or ipaddress.ip_address(host).is_loopback
    url = f"viewer: http://{'localhost' if local else host}:{port}"
    if local:  # one write: a Ctrl-C never falls between the two lines
        print(
            f"{url}\nviewer: from another machine, `ssh -L {port}:localhost:{port} <this host>` "
            f"then open http://localhost:{port}",
            flush=True,
        )
    else:
        print(url, flush=True)
        print(
            f"viewer: warning: listening on {host}, reachable by anyone who can reach this machine "
            "(the default, 127.0.0.1, is reachable only through ssh -L)",
            file=sys.stderr,
            flush=True,
        )


class Viewer:
    """A started viser server with env.task's scene for options.envs and the page's controls.

    The controls' values are read by whoever drives the env (unienv.viewer.live): `paused`,
    `speed`, and the requests `take_step()`, `take_reset()`, `take_command()`, and, with
    `play_button`, `take_play()`."""

    def __init__(self, env, options: Options, *, controls: bool = True, play_button: bool = False):
        import viser

        from unienv.viewer import scene  # trimesh, which comes with viser

        logging.getLogger("websockets").setLevel(logging.WARNING)  # no line per connection in the run's log
        self.options, self.env_ids = options, np.asarray(options.envs)
        self.model = load_mjmodel(env.task.scene)
        self.poses = scene.Poses(env.backend, self.model)
        self.server = viser.ViserServer(host=options.host, port=options.port, verbose=False)
        self.gate = Gate(self.server)  # before the first page can connect, its controls added below
        self.server.scene.set_up_direction("+z")
        self.frames = scene.build(self.server, self.model, len(self.env_ids), options.spacing)
        offsets = scene.tile_offsets(len(self.env_ids), options.spacing)
        center, reach = offsets.mean(0), 1.5 + float(np.ptp(offsets[:, :2], 0).max(initial=0.0))
        self.server.initial_camera.look_at = tuple(center + (0.0, 0.0, 0.3))
        self.server.initial_camera.position = tuple(center + (reach, -reach, 0.8 * reach))
        self._lock = threading.Lock()
        self._step = self._reset = self._play = False
        self._command = None
        gui = self.server.gui
        self.status = gui.add_markdown("starting")
        allow = self.gate.allow
        if controls:
            self._paused = allow(gui.add_checkbox("Pause", False), "checkbox")
            allow(gui.add_button("Step"), "button").on_click(lambda _: self._request("_step"))
            allow(gui.add_button("Reset"), "button").on_click(lambda _: self._request("_reset"))
            self._speed = allow(
                gui.add_slider("Speed", *SPEEDS, step=0.1, initial_value=1.0), "slider", *SPEEDS
            )
            # the commands a task declares (deployment(): the velocity tasks'), by name, in range
            commands = (env.task.deployment() or {}).get("commands", {})
            self._command_inputs = [
                allow(
                    gui.add_slider(
                        name, min=low, max=high, step=0.05, initial_value=min(max(0.0, low), high)
                    ),
                    "slider",
                    low,
                    high,
                )  # fmt: skip
                for name, (low, high) in commands.items()
            ]
            if commands:
                allow(gui.add_button("Apply command"), "button").on_click(lambda _: self._set_command())
        if play_button:
            allow(gui.add_button("Play the latest policy"), "button").on_click(
                lambda _: self._request("_play")
            )
        self.terms = gui.add_markdown("")
        announce(options.host, options.port)

    @property
    def paused(self) -> bool:
        return self._paused.value

    @property
    def speed(self) -> float:
        return float(self._speed.value)

    def _request(self, name: str) -> None:
        with self._lock:
            setattr(self, name, True)

    def _set_command(self) -> None:
        with self._lock:
            self._command = tuple(float(slider.value) for slider in self._command_inputs)

    def _take(self, name: str):
        with self._lock:
            value = getattr(self, name)
            setattr(self, name, None if name == "_command" else False)
        return value

    def take_step(self) -> bool:
        return self._take("_step")

    def take_reset(self) -> bool:
        return self._take("_reset")

    def take_command(self) -> tuple[float, ...] | None:
        return self._take("_command")

    def take_play(self) -> bool:
        return self._take("_play")

    def show(self, pos: np.ndarray, quat: np.ndarray) -> None:
        """Pose every body of the shown envs: pos (K, nbody, 3), quat (K, nbody, 4) wxyz."""
        with self.server.atomic():
            for k, frames in enumerate(self.frames):
                for b, frame in frames.items():
                    frame.position, frame.wxyz = pos[k, b], quat[k, b]

    @property
    def watched(self) -> bool:
        """Whether a page is connected (with none, nothing is read or sent)."""
        return bool(self.server.get_clients())

    def refresh(self) -> None:
        """Read the shown envs' poses from the backend and send them, where a page is open."""
        if self.watched:
            self.show(*self.poses(self.env_ids))

    def report(self, status: str, terms: dict[str, float] | None = None) -> None:
        """The status line (with the count of pages' messages refused, if any) and, where given,
        reward terms of the first shown env as bars."""
        refused = self.gate.count()
        self.status.content = status + (f" ({refused} messages from pages refused)" if refused else "")
        if terms:
            scale = max(1e-9, *(abs(v) for v in terms.values()))
            rows = [
                f"| {name} | {value:+.4f} | {'█' * round(10 * abs(value) / scale)} |"
                for name, value in terms.items()
            ]
            self.terms.content = "\n".join(["| reward term | value | |", "|---|---:|---|", *rows])

    def close(self) -> None:
        self.server.stop()
