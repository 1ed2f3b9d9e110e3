"""How the mjwarp backend runs Warp work: captured graphs, ordered with torch, one at a time.

`WarpRunner.run(key, work)` runs `work()` (Warp launches) on the backend's device as a graph
captured the first time a key is seen and replayed after; Warp records graphs on CUDA and on
its CPU device alike (a CPU graph replays its launches in C++, without Python). On CUDA the
Warp stream waits for torch's current stream before, and torch's stream for the Warp stream
after, so torch's reads and writes of the views are ordered with the engine's without a host
sync; inside a caller's CUDA graph of a whole env step (`torch.cuda.graph`) the launches are
recorded into that graph instead.

Invariant: every Warp launch of every mjwarp backend in the process, captured or not, runs
under WARP_LOCK. Warp's graph capture is process-wide state (on its CPU device every launch
from any thread is recorded into the capture in progress; on CUDA the backends share the
device's Warp stream), so two envs stepped from two threads take turns instead of failing with
"Graph capture already in progress" or crashing.

`HeightRays` casts the height scan's vertical rays (`mjw.rays`) through the runner, on buffers
made once per ray count, which the captured graph reads at each replay.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from unienv.backends.features import TERRAIN_GROUP

WARP_LOCK = threading.RLock()


class WarpRunner:
    """Runs Warp work on one device: captured once per key, replayed, ordered with torch."""

    def __init__(self, wp: Any, wp_device: Any, device: torch.device):
        self._wp, self._wp_device, self._device = wp, wp_device, device
        self.graphs: dict[Any, Any] = {}
        self._torch_streams: dict[int, Any] = {}  # torch stream handle -> its Warp stream
        self._stream = wp.get_stream(wp_device) if device.type == "cuda" else None

    def run(self, key: Any, work: Callable[[], None]) -> None:
        """Run `work()`, as the graph of `key` (captured on first use); key=None runs it uncaptured."""
        wp = self._wp
        if self._stream is not None and torch.cuda.is_current_stream_capturing():
            # inside a caller's CUDA graph of a whole env step: record the launches into it, on
            # torch's capturing stream
            stream = wp.stream_from_torch(torch.cuda.current_stream(self._device))
            capture = wp.ScopedCapture(
                device=self._wp_device, stream=stream, external=True, capture_mode=wp.CaptureMode.GLOBAL
            )
            with WARP_LOCK, wp.ScopedDevice(self._wp_device), capture:
                work()
            return
        with WARP_LOCK:
            torch_stream = None
            if self._stream is not None:
                current = torch.cuda.current_stream(self._device)
                torch_stream = self._torch_streams.get(current.cuda_stream)
                if torch_stream is None:
                    torch_stream = self._torch_streams[current.cuda_stream] = wp.stream_from_torch(current)
                self._stream.wait_stream(torch_stream)
            with wp.ScopedDevice(self._wp_device):
                if key is None:
                    work()
                else:
                    graph = self.graphs.get(key)
                    if graph is None:
                        with wp.ScopedCapture(device=self._wp_device, stream=self._stream) as capture:
                            work()
                        self.graphs[key] = graph = capture.graph
                    wp.capture_launch(graph, stream=self._stream)
            if torch_stream is not None:
                torch_stream.wait_stream(self._stream)


class HeightRays:
    """Vertical ray casts onto the terrain's geom group for every world, one captured graph per ray count."""

    def __init__(self, runner: WarpRunner, wp: Any, mjw: Any, wp_device: Any, num_envs: int):
        self._runner, self._wp, self._mjw, self._wp_device, self._n = runner, wp, mjw, wp_device, num_envs
        self._buffers: dict[int, dict[str, Any]] = {}
        self._group = importlib.import_module("mujoco_warp._src.types").vec6(
            *[1.0 if g == TERRAIN_GROUP else 0.0 for g in range(6)]
        )

    def _made(self, nray: int) -> dict[str, Any]:
        buffers = self._buffers.get(nray)
        if buffers is None:
            wp, n = self._wp, self._n
            with WARP_LOCK, wp.ScopedDevice(self._wp_device):
                buffers = self._buffers[nray] = {
                    "pnt": wp.zeros((n, nray), dtype=wp.vec3),
                    "vec": wp.array(np.tile([0.0, 0.0, -1.0], (n, nray, 1)), dtype=wp.vec3),
                    "exclude": wp.full(nray, -1, dtype=int),
                    "dist": wp.zeros((n, nray), dtype=float),
                    "geomid": wp.zeros((n, nray), dtype=int),
                    "normal": wp.zeros((n, nray), dtype=wp.vec3),
                }
        return buffers

    def cast_down(self, m: Any, d: Any, origins: torch.Tensor) -> torch.Tensor:
        """Distances (N, P) from origins (N, P, 3) down to the first terrain geom, -1 where none."""
        nray = origins.shape[1]
        b = self._made(nray)
        self._wp.to_torch(b["pnt"]).copy_(origins.to(torch.float32))

        def work() -> None:
            buffers = (b["exclude"], b["dist"], b["geomid"], b["normal"])
            self._mjw.rays(m, d, b["pnt"], b["vec"], self._group, True, *buffers)

        self._runner.run(("rays", nray), work)
        return self._wp.to_torch(b["dist"]).clone()
