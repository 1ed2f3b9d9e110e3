"""The documentation site reads at 1280 x 800 in headless Chromium: on the pages with the widest
tables, every table's last column lies inside the content area, and no code block hides the end of
a long line behind a scroll bar (docs/stylesheets/extra.css wraps table cells and code lines)."""

from __future__ import annotations

import functools
import http.server
import os
import sys
import threading

import pytest

from tests.docs.examples import ROOT

sys.path.insert(0, os.path.join(ROOT, "tests", "viewer"))
import browser  # noqa: E402

pytestmark = pytest.mark.skipif(
    browser.chromium() is None, reason="needs chromium (apt-get install chromium; .ci/run does)"
)

# per table: its first header cells, the right edge of its last column's cells, the content area's
RECTS = """(() => {
  const content = document.querySelector('.md-content').getBoundingClientRect();
  return [...document.querySelectorAll('.md-content table')].map(table => ({
    head: table.rows[0].innerText.slice(0, 40),
    right: Math.max(...[...table.rows].map(row => row.lastElementChild.getBoundingClientRect().right)),
    content: content.right,
  }));
})()"""


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # no line per request in the test's output
        pass


@pytest.fixture(scope="module")
def served(site):
    assert site.returncode == 0, site.output
    pytest.importorskip("websockets", reason="needs websockets (the viewer extra) to drive chromium")
    handler = functools.partial(Quiet, directory=str(site.path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


# per code block wider than its box: its first line
CLIPPED = """[...document.querySelectorAll('.md-content pre > code')]
  .filter(code => code.scrollWidth > code.clientWidth + 1).map(code => code.innerText.split('\\n')[0])"""


@pytest.mark.parametrize("page", ["tasks/", "dmc/"])
def test_every_tables_last_column_is_inside_the_content_area_at_1280_px(served, page):
    tables = browser.evaluate(f"{served}/{page}", RECTS, wait_s=2.0, size=(1280, 800))
    assert len(tables) >= 2, tables  # the page rendered, with its tables
    outside = [t for t in tables if t["right"] > t["content"] + 0.5]
    assert not outside, f"{page}: tables whose last column is off-screen: {outside}"


@pytest.mark.parametrize("page", ["dmc/", "libraries/"])
def test_no_code_line_is_clipped_at_1280_px(served, page):
    clipped = browser.evaluate(f"{served}/{page}", CLIPPED, wait_s=2.0, size=(1280, 800))
    assert clipped == [], f"{page}: code blocks with lines cut off: {clipped}"
