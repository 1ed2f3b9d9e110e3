"""A page is untrusted: play's viewer loop, in a process under a memory limit, keeps stepping at the
page's last valid speed while a page sends it a generated corpus of what a hostile page would
(speeds of 0, 1e-7, -5, NaN, inf, text; other types for every control; bounds, callbacks and
labels changed; uploads aimed at every control; share links, forms, commands; messages past the
size bound; bytes that are not messages; more pages than allowed). Each well-formed one is
refused and counted on the server, the others close their own page's connection; nothing of it
reaches the run, and the process's memory barely moves."""

import math
import os
import subprocess
import sys

import pytest

pytest.importorskip("viser")

from websockets.exceptions import ConnectionClosed  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "hardening"))
import bounded  # noqa: E402
from page import Page  # noqa: E402
from test_viewer import free_port  # noqa: E402

from unienv.viewer.gate import MAX_MESSAGE_BYTES, MAX_PAGES  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
COMMAND = "lin_vel_x"  # one of the velocity task's command sliders (its deployment commands)
GROWTH = (
    16 << 20
)  # the most the process's resident memory may grow over the corpus (it holds 25 MB of uploads' parts before)


def update(uuid: str, updates) -> dict:
    return {"type": "GuiUpdateMessage", "uuid": uuid, "updates": updates}


def hostile(controls: dict[str, str]) -> list[tuple[str, dict]]:
    """(name, message) of what a hostile page sends, each well formed, each to be refused."""
    nan, inf = math.nan, math.inf
    speed, pause, step, command = (controls[k] for k in ("Speed", "Pause", "Step", COMMAND))
    cases = [(f"speed {v!r}", update(speed, {"value": v})) for v in
             (0, 0.0, -5, 1e-7, 0.09, 4.01, nan, inf, -inf, 1e308, "2.0", [2.0], {"v": 2}, None, True, b"2")]  # fmt: skip
    cases += [(f"pause {v!r}", update(pause, {"value": v})) for v in (1, 0, "true", None, [True], 1.0)]
    cases += [(f"step {v!r}", update(step, {"value": v})) for v in (False, 1, "click", None, [True])]
    cases += [(f"command {v!r}", update(command, {"value": v})) for v in
              ([0.5, 0.0], [0.5], "a", nan, inf, -inf, 1e6, -1e6, "0.5", None, True)]  # fmt: skip
    cases += [(f"speed props {sorted(p)}", update(speed, p)) for p in
              ({"min": 0.0}, {"max": 1e9}, {"value": 2.0, "min": 0.0}, {"update_cb": [1]}, {"visible": False},
               {"disabled": True}, {"label": "x" * 30000}, {})]  # fmt: skip
    cases += [
        ("no such control", update("no-such-id", {"value": 1.0})),
        ("updates a list", update(speed, [1])),
    ]
    for label, uuid in sorted(controls.items()):  # an upload aimed at every control, 25 MB in all
        start = {"type": "FileTransferStartUpload", "source_component_uuid": uuid, "transfer_uuid": label}
        cases.append(
            (
                f"upload to {label}",
                start | {"filename": "x", "mime_type": "x", "part_count": 60, "size_bytes": 60 * 60000},
            )
        )
        for i in range(60):
            part = {"type": "FileTransferPart", "source_component_uuid": uuid, "transfer_uuid": label}
            cases.append((f"part {i} to {label}", part | {"part_index": i, "content": b"\0" * 60000}))
    cases += [("share link", {"type": "ShareUrlRequest"}), ("share off", {"type": "ShareUrlDisconnect"})]
    cases += [
        (k, {"type": k, "uuid": speed})
        for k in ("GuiFormSubmitMessage", "GuiFormDirtyMessage", "CommandTriggerMessage")
    ]
    cases += [("hold", {"type": "GuiButtonHoldMessage", "uuid": step, "frequency": 1000.0})]
    click = {"name": "/env0", "instance_index": None, "ray_origin": (0, 0, 0), "ray_direction": (0, 0, 1)}
    cases += [
        ("scene click", {"type": "SceneNodeClickMessage", **click, "screen_pos": (0, 0), "modifier": None})
    ]
    return cases


