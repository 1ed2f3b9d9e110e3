"""Data-parallel ranks under torchrun that fail fast: the process group with bounded collectives,
and a heartbeat that names a rank that stops answering.

    group = ProcessGroup.start(backend, rank, world, timeout_s)   # init_process_group + the watchdog
    group.stop()                                                  # after the last collective

The model. torchrun starts one process (rank) per GPU or CPU slot and hosts a key-value store (the
c10d rendezvous store, in the torchrun agent, not in any rank). Every rank runs a watchdog thread
that, every timeout_s / 10 seconds (at most 1 s), adds 1 to its own counter in that store and
reads every peer's. A peer whose counter has not moved for timeout_s (a process stopped with
SIGSTOP, frozen, or cut off from the network) makes the watchdog print one line naming it and
end its own process with status 1; torchrun then ends the rest of the job (SIGTERM, then SIGKILL
30 s later, the wait torch 2.x's launcher gives a failed job's other workers), so a rank that stops
answering ends the job within timeout_s + 30 s. A rank that dies is seen by torchrun, at once.

A rank can also be alive (its watchdog beating) but stuck inside one call, such as a driver call:
every collective (gloo and nccl) is created with a timeout of 2 * timeout_s, after which it raises
on the ranks waiting in it (ProcessGroup.timeout_error names it). A rank that finishes marks
itself done, so that its peers' watchdogs do not mistake a clean exit for a hang.

Invariants: the watchdog touches only its own keys in the store (prefixed by the run id and the
restart count) and never the training state; training results do not depend on it.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from unienv.errors import ArgumentError


def check_timeout(timeout_s) -> float:
    """distributed.timeout_s as a positive number of seconds, or one clear error."""
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or not timeout_s > 0:
        raise ArgumentError(f"distributed.timeout_s: expected a number of seconds > 0, got {timeout_s!r}")
    return float(timeout_s)


class ProcessGroup:
    """torch.distributed's default process group with bounded collectives, and the rank's watchdog."""

    def __init__(self, rank: int, world: int, timeout_s: float):
        self.rank, self.world, self.timeout_s = rank, world, timeout_s
        host, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
        self.store = dist.TCPStore(
            host, port, is_master=False, timeout=timedelta(seconds=timeout_s), wait_for_workers=False
        )
        self.where = f"{host}:{port}"
        run = os.getenv("TORCHELASTIC_RUN_ID", "run")
        self.prefix = f"unienv/{run}/{os.getenv('TORCHELASTIC_RESTART_COUNT', '0')}"
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="unienv-watchdog", daemon=True)

    @classmethod
    def start(cls, backend: str, rank: int, world: int, timeout_s: float) -> ProcessGroup:
        """init_process_group(backend) with collectives that time out after 2 * timeout_s, then
        the watchdog."""
        group = cls(rank, world, timeout_s)
        dist.init_process_group(
            backend, rank=rank, world_size=world, timeout=timedelta(seconds=2 * timeout_s)
        )
        group._thread.start()
        return group

    def stop(self) -> None:
        """Mark this rank done and stop its watchdog (after the run's last collective)."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        self._thread.join()
        with contextlib.suppress(Exception):  # the job is ending anyway; a peer sees the beat stop
            self.store.add(f"{self.prefix}/done/{self.rank}", 1)

    @staticmethod
    def is_collective_failure(error: BaseException) -> bool:
        """Whether an exception is a collective's timeout or a peer's closed connection."""
        return isinstance(error, dist.DistError) or any(
            word in str(error) for word in ("gloo", "NCCL", "Timed out", "timed out", "Connection closed")
        )

    def timeout_error(self, error: BaseException) -> str:
        """One line for a collective that failed: its timeout passed, or a peer's connection closed."""
        return (
            f"rank {self.rank}/{self.world}: a collective failed (a peer has gone, or it waited past "
            f"its {2 * self.timeout_s:.0f} s timeout): {str(error).splitlines()[0]}"
        )

    def _watch(self) -> None:
        peers = [r for r in range(self.world) if r != self.rank]
        seen = {r: (-1, time.monotonic()) for r in peers}  # (counter, when it last moved)
        interval = min(1.0, self.timeout_s / 10)
        while not self._stopped.wait(interval):
            try:
                self.store.add(f"{self.prefix}/beat/{self.rank}", 1)
                for r in peers:
                    beat = self.store.add(f"{self.prefix}/beat/{r}", 0)  # reads without waiting
                    now = time.monotonic()
                    if beat != seen[r][0]:
                        seen[r] = (beat, now)
                    elif now - seen[r][1] >= self.timeout_s:
                        if self.store.add(f"{self.prefix}/done/{r}", 0):
                            seen[r] = (beat, float("inf"))  # finished cleanly
                            continue
                        self._end(
                            f"rank {r} has not answered for {now - seen[r][1]:.0f} s "
                            f"(stopped, hung or cut off; distributed.timeout_s={self.timeout_s:g})"
                        )
            except Exception as e:  # the store itself did not answer within timeout_s
                if self._stopped.is_set():
                    return
                self._end(f"the rendezvous store at {self.where} did not answer ({str(e).splitlines()[0]})")

    def _end(self, what: str) -> None:
        """One line naming what happened, then this process ends (its main thread may be blocked
        in a collective, which no exception can leave)."""
        print(f"rank {self.rank}/{self.world}: {what}; ending this rank", file=sys.stderr, flush=True)
        os._exit(1)


def gather_states(state: dict, rank: int, world: int, device) -> list[dict] | None:
    """Each rank's `state` (CPU tensors, numbers, lists, dicts), gathered on rank 0 in rank order;
    None on the other ranks. Every rank must call it at the same point. The states travel as
    torch.save bytes and are read back with weights_only=True (only data, never code)."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    data = torch.frombuffer(bytearray(buffer.getvalue()), dtype=torch.uint8).to(device)
    sizes = [torch.zeros(1, dtype=torch.int64, device=device) for _ in range(world)]
    dist.all_gather(sizes, torch.tensor([data.numel()], device=device))
    sizes = [int(s) for s in sizes]  # one host read per checkpoint
    padded = torch.zeros(max(sizes), dtype=torch.uint8, device=device)
    padded[: data.numel()] = data
    gathered = [torch.empty_like(padded) for _ in range(world)] if rank == 0 else None
    dist.gather(padded, gathered, dst=0)
    if rank != 0:
        return None
    return [
        torch.load(io.BytesIO(t[:n].cpu().numpy().tobytes()), weights_only=True)
        for t, n in zip(gathered, sizes, strict=True)
    ]


def broadcast_flags(flags: list[int], device) -> list[int]:
    """The element-wise maximum of `flags` over all ranks (one all-reduce, one host read)."""
    tensor = torch.tensor(flags, device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return [int(v) for v in tensor.tolist()]
