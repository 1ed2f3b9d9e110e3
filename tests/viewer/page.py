"""A page of the viewer without a browser: the websocket viser's client opens (its subprotocol,
its first camera message), the server's messages decoded as the client decodes them, and any
message sent as the client would send it, or any bytes at all."""

from __future__ import annotations

import time

import msgspec
import viser
import zstandard
from websockets.sync.client import connect

from unienv.viewer.__main__ import PAGE_CAMERA


def decoded(raw: bytes) -> list[dict]:
    """The messages of one server frame: sizes, zstd-compressed msgpack, buffers."""
    size, packed = (int.from_bytes(raw[i : i + 8], "little") for i in (0, 8))
    payload = zstandard.ZstdDecompressor().decompress(raw[16 : 16 + packed], max_output_size=size)
    return msgspec.msgpack.decode(payload)["messages"]


class Page:
    """A page connected to ws://host:port; `controls` maps each control's label to its id."""

    def __init__(self, url: str):
        self.ws = connect(url, subprotocols=[f"viser-v{viser.__version__}"], max_size=None)
        self.controls: dict[str, str] = {}
        self.texts: list[str] = []
        self.send(PAGE_CAMERA)

    def read(self, seconds: float, until=lambda page: False) -> None:
        """Take the server's messages for up to `seconds`, or until `until(self)`."""
        end = time.monotonic() + seconds
        while not until(self) and (left := end - time.monotonic()) > 0:
            try:
                raw = self.ws.recv(timeout=left)
            except TimeoutError:
                return
            for message in decoded(raw):
                label = (message.get("props") or {}).get("label")
                if label and "uuid" in message:
                    self.controls[label] = message["uuid"]
                text = (message.get("updates") or {}).get("_markdown")
                if text:
                    self.texts.append(str(text))

    def send(self, message: dict) -> None:
        self.ws.send(msgspec.msgpack.encode(message))

    def set(self, label: str, value) -> None:
        """What the client sends when the control `label` takes `value`."""
        self.send({"type": "GuiUpdateMessage", "uuid": self.controls[label], "updates": {"value": value}})

    def close(self) -> None:
        self.ws.close()
