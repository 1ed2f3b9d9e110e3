"""The command line's error handling: a user's mistake is one line on stderr, not a traceback.

play.py, train.py and `python -m unienv` run their main function through `run(main)`. A mistake
(an unienv error, a Hydra config error, a missing extra or file, a device that is not there)
prints `error: <what, expected, given>` and exits with status 1; anything else is a bug and keeps
its traceback. `--debug` on the command line or HYDRA_FULL_ERROR=1 in the environment shows the
full traceback for every error (`run` passes that on to `report` as UNIENV_DEBUG, and sets
HYDRA_FULL_ERROR=1 so that Hydra re-raises its config errors instead of printing them itself).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import importlib.util
import os
import re
import sys
from collections.abc import Callable, Iterator
from typing import TextIO

import yaml
from hydra.errors import HydraException, MissingConfigException, OverrideParseException
from omegaconf import OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

from unienv.errors import ArgumentError, UnienvError, install_command, unknown_name
from unienv.tasks import option_defaults

USER_ERRORS = (
    UnienvError,
    HydraException,
    OmegaConfBaseException,
    ImportError,
    FileNotFoundError,
    yaml.YAMLError,
)


# the operating system's refusals of a write (a full disk, a read-only folder, a path under a
# file, no permission): the user's to mend, so one line naming the path
WRITE_ERRORS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.ENOTDIR: "not a folder (a file is in the path)",
    errno.EEXIST: "a file is in the way",
    errno.EACCES: "permission denied",
    errno.EISDIR: "is a folder",
}


def run(main: Callable[[], object]) -> None:
    """Call `main` (a Hydra or argparse entry point); a user's mistake exits with one line."""
    debug = "--debug" in sys.argv[1:] or os.environ.get("HYDRA_FULL_ERROR") == "1"
    sys.argv = [a for a in sys.argv if a != "--debug"]
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra re-raises its config errors; report() shows them
    os.environ["UNIENV_DEBUG"] = "1" if debug else ""
    status = report(main)()
    sys.exit(status if isinstance(status, int) else 0)


def report(function: Callable) -> Callable:
    """`function` with a user's mistake printed as one `error:` line and exit status 1. Under
    @hydra.main it goes below the decorator (Hydra prints a line of its own for a job's error)."""

    @functools.wraps(function)
    def reported(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except (*USER_ERRORS, OSError) as e:
            if os.environ.get("UNIENV_DEBUG") or (
                not isinstance(e, USER_ERRORS) and e.errno not in WRITE_ERRORS
            ):
                raise
            print(f"error: {message(e)}", file=sys.stderr)
            sys.exit(1)

    return reported


def message(e: BaseException) -> str:
    """A user's mistake in one line, with the closest valid name where one was misspelled."""
    if isinstance(e, MissingConfigException) and e.options:  # task=antt
        group, _, name = (e.missing_cfg_file or "").rpartition("/")
        return str(unknown_name(f"{group or 'config'} choice", name, e.options))
    cause = e.__cause__
    if (
        isinstance(cause, (ConfigKeyError, ConfigAttributeError)) and cause.parent_node is not None
    ):  # task.episode_lenght_s=3
        parent = str(cause.full_key).rpartition(".")[0]
        valid = [str(k) for k in cause.parent_node]
        if parent == "task" and "name" in valid:  # the task's real options, not only its YAML's
            valid = list(dict.fromkeys([*valid, *option_defaults(cause.parent_node["name"])]))
        valid = [f"{parent}.{k}" if parent else k for k in valid]
        return str(unknown_name("config key", str(cause.full_key), valid))
    ambiguous = re.match(r"Ambiguous value for argument '(([^'=]+)=([^']*))'", str(e))
    if ambiguous:  # dr.friction.range=0.5,1.0 without -m: Hydra's hints are on later lines
        override, key, value = ambiguous.groups()
        return (
            f"{override!r} is ambiguous: add -m (--multirun) to sweep over {value}, "
            f'or write a list as "{key}=[{value}]"'
        )
    if isinstance(e, OverrideParseException):  # num_envs=[1
        return f"{e.override!r} is not a valid override: {e.message.splitlines()[0]}"
    if isinstance(e, ModuleNotFoundError) and not str(e).startswith("backend="):
        return f"the {e.name!r} package is not installed ({e})"
    if isinstance(e, yaml.MarkedYAMLError) and e.problem_mark is not None:  # a config file's YAML
        mark = e.problem_mark
        plain = (
            "; configs are plain YAML: a tag such as !!python is refused" if "tag" in str(e.problem) else ""
        )
        return f"{mark.name}, line {mark.line + 1}: {e.problem}{plain}"
    if isinstance(e, OSError) and e.errno in WRITE_ERRORS:
        return f"cannot write {e.filename or '?'}: {WRITE_ERRORS[e.errno]}"
    if isinstance(e, FileNotFoundError):
        return f"file not found: {e.filename or e}"
    lines = [line.strip() for line in str(e).strip().splitlines() if line.strip()]
    if not isinstance(e, UnienvError):
        return lines[0] if lines else type(e).__name__
    # a line ending in ":" introduces the next one ("options:" then its list), others are joined by ";"
    return "".join(line + (" " if line.endswith(":") else "; ") for line in lines).removesuffix("; ").strip()


def check_ints(cfg, *keys: str) -> None:
    """Raise ArgumentError naming the first config key in `keys` whose value is not an int."""
    for key in keys:
        value = OmegaConf.select(cfg, key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ArgumentError(f"{key}: expected an int, got {value!r}")


def require_extra(module: str, extra: str) -> None:
    """Exit with one line saying how to install `extra` if `module` is not importable."""
    if importlib.util.find_spec(module) is None:
        print(
            f"error: this needs the {module!r} package; install it with: {install_command(extra)}",
            file=sys.stderr,
        )
        sys.exit(1)


@contextlib.contextmanager
def engine_output_to(path: str) -> Iterator[TextIO]:
    """Send everything written to stdout and stderr (by Python and by the engines' C code alike)
    to the file `path`; yield the stream the report goes to: the stdout of the caller."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        report = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    except (AttributeError, OSError, ValueError):  # a stdout with no file behind it (captured)
        report = None
    streams = sys.stdout, sys.stderr
    saved = os.dup(1), os.dup(2)
    with open(path, "w", buffering=1) as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        out = report or streams[0]
        sys.stdout = sys.stderr = log
        try:
            yield out
        finally:
            sys.stdout, sys.stderr = streams
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            if report is not None:
                report.close()
