"""play's viewer loop (unienv.viewer.live.play) on the quadruped, watched from the inside while a
test sends it what a hostile page would: started with the port argv[1], it prints "ready", then a
JSON line of the loop's state (`state`) each time a line comes on stdin, and "done <steps>"
once stdin closes and the loop has ended. Run by test_hostile_page.py under a memory limit."""

import json
import resource
import sys
import threading

import torch

import unienv
from unienv.viewer import live
from unienv.viewer.server import Options, Viewer, check

viewers: list[Viewer] = []


class Watched(Viewer):
    """The loop's own Viewer, kept where the state report can read it (nothing else differs)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        viewers.append(self)


def rss() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


def main(port: int) -> None:
    live.Viewer = Watched
    env = unienv.make("quadruped", num_envs=2, seed=0)
    env.reset(seed=0)
    steps = [0]

    def policy(obs):
        steps[0] += 1
        return torch.zeros(2, 12)

    stop = threading.Event()
    loop = threading.Thread(  # a daemon: should this thread's reports fail, the process ends
        target=lambda: steps.append(live.play(env, policy, check(Options(port=port), 2), stop=stop)),
        daemon=True,
    )
    loop.start()
    while not viewers:
        stop.wait(0.05)
    print("ready", flush=True)
    for _ in sys.stdin:
        viewer = viewers[0]
        state = {"steps": steps[0], "alive": loop.is_alive(), "speed": viewer.speed, "paused": viewer.paused}
        gate = getattr(viewer, "gate", None)  # absent before issue 57: then -1
        state |= {"refused": gate.count() if gate else -1, "last": getattr(gate, "last_refusal", "")}
        state |= {"rss": rss()}
        state |= {"peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
        print(json.dumps(state), flush=True)
    stop.set()
    loop.join()
    env.close()
    print("done", steps[0], flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]))
