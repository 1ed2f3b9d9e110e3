"""Stopping a training run cleanly: SIGTERM and SIGINT noted, acted on between two steps.

A run's checkpoint needs its state between two iterations (or vector steps), so a signal is not
acted on where it arrives: the loop reads `received` after each iteration, writes its checkpoint
and exits with status 128 + the signal's number."""

from __future__ import annotations

import signal
import sys


class StopSignal:
    """SIGTERM and SIGINT noted, not acted on at once: the runner stops after the iteration under way
    (its checkpoint needs the state between two iterations). A second SIGINT (Ctrl-C) acts as usual;
    a repeated SIGTERM is noted again (torchrun forwards one more than once; a scheduler's next
    step is SIGKILL)."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self):
        self.received: int | None = None
        self._previous = {s: signal.signal(s, self._note) for s in self.SIGNALS}

    def _note(self, signum, frame) -> None:
        if self.received is None:
            print(
                f"{signal.Signals(signum).name}: stopping after this iteration", file=sys.stderr, flush=True
            )
        self.received = signum
        if signum == signal.SIGINT:
            signal.signal(signum, self._previous[signum])

    def restore(self) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
