"""A web viewer for headless machines (viser): `python play.py viewer=web`, `python train.py viewer=web`.

The scene is the task's MJCF (unienv.viewer.scene) with each shown env's bodies posed from its
state through the backend contract, so every engine shows the same way; the server, its safe
defaults and the page's controls are unienv.viewer.server; what feeds it, play's loop or a
running training, is unienv.viewer.live. viser is imported only when a viewer starts (the
`viewer` extra); `from_cfg` checks everything a viewer needs before the run builds anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from unienv.errors import ArgumentError
from unienv.viewer.server import Options, check


def from_cfg(cfg: Mapping[str, Any] | None, num_envs: int) -> Options | None:
    """The checked Options of a `viewer` config (cfg/viewer/), or None for viewer=none."""
    if cfg is None or cfg.get("name", "none") == "none":
        return None
    if cfg["name"] != "web":
        raise ArgumentError(f"viewer: expected none or web, got {cfg['name']!r}")
    envs = cfg.get("envs")
    if envs is not None and not isinstance(envs, int | list | tuple) and not hasattr(envs, "__iter__"):
        raise ArgumentError(f"viewer.envs: expected an env index or a list of them, got {envs!r}")
    envs = () if envs is None else (envs,) if isinstance(envs, int) else tuple(envs)
    fps = cfg.get("fps", 30.0)
    if isinstance(fps, bool) or not isinstance(fps, int | float) or fps <= 0:
        raise ArgumentError(f"viewer.fps: expected a number > 0, got {fps!r}")
    budget = cfg.get("budget", 0.05)
    if isinstance(budget, bool) or not isinstance(budget, int | float) or not 0 < budget <= 1:
        raise ArgumentError(f"viewer.budget: expected a share of a core in (0, 1], got {budget!r}")
    options = Options(
        host=str(cfg.get("host", "127.0.0.1")),
        port=cfg.get("port", 8080),
        envs=envs,
        fps=float(fps),
        budget=float(budget),
        spacing=float(cfg.get("spacing", 1.5)),
    )
    return check(options, num_envs)


def watch(options: Options | None):
    """train.py's hook: a function of the env that starts watching it (returns what to close), or None."""
    if options is None:
        return None
    from unienv.viewer.live import Watch

    return lambda env: Watch(env, options)


__all__ = ["Options", "check", "from_cfg", "watch"]
