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
import errno
import fcntl
import json
import os
from collections.abc import Iterator

from unienv.errors import ArgumentError


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
        try:
            yield temporary
        except OSError as e:  # named by the file the user asked for
            if e.filename in (None, temporary):
                e.filename = path
            raise
        except Exception as e:  # a writer in C++ (torch.save: "iostream error") on a full disk
            full = _full(path)
            if full is None:
                raise
            raise full from e
        if not os.path.exists(temporary):  # the block wrote nothing (a video with no frame)
            return
        with open(temporary, "rb+") as f:  # the content on disk before the name points to it
            os.fsync(f.fileno())
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            os.remove(temporary)


def _full(path: str) -> OSError | None:
    """An ENOSPC error naming path if its file system has no block left, else None."""
    try:
        free = os.statvfs(os.path.dirname(os.path.abspath(path))).f_bavail
    except OSError:
        return None
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path) if free == 0 else None


def write_json(path: str | os.PathLike, data, **dump_options) -> None:
    """data as JSON at path, written whole (see `written`)."""
    with written(path) as temporary, open(temporary, "w") as f:
        json.dump(data, f, **dump_options)


LOCK = ".unienv.lock"


def take_folder(folder: str | os.PathLike) -> int:
    """Hold `folder` for this process (an advisory lock on `<folder>/.unienv.lock`, released when
    the process ends, however it ends); a second process is refused, naming the folder. Returns
    the lock's file descriptor: keep it open."""
    os.makedirs(folder, exist_ok=True)
    fd = os.open(os.path.join(folder, LOCK), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise ArgumentError(
            f"run folder: {os.fspath(folder)} is in use by another run; give this one its own "
            "(hydra.run.dir=...)"
        ) from None
    return fd
