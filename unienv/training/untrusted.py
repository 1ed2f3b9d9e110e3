"""Reading a file a run did not write itself: checkpoints and their env state.

Every such file is untrusted (`unienv.utils.untrusted` holds the rule every reader follows):
before anything is parsed or allocated, `regular_file` refuses what is not a plain file and
`check_archive` refuses a torch.save zip whose entries are compressed (torch.save stores them;
deflate lets 1 MB declare 1 GiB), repeated, or declared beyond the file or the memory free.
`load_torch` then reads the file with `torch.load(weights_only=True)`, which rebuilds tensors,
numbers, strings, lists and dicts and never runs code from the file.

What a file can do to a run: be refused, with one `ArgumentError` naming the file and what is
wrong. What it cannot do: run code, allocate more than its declared sizes (bounded by the file's
own size and the memory free), block the reader, or change anything of the run before every check
has passed (the callers check the whole content against what the current env expects, and only
then write; configuration is compared with the env's, never restored from the file).
"""

from __future__ import annotations

from typing import Any

import torch

from unienv.errors import ArgumentError
from unienv.utils.untrusted import archive_entries, regular_file


def check_archive(path: str, where: str, size: int) -> None:
    """A torch.save zip: its entries stored and within the file and the memory free
    (`archive_entries`), one of them the pickle `data.pkl`."""
    entries = archive_entries(path, where, size, "a torch.save archive")
    if not any(name.rsplit("/", 1)[-1] == "data.pkl" for name in entries):
        raise ArgumentError(
            f"{where}: {path} is a zip file but not a torch.save archive (it has no data.pkl)"
        )


def load_torch(path: str, where: str) -> Any:
    """The content of a torch.save file, after `regular_file` and `check_archive`; a refusal is
    one ArgumentError (torch's advice to turn off weights_only is never shown: it would turn
    off the protection)."""
    size = regular_file(path, where)
    if size == 0:
        raise ArgumentError(f"{where}: {path} is empty (0 bytes)")
    check_archive(path, where, size)
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # a pickle with code in it, a damaged file
        raise ArgumentError(f"{where}: {path} is not a unienv training checkpoint ({_cause(e)})") from None


def _cause(e: Exception) -> str:
    """torch's refusal in one line, without its advice to load with weights_only=False."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    kept = [
        line
        for line in lines
        if "weights_only" not in line
        and "WeightsUnpickler" not in line
        and not line.startswith(("(1)", "(2)", "Check the doc"))
    ]
    unsupported = next(
        (line for line in lines if "Unsupported global" in line or "Unsupported operand" in line), None
    )
    text = unsupported or (kept[0] if kept else "")
    return text.split(". ")[0] if text else type(e).__name__


def conform(value: Any, template: Any, where: str) -> None:
    """Refuse value unless it has template's structure: dicts with the same keys, lists and
    tuples of the same length, tensors of the same dtype and shape (floats without NaN),
    numbers, strings and None of the same type. `template` is what this run would write."""
    if isinstance(template, torch.Tensor):
        if not isinstance(value, torch.Tensor):
            raise ArgumentError(f"{where}: expected a tensor, got {type(value).__name__}")
        if value.dtype != template.dtype or value.shape != template.shape:
            raise ArgumentError(
                f"{where}: expected {str(template.dtype).removeprefix('torch.')} of shape "
                f"{tuple(template.shape)}, got {str(value.dtype).removeprefix('torch.')} of shape {tuple(value.shape)}"
            )
        if value.dtype.is_floating_point and torch.isnan(value).any():
            raise ArgumentError(f"{where}: holds NaN")
    elif isinstance(template, dict):
        if not isinstance(value, dict) or set(value) != set(template):
            keys = sorted(map(str, value)) if isinstance(value, dict) else type(value).__name__
            raise ArgumentError(f"{where}: expected the keys {sorted(map(str, template))}, got {keys}")
        for key, part in template.items():
            conform(value[key], part, f"{where}.{key}")
    elif isinstance(template, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(template):
            raise ArgumentError(f"{where}: expected a list of {len(template)}, got {type(value).__name__}")
        for i, (part, expected) in enumerate(zip(value, template, strict=True)):
            conform(part, expected, f"{where}[{i}]")
    elif type(value) is not type(template) and not (type(template) is float and type(value) is int):
        raise ArgumentError(f"{where}: expected a {type(template).__name__}, got {type(value).__name__}")
