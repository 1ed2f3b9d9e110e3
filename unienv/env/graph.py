"""The env step as one CUDA graph, on a backend that allows capture (`Capabilities.cuda_graph`).

`GraphedStep` runs the first steps eagerly (lazy allocations and the engine's own
graphs happen there), then records one step as a CUDA graph and replays it for
every later step: static actions in, static outputs out, copied on return (the
next replay rewrites them). When the engine moves its memory (`backend.graph_epoch`
changes) the graph is recorded anew. A step that cannot be captured warns once,
saying why, and runs eagerly from then on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import torch

WARMUP_STEPS = 2  # eager steps before a capture


class StepGraph:
    """One env step recorded as a CUDA graph."""

    def __init__(self, actions: torch.Tensor, epoch: int):
        self.graph = torch.cuda.CUDAGraph()
        self.actions = actions.clone()
        self.epoch = epoch
        self.outputs: tuple = ()

    def replay(self, actions: torch.Tensor) -> tuple:
        """Run the step on new actions; the outputs are copies."""
        self.actions.copy_(actions)
        self.graph.replay()
        return _cloned(self.outputs)


class GraphedStep:
    """Calls `step(actions)` through a CUDA graph once warm; see the module docstring."""

    def __init__(self, backend: Any):
        self.backend = backend
        self.graph: StepGraph | None = None
        self.eager_steps = 0  # since the last (re)capture was due
        self.enabled = True

    def __call__(self, step: Callable, actions: torch.Tensor) -> tuple:
        if not self.enabled:
            return step(actions)
        if self.graph is not None and self.graph.epoch != self.backend.graph_epoch:
            self.graph, self.eager_steps = None, 0  # the engine moved memory: capture anew
        if self.graph is None and self.eager_steps >= WARMUP_STEPS:
            self.graph = self._capture(step, actions)
        if self.graph is not None:
            return self.graph.replay(actions)
        self.eager_steps += 1
        return step(actions)

    def _capture(self, step: Callable, actions: torch.Tensor) -> StepGraph | None:
        graph = StepGraph(actions, self.backend.graph_epoch)
        try:
            with torch.cuda.graph(graph.graph):
                graph.outputs = step(graph.actions)
        except Exception as e:  # e.g. an engine call that is not capturable
            gym.logger.warn(
                f"cuda_graph: the env step could not be captured ({type(e).__name__}: {e}); stepping eagerly"
            )
            self.enabled = False
            return None
        return graph


def _cloned(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return x.clone()
    if isinstance(x, dict):
        return {k: _cloned(v) for k, v in x.items()}
    if isinstance(x, tuple):
        return tuple(_cloned(v) for v in x)
    return x
