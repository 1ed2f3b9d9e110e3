"""Files a user keeps (videos, policy files, checkpoints, metrics, sweep summaries) are written
whole or not at all.

    with written("videos/ant.mp4") as temporary:    # write to `temporary`, any way you like
        writer = imageio.get_writer(temporary, ...)

The content goes to a temporary name beside the final one (same folder, so same file system;
same extension, so a writer that picks its format from the name picks the same one), is flushed
to disk, and is moved into place with `os.replace` only when the block ends without an error. A
run killed at any moment leaves the previous file or none under the final name, never half of
one; an error removes the temporary file, and a kill (SIGKILL) leaves at most a `*.tmp<pid>.*`
file beside it.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator


def temporary_name(path: str) -> str:
    """The temporary name `written` uses for path: `<stem>.tmp<pid><ext>` beside it."""
    stem, ext = os.path.splitext(os.fspath(path))
    return f"{stem}.tmp{os.getpid()}{ext}"


@contextlib.contextmanager
def written(path: str | os.PathLike) -> Iterator[str]:
    """Yield a temporary name to write path's content to; move it to path when the block ends
    without an error (if it wrote anything), remove it when the block raises."""
    path = os.fspath(path)
    temporary = temporary_name(path)
    try:
        yield temporary
        if not os.path.exists(temporary):  # the block wrote nothing (a video with no frame)
            return
        with open(temporary, "rb+") as f:  # the content on disk before the name points to it
            os.fsync(f.fileno())
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(temporary)


def write_json(path: str | os.PathLike, data, **dump_options) -> None:
    """data as JSON at path, written whole (see `written`)."""
    with written(path) as temporary, open(temporary, "w") as f:
        json.dump(data, f, **dump_options)