class Loop:
    """hostile_play.py in a process under bounded.MEMORY: `state()` asks it for the loop's state."""

    def __init__(self, port: int, log):
        args = [sys.executable, os.path.join(HERE, "hostile_play.py"), str(port)]
        self.log = log  # its stderr: a file, which never fills as a pipe would
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [bounded.ROOT, os.environ.get("PYTHONPATH")])),
        }
        self.process = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log.open("w"), text=True,
            preexec_fn=bounded.limit(), cwd=bounded.ROOT, env=env,
        )  # fmt: skip
        for line in self.process.stdout:
            if line.strip() == "ready":
                return
        raise AssertionError(self.errors())

    def errors(self) -> str:
        return self.log.read_text()[-3000:]

    def state(self) -> dict:
        import json
        import selectors

        self.process.stdin.write("\n")
        self.process.stdin.flush()
        with selectors.DefaultSelector() as ready:  # the loop's process answers at once, or never
            ready.register(self.process.stdout, selectors.EVENT_READ)
            line = self.process.stdout.readline() if ready.select(timeout=10) else "no answer in 10 s\n"
        assert line.startswith("{"), line + self.errors()
        return json.loads(line)

    def until(self, check, seconds: float = 20.0) -> dict:
        """The loop's state once check(state) holds (polled), or its last state."""
        import time

        end = time.monotonic() + seconds
        while not check(state := self.state()) and time.monotonic() < end:
            time.sleep(0.1)
        return state

    def close(self) -> str:
        """Close its stdin (the loop then ends) and return its output; it must exit with 0."""
        out, _ = self.process.communicate(timeout=60)
        assert self.process.returncode == 0, self.errors()
        return out


def test_a_hostile_page_changes_nothing_of_the_loop(tmp_path):
    port = free_port()
    loop = Loop(port, tmp_path / "loop.log")
    try:
        page = Page(f"ws://127.0.0.1:{port}")
        page.read(30, until=lambda p: {"Speed", COMMAND, "Pause", "Step"} <= set(p.controls))
        page.set("Speed", 2.0)  # a valid value goes through
        page.set(COMMAND, 0.3)
        before = loop.until(lambda s: s["speed"] == 2.0)
        assert before["speed"] == 2.0 and before["refused"] == 0 and before["alive"], before["last"]
        cases = hostile(page.controls)
        for _, message in cases:
            page.send(message)
        after = loop.until(lambda s: s["refused"] >= len(cases))
        assert after["refused"] == len(cases), (after, len(cases))
        assert after["alive"] and after["speed"] == 2.0 and after["paused"] is False, after
        assert after["steps"] > before["steps"]
        assert after["rss"] - before["rss"] < GROWTH, (after["rss"] - before["rss"]) / 2**20
        # a message past the size bound closes that page's connection, before it is read whole
        page.send(update(page.controls["Speed"], {"value": 3.0, "pad": b"\0" * MAX_MESSAGE_BYTES}))
        with pytest.raises(ConnectionClosed):
            page.read(10)
        page.close()
        # bytes that are not a message close their page (viser's own reader), and nothing else
        for junk in (b"\xc1", b"\x00" * 64, "text frame"):
            other = Page(f"ws://127.0.0.1:{port}")
            other.ws.send(junk)
            with pytest.raises(ConnectionClosed):
                other.read(10)
            other.close()
        # at most MAX_PAGES pages at once: the further ones are closed
        pages, closed = [], 0
        for _ in range(MAX_PAGES + 2):
            try:
                pages.append(Page(f"ws://127.0.0.1:{port}"))
                pages[-1].read(10, until=lambda p: "Speed" in p.controls)
            except ConnectionClosed:
                closed += 1
        assert closed == 2, closed
        for p in pages:
            p.close()
        last = Page(f"ws://127.0.0.1:{port}")  # the loop still takes a valid value from a new page
        last.read(30, until=lambda p: "Speed" in p.controls)
        last.set("Speed", 3.0)
        final = loop.until(lambda s: s["speed"] == 3.0)
        assert final["speed"] == 3.0 and final["alive"] and final["steps"] > after["steps"], final
        assert final["peak"] - before["peak"] < GROWTH
        last.close()
    except BaseException:
        loop.process.kill()
        raise
    assert loop.close().split()[-2] == "done"
