"""Reading a file unienv did not write in this process: checkpoints, policy files, ONNX graphs,
motion files and CSV clips, robot models.

Every such file is untrusted: it may be damaged, hand-made or hostile. One rule holds for each
of them, in this order, before anything is parsed or allocated:

- `regular_file` refuses what is not a plain file, without opening it (a FIFO would block the
  reader for ever, a device such as /dev/zero would stream without end, a folder is not a file),
  and a file larger than the caller's bound;
- `archive_entries` refuses a zip archive (torch.save's and NumPy's .npz) whose entries are
  compressed (both writers store them; deflate lets 4 MB declare 4 GiB), repeated, or declare
  more bytes than the file holds or the memory free;
- `npz_arrays` reads only the arrays a format names, each after its .npy header: a plain
  dtype (no objects, so nothing is unpickled), and a shape whose bytes are exactly the entry's
  data, so nothing is allocated beyond what the file itself holds.

A refusal is one `ArgumentError` line that names the file (`where`) and what was expected; it
never repeats a library's advice to load unsafely (`allow_pickle=True`, `weights_only=False`).
"""

from __future__ import annotations

import math
import os
import stat
import zipfile
from collections.abc import Iterable

import numpy as np

from unienv.errors import ArgumentError, shown
from unienv.utils import limits

MAX_FILE = 1 << 34
"""The largest file (16 GiB) unienv reads back; a larger one is refused before it is opened."""
MAX_ENTRIES = 1 << 16
"""The most entries of a zip archive read back (a checkpoint holds one per tensor, a motion 11)."""
PLAIN_KINDS = "biufU"  # bool, ints, floats, unicode: dtypes whose bytes are the values themselves


