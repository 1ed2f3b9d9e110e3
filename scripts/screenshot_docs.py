"""Build the documentation site and take screenshots of it in headless Chromium.

    python scripts/screenshot_docs.py OUT_DIR       # OUT_DIR/home.png, OUT_DIR/api-make.png

The site is built with `mkdocs build --strict` into OUT_DIR/site and served on a local port (the
pages load their scripts and styles as a browser would); Chromium (`chromium`, or the CHROMIUM
environment variable) renders the home page and the API reference of `unienv.make` at 1280 x 1600.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = {"home.png": "", "api-make.png": "api/"}


def main(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    site = os.path.join(out, "site")
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", site], cwd=ROOT, check=True
    )
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("error: no chromium found; install it (apt-get install chromium) or set CHROMIUM")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=site)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        for name, page in PAGES.items():
            url = f"http://127.0.0.1:{server.server_port}/{page}"
            subprocess.run(
                [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                 "--window-size=1280,1600", f"--screenshot={os.path.join(out, name)}", url],
                check=True, capture_output=True, timeout=300,
            )  # fmt: skip
            print(os.path.join(out, name))
    finally:
        server.shutdown()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python scripts/screenshot_docs.py OUT_DIR")
    main(sys.argv[1])
