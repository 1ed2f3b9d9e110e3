"""unienv's exceptions.

Every error names the argument at fault and what was expected. Validation runs
before anything is written, so a call that raises has changed nothing.
"""

import difflib
import os
import reprlib
from collections.abc import Iterable


class UnienvError(Exception):
    """Base class of unienv's own exceptions."""


class CapabilityError(UnienvError):
    """A backend was asked for something it does not declare it can do."""


class BackendClosedError(UnienvError):
    """A backend was used after close()."""


class NeedsResetError(UnienvError, RuntimeError):
    """An env whose last step raised midway: its envs' states and counters disagree until reset()."""


class GLUnavailableError(UnienvError, RuntimeError):
    """No OpenGL context could be created for offscreen rendering (MUJOCO_GL, the driver)."""


class ArgumentError(UnienvError, ValueError):
    """A value of the wrong shape, dtype or range."""


class ContractError(UnienvError, AssertionError):
    """A backend broke an invariant of the SimBackend contract (`unienv.backends.check_backend`)."""


class UnknownNameError(UnienvError, KeyError):
    """A name that matches nothing; the message lists the closest valid names."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


class UnknownKeywordError(UnknownNameError, TypeError):
    """A keyword argument that a function does not take (a TypeError, as Python's own), with the
    closest valid keywords."""


def unknown_name(kind: str, name: str, valid: Iterable[str]) -> UnknownNameError:
    """The error for a misspelled `kind` name, with the closest valid names."""
    valid = list(valid)
    close = difflib.get_close_matches(str(name), valid, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
    shown = ", ".join(map(repr, valid[:16])) + (", ..." if len(valid) > 16 else "")
    error = UnknownKeywordError if kind.startswith("keyword") else UnknownNameError
    return error(f"unknown {kind} {name!r}{hint} (valid: {shown})")


_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxdict, _SHORT.maxlist, _SHORT.maxtuple = 3, 6, 6, 6
_SHORT.maxstring = _SHORT.maxother = _SHORT.maxlong = 60


def shown(value) -> str:
    """repr(value) for a refusal, cut short (reprlib: strings and lists abridged with "...", at
    most three levels deep): a value read from a file or a page may be megabytes long or deeply
    nested, and a refusal is one line."""
    return _SHORT.repr(value)


def install_command(extra: str) -> str:
    """The pip command that installs unienv's `extra` the way unienv was installed: from a
    checkout (pyproject.toml beside the package, e.g. `pip install -e .`) `pip install -e
    '<checkout>[extra]'`, else `pip install 'unienv[extra]'`."""
    checkout = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.isfile(os.path.join(checkout, "pyproject.toml")):
        return f"pip install 'unienv[{extra}]'"
    where = "." if checkout == os.getcwd() else checkout
    return f"pip install -e '{where}[{extra}]'"