def regular_file(path: str | os.PathLike, where: str, bound: int = MAX_FILE) -> int:
    """The size of path, a regular file of at most `bound` bytes (a symlink to one is fine);
    anything else is refused by its kind, without being opened."""
    if not isinstance(path, (str, os.PathLike)):
        raise ArgumentError(f"{where}: expected a file's path, got {shown(path)}")
    path = os.fspath(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise ArgumentError(f"{where}: file not found: {path!r}") from None
    except OSError as e:
        raise ArgumentError(f"{where}: cannot read {path!r}: {e.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        kind = (
            "a folder"
            if stat.S_ISDIR(info.st_mode)
            else "a FIFO"
            if stat.S_ISFIFO(info.st_mode)
            else "a device or socket"
        )
        raise ArgumentError(f"{where}: {path} is not a regular file (it is {kind})")
    if info.st_size > bound:
        raise ArgumentError(
            f"{where}: {path} has {limits.readable_bytes(info.st_size)}, more than the "
            f"{limits.readable_bytes(bound)} unienv reads of such a file"
        )
    return info.st_size


def archive_entries(path: str, where: str, size: int, kind: str) -> dict[str, zipfile.ZipInfo]:
    """The entries of the zip archive at path (of `size` bytes), by name: each stored
    uncompressed, each name once, their declared sizes within the file and the memory free.
    `kind` names the archive expected ("a torch.save archive"). Reads the central directory only."""
    count = _declared_entries(path)
    if count > MAX_ENTRIES:
        raise ArgumentError(f"{where}: {path}: declares {count} entries; {kind} has at most {MAX_ENTRIES}")
    try:
        with zipfile.ZipFile(path) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
        raise ArgumentError(
            f"{where}: {path} is not {kind} (not a zip archive: {e or type(e).__name__})"
        ) from None
    found, total = {}, 0
    for entry in entries:
        if entry.compress_type != zipfile.ZIP_STORED:
            raise ArgumentError(
                f"{where}: {path}: entry {entry.filename!r} is compressed (method {entry.compress_type}); "
                f"{kind} stores its entries uncompressed, and a compressed one can expand without bound"
            )
        if entry.file_size != entry.compress_size:
            raise ArgumentError(
                f"{where}: {path}: entry {entry.filename!r} declares {entry.file_size} bytes in {entry.compress_size}"
            )
        if entry.filename in found:
            raise ArgumentError(f"{where}: {path}: entry {entry.filename!r} appears twice")
        found[entry.filename] = entry
        total += entry.file_size
    if total > size:
        raise ArgumentError(
            f"{where}: {path}: its entries declare {total} bytes, more than the file's {size}"
        )
    limits.check_memory(f"{where}: {path}", total, "cpu", "its entries")
    return found


def _declared_entries(path: str) -> int:
    """The entry count a zip's end record declares (zip64's where it says 0xFFFF), read from the
    file's last 64 KiB before its central directory is parsed; 0 where there is no end record."""
    with open(path, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        start = max(0, size - (1 << 16) - 22)
        f.seek(start)
        tail = f.read()
        end = tail.rfind(b"PK\x05\x06")
        if end < 0 or len(tail) < end + 22:
            return 0
        count = int.from_bytes(tail[end + 10 : end + 12], "little")
        locator = tail.rfind(b"PK\x06\x07", 0, end)
        if count != 0xFFFF or locator < 0:
            return count
        f.seek(int.from_bytes(tail[locator + 8 : locator + 16], "little"))
        record = f.read(40)
    return int.from_bytes(record[32:40], "little") if record[:4] == b"PK\x06\x06" else count


def npz_arrays(path: str | os.PathLike, where: str, names: Iterable[str]) -> dict[str, np.ndarray]:
    """The arrays `names` of the NumPy .npz archive at path (read-only, as stored); every other
    entry is left unread. Refused: not a regular file, an entry compressed or larger than the
    file (`archive_entries`), a missing array, a dtype that is not plain (objects, structures),
    or a header whose shape needs other bytes than its entry holds."""
    path = os.fspath(path)
    size = regular_file(path, where)
    kind = "a NumPy .npz archive (np.savez)"
    entries = archive_entries(path, where, size, kind)
    missing = [n for n in names if f"{n}.npy" not in entries]
    if missing:
        raise ArgumentError(f"{where}: {path}: expected {kind} with the arrays {missing}; they are missing")
    out = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for name in names:
                out[name] = _npy(archive, entries[f"{name}.npy"], f"{where}: {path}: {name}")
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        raise ArgumentError(f"{where}: {path} is not {kind} ({e or type(e).__name__})") from None
    return out


def _npy(archive: zipfile.ZipFile, entry: zipfile.ZipInfo, where: str) -> np.ndarray:
    """One .npy entry, its header checked against the entry's size before its data is read."""
    from numpy.lib import format as npy

    with archive.open(entry) as f:
        try:
            version = npy.read_magic(f)
            read_header = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
            shape, fortran, dtype = read_header(f)
        except (ValueError, TypeError, SyntaxError, RecursionError, UnicodeDecodeError) as e:
            raise ArgumentError(f"{where}: expected a .npy array ({str(e).splitlines()[0][:120]})") from None
        if dtype.hasobject or dtype.kind not in PLAIN_KINDS or dtype.fields is not None or not dtype.itemsize:
            raise ArgumentError(f"{where}: expected numbers or text, got dtype {dtype.str!r}")
        if any(d < 0 for d in shape):
            raise ArgumentError(f"{where}: expected a shape of sizes >= 0, got {shape}")
        nbytes, held = math.prod(shape) * dtype.itemsize, entry.file_size - f.tell()
        if nbytes != held:
            raise ArgumentError(
                f"{where}: its header declares shape {shape} of {dtype.str} ({limits.readable_bytes(nbytes)}), "
                f"its entry holds {limits.readable_bytes(held)}"
            )
        data = f.read(nbytes)
    return np.frombuffer(data, dtype).reshape(shape, order="F" if fortran else "C")


MAX_MJCF_BYTES = 1 << 24
"""The largest MJCF file (16 MiB) unienv parses; Menagerie's are tens of kilobytes."""
MAX_MJCF_FILES = 4096
"""The most files one MJCF may include or name (Menagerie's largest robots name a few hundred)."""


def mjcf_files(path: str | os.PathLike, where: str) -> None:
    """Refuse an MJCF file, or a file it includes or names (an `<include>`, a mesh, a texture, a
    heightfield, a skin: any `file*` attribute), that is not a regular file, before MuJoCo opens
    any of them: MuJoCo reads an include while it parses and a mesh while it compiles, and either
    would block on a FIFO or stream a device for ever. The XML is read by expat element by element
    (no tree is built). A named file is looked for where MuJoCo looks (the main file's folder,
    joined with the compiler's meshdir, texturedir or assetdir, or as given when absolute); one not
    there is MuJoCo's to report. The files' bytes must fit in the memory free."""
    path = os.fspath(path)
    root, pending, seen = os.path.dirname(os.path.abspath(path)), [path], set()
    folders, named, total = {""}, set(), 0
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        total += regular_file(current, where, MAX_MJCF_BYTES)
        for tag, attributes in _elements(current, where):
            if tag == "compiler":
                folders |= {attributes[k] for k in ("meshdir", "texturedir", "assetdir") if attributes.get(k)}
            for key, value in attributes.items():
                if key.startswith("file") and tag in ("include", "model"):  # XML MuJoCo parses with it
                    pending.append(os.path.join(root, value))
                elif key.startswith("file"):
                    named.add(value)
            if len(seen) + len(pending) + len(named) > MAX_MJCF_FILES:
                raise ArgumentError(f"{where}: {path} includes or names more than {MAX_MJCF_FILES} files")
    candidates = {
        os.path.join(root, folder, name)
        for value in named
        for folder in folders
        for name in (value, os.path.basename(value))  # the compiler's strippath names the second
        if name
    }
    total += sum(regular_file(c, where) for c in sorted(candidates) if os.path.exists(c))
    limits.check_memory(f"{where}: {path}", total, "cpu", "its files")


def _elements(path: str, where: str) -> list[tuple[str, dict]]:
    """(tag, attributes) of the XML file's elements that have a file or folder attribute, in
    order; more than MAX_MJCF_FILES of them is refused while the file is read."""
    from xml.parsers import expat

    found: list[tuple[str, dict]] = []

    def start(tag: str, attributes: dict) -> None:
        if tag == "compiler" or any(k.startswith("file") for k in attributes):
            found.append((tag, attributes))
            if len(found) > MAX_MJCF_FILES:
                raise ArgumentError(f"{where}: {path} names more than {MAX_MJCF_FILES} files")

    parser = expat.ParserCreate()
    parser.StartElementHandler = start
    try:
        with open(path, "rb") as f:
            parser.ParseFile(f)
    except expat.ExpatError as e:
        raise ArgumentError(f"{where}: {path} is not valid MJCF (XML: {e})") from None
    return found
