"""Running hostile inputs under bounds: a command in a subprocess with an address-space limit and a
timeout (`run`), the one-line refusal a user must see (`one_error_line`), and the per-case
measures a replay script prints (`replay`: tracemalloc's peak, the peak RSS's growth, seconds),
each case stopped by an alarm after CASE_SECONDS."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterable

MEMORY = 3 << 30  # address space of a hostile case's process (torch, mujoco, onnxruntime map about 1 GiB)
TIMEOUT = 120  # s for a whole subprocess (its imports included)
CASE_SECONDS = 10  # s one case may take
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def limit(memory: int = MEMORY) -> Callable[[], None]:
    """A preexec_fn: the child's address space limited to `memory` bytes."""
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (memory, memory))


def run(
    args: list[str], *, memory: int = MEMORY, timeout: float = TIMEOUT, **kwargs
) -> subprocess.CompletedProcess:
    """args run from the checkout under an address-space limit and a timeout, output captured; the
    checkout first on the path (a script's own folder comes first, and an editable install's
    unienv would come before this checkout's)."""
    kwargs.setdefault("cwd", ROOT)
    env = dict(kwargs.pop("env", None) or os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT, *filter(None, [env.get("PYTHONPATH")])])
    kwargs["env"] = env
    return subprocess.run(
        args, preexec_fn=limit(memory), capture_output=True, text=True, timeout=timeout, **kwargs
    )


def python(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return run([sys.executable, *args], **kwargs)


def one_error_line(done: subprocess.CompletedProcess, *expected: str) -> str:
    """The one `error:` line a refused command printed (its exit status not 0, no traceback),
    holding every string of `expected`."""
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode != 0, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr[-3000:]
    for text in expected:
        assert text in lines[0], (text, lines[0])
    return lines[0]


class CaseTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise CaseTimeout(f"still running after {CASE_SECONDS} s")


def replay(cases: Iterable[tuple[str, Callable[[], object]]], refused: tuple[type, ...]) -> None:
    """Run each (name, case) in turn and print one JSON line for it: its outcome ("accepted",
    the refusal's message, "BUG <type>: ..." for any other exception, "HANG" after
    CASE_SECONDS), tracemalloc's peak of the case (bytes), the growth of the process's peak RSS
    since the first case, and its seconds. For a replay script, run under `limit`."""
    signal.signal(signal.SIGALRM, _alarm)
    tracemalloc.start()
    start_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    for name, case in cases:
        tracemalloc.reset_peak()
        before = _reset_peak_rss()
        began = time.monotonic()
        signal.alarm(CASE_SECONDS)
        try:
            case()
            outcome = "accepted"
        except refused as e:
            outcome = str(e)
        except CaseTimeout:
            outcome = "HANG"
        except Exception as e:  # noqa: BLE001 (what the test reports as a bug)
            outcome = f"BUG {type(e).__name__}: {e}"
        finally:
            signal.alarm(0)
        row = {
            "case": name,
            "outcome": outcome,
            "peak": tracemalloc.get_traced_memory()[1],
            "grown": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - start_rss,
            "rss": _status("VmHWM") - before,
            "seconds": time.monotonic() - began,
        }
        print(json.dumps(row), flush=True)


def _status(key: str) -> int:
    """A /proc/self/status line's value in bytes."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key + ":"))


def _reset_peak_rss() -> int:
    """Reset the process's peak RSS to its RSS now (Linux: clear_refs 5), and return that RSS: the
    peak read after a case less it is what the case held at most, C libraries' memory included."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _status("VmRSS")


def rows(done: subprocess.CompletedProcess) -> dict[str, dict]:
    """The JSON lines of a replay, by case (what the cases print themselves left out)."""
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith('{"case": ')]
    return {row["case"]: row for row in map(json.loads, lines)}


@contextlib.contextmanager
def fifo(path: str):
    """A FIFO at path (os.mkfifo), removed after; nothing ever writes to it."""
    os.mkfifo(path)
    try:
        yield path
    finally:
        os.remove(path)
