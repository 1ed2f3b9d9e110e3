"""Headless Chromium driven over the DevTools protocol: open a page, wait, take a screenshot.

Debian's `chromium` (apt-get install chromium; .ci/run installs it), WebGL in software
(SwiftShader), a fresh profile per call; no network beyond the loopback page it opens. Also
used by tests/docs/test_layout.py to measure the documentation site's tables.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import pathlib
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
)


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@contextlib.contextmanager
def devtools(url: str, *, wait_s: float, size=(1024, 768)):
    """Open url in a fresh headless Chromium, let it run wait_s seconds, and yield `call(method,
    params)`, which sends one DevTools command to the page and returns its result."""
    from websockets.sync.client import connect

    with tempfile.TemporaryDirectory() as profile:
        args = [chromium(), *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0"]
        args += [f"--window-size={size[0]},{size[1]}", url]
        # its own process group: its renderer and helper processes outlive the main one and
        # write into the profile, so the whole group ends before the profile is removed
        browser = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        try:
            port_file = os.path.join(profile, "DevToolsActivePort")
            deadline = time.monotonic() + 30
            while not os.path.exists(port_file) or not pathlib.Path(port_file).read_text().strip():
                if time.monotonic() > deadline:
                    raise TimeoutError("chromium did not open its DevTools port")
                time.sleep(0.2)
            port = int(pathlib.Path(port_file).read_text().split()[0])
            time.sleep(wait_s)
            pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
            target = next(p for p in pages if p["type"] == "page")
            with connect(target["webSocketDebuggerUrl"], max_size=2**26) as ws:
                ids = itertools.count(1)

                def call(method: str, params: dict | None = None) -> dict:
                    n = next(ids)
                    ws.send(json.dumps({"id": n, "method": method, "params": params or {}}))
                    while True:
                        reply = json.loads(ws.recv(timeout=60))
                        if reply.get("id") == n:
                            return reply["result"]

                yield call
        finally:
            end_group(browser)


def end_group(process: subprocess.Popen) -> None:
    """Terminate process and every process of its group, and wait until the group is gone."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(process.pid, 0)  # raises once no process of the group is left
        except ProcessLookupError:
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    time.sleep(0.2)


def screenshot(url: str, path: str, *, wait_s: float = 20.0, size=(1024, 768)) -> None:
    """Open url, let it run wait_s seconds, and write a PNG of the page to path."""
    with devtools(url, wait_s=wait_s, size=size) as call:
        data = call("Page.captureScreenshot", {"format": "png"})["data"]
    with open(path, "wb") as f:
        f.write(base64.b64decode(data))


def evaluate(url: str, expression: str, *, wait_s: float = 2.0, size=(1024, 768)):
    """Open url and return the JSON value of a JavaScript expression evaluated in the page."""
    with devtools(url, wait_s=wait_s, size=size) as call:
        result = call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
    if "exceptionDetails" in result:
        raise RuntimeError(f"{expression!r} raised in the page: {result['exceptionDetails']}")
    return result["result"]["value"]
