"""What a page may send the viewer: every message is checked on the server, before viser applies it.

A page is untrusted: whoever reaches the viewer's port can send what a browser would, and more.
viser applies a page's messages as they come: a control's value cast to the control's type (a
slider takes 0, -5, NaN or 1e-7), any property of a control (its bounds, its callbacks), an
upload addressed to any control (buffered part by part, then made that control's value), and a
request for a public share link (a tunnel from this machine to viser's share server). `Gate`
stands in front of viser's dispatch of a server's messages and lets one kind through: a new
value, `{"value": v}` alone, for a control this viewer made and registered (`allow`), of that
control's type and within its bounds (a checkbox's a bool, a button's True, a slider's a finite
number in [min, max]). Everything else a page
sends to the server is dropped and counted (`refused`): uploads, forms, commands, share links,
pointer and drag events, values out of bounds or of another type, any other property. What a
page sends about itself (its camera, replies to the server's requests) is the page's own state
and changes nothing of the run.

Memory: a page's message larger than MAX_MESSAGE_BYTES closes that page's connection before it
is read whole (websockets' own limit, set per connection), at most MAX_PAGES pages are connected
at once (a further one is closed), and no message is buffered beyond its own dispatch, so what
pages make the server hold is bounded whatever they send. The run's loop reads only values the
gate let through.

viser has no public hook for incoming messages: the gate wraps its WebsockServer's dispatch
(`_handle_incoming_message`) and its live connections; `check_viser` refuses a viser without
them before a run starts (the `viewer` extra pins viser 1.x).
"""

from __future__ import annotations

import collections
import math
import threading
from typing import Any

from unienv.errors import ArgumentError

MAX_MESSAGE_BYTES = 1 << 16  # a page's control and camera messages are a few hundred bytes
MAX_PAGES = 8  # pages connected at once
PAGE_STATE = ("ViewerCameraMessage", "GetRenderResponseMessage", "LocalStorageGetItemResponseMessage")
"""What a page says of itself (its camera, replies to the server's requests): viser's per-page
handlers take them; the server's own dispatch, which the gate stands in front of, has none."""


def check_viser() -> None:
    """Refuse a viser whose server lacks what the gate wraps (before anything starts)."""
    import viser
    from viser.infra import WebsockServer

    if not all(hasattr(WebsockServer, a) for a in ("_handle_incoming_message", "on_client_connect")):
        raise ArgumentError(
            f"viewer=web: viser {viser.__version__} hands a page's messages over in a way unienv does "
            "not check; install the viewer extra's viser (pip install 'unienv[viewer]': viser>=1.1,<2)"
        )


class Gate:
    """The checks between a viser server and a page's messages; see the module docstring."""

    def __init__(self, server):
        from viser import _messages

        self._update = _messages.GuiUpdateMessage
        self._bounds: dict[str, tuple[str, Any, Any]] = {}  # control id: (kind, low, high)
        self._lock = threading.Lock()
        self.refused: collections.Counter[int] = collections.Counter()  # by page (client id)
        self.last_refusal = ""
        self._ws = server._websock_server
        self._dispatch = self._ws._handle_incoming_message
        self._ws._handle_incoming_message = self._handle
        self._ws.on_client_connect(self._connected)

    def allow(self, handle, kind: str, low: Any = None, high: Any = None) -> Any:
        """Let a page set `handle`'s value: kind "checkbox", "button" or "slider" (a number in
        [low, high]). Returns handle."""
        with self._lock:
            self._bounds[handle._impl.uuid] = (kind, low, high)
        return handle

    def count(self) -> int:
        """The messages refused so far, from every page."""
        with self._lock:
            return sum(self.refused.values())

    def refusal(self, message) -> str | None:
        """Why `message` may not reach viser, or None where it may."""
        if type(message) is not self._update:
            return f"a {type(message).__name__} (no control of this viewer takes one)"
        with self._lock:
            bounds = self._bounds.get(message.uuid)
        if bounds is None:
            return "a value for no control of this viewer"
        updates = message.updates
        if not isinstance(updates, dict) or set(updates) != {"value"}:
            return f"a change of {sorted(map(str, updates))[:4] if isinstance(updates, dict) else 'nothing'}, not of a value alone"
        kind, low, high = bounds
        value = updates["value"]
        if kind == "checkbox":
            ok = type(value) is bool
        elif kind == "button":
            ok = value is True
        else:  # a slider
            ok = _number(value) and low <= value <= high
        return None if ok else f"a {kind} value out of its type or bounds ({str(value)[:40]})"

    async def _handle(self, client_id, message) -> None:
        if type(message).__name__ in PAGE_STATE:  # viser handles it per page, not here
            return
        why = self.refusal(message)
        if why is None:
            await self._dispatch(client_id, message)
            return
        with self._lock:
            self.refused[client_id] += 1
            self.last_refusal = why

    async def _connected(self, connection) -> None:
        """A page connected: its messages bounded at the socket, and it closed if too many are open."""
        live = self._ws._live_connections
        socket = live.get(connection.client_id)
        if socket is None:
            return
        limit = "max_message_size" if hasattr(socket.protocol, "max_message_size") else "max_size"
        setattr(socket.protocol, limit, MAX_MESSAGE_BYTES)  # websockets >= 15 names it max_message_size
        if len(live) > MAX_PAGES:
            await socket.close(1013, f"unienv viewer: at most {MAX_PAGES} pages at once")


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
