"""Count host conversions of tensors made by unienv's own code (unienv/ and tasks/).

On a CUDA device each of these waits for the GPU queue to drain; run on the
CPU the same calls are free, so counting them is how a CPU-only test sees what
CUDA would pay. Calls made by an engine (Genesis, Warp) are not counted: the
calling frame must be in unienv's files.
"""

from __future__ import annotations

import collections
import contextlib
import os
import sys

import torch

import unienv
import unienv.tasks

ROOTS = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep for m in (unienv, unienv.tasks))
METHODS = (
    "__bool__",
    "item",
    "cpu",
    "numpy",
    "tolist",
    "__int__",
    "__float__",
    "__index__",
    "__array__",
    "nonzero",
)


@contextlib.contextmanager
def count_host_syncs():
    """Within the block, a Counter of (method, file, line) -> calls from unienv's code."""
    counts: collections.Counter = collections.Counter()
    originals = {name: getattr(torch.Tensor, name) for name in METHODS}
    original_nonzero = torch.nonzero

    def wrap(name, fn):
        def counted(*args, **kwargs):
            frame = sys._getframe(1)
            if frame.f_code.co_filename.startswith(ROOTS):
                counts[(name, os.path.relpath(frame.f_code.co_filename), frame.f_lineno)] += 1
            return fn(*args, **kwargs)

        return counted

    for name, fn in originals.items():
        setattr(torch.Tensor, name, wrap(name, fn))
    torch.nonzero = wrap("nonzero", original_nonzero)
    try:
        yield counts
    finally:
        for name, fn in originals.items():
            setattr(torch.Tensor, name, fn)
        torch.nonzero = original_nonzero
