"""The fenced code blocks of the README and the documentation site, as runnable examples.

Every ```python and ```bash block of README.md, docs/*.md and gpu/README.md is an example that the
test suite runs (tests/docs/test_examples.py), unless an HTML comment on the line before it says
otherwise (Markdown renderers do not show it):

    <!-- docs-test: skip REASON -->            not run; REASON says why (e.g. "needs a GPU")
    <!-- docs-test: replace OLD => NEW; ... -->  run with each OLD replaced by NEW, in order,
                                                 to make a long example short (num_envs, steps)
    <!-- docs-test: needs MODULE ... -->          run where every MODULE imports (an optional
                                                 extra: CI installs them all), else skipped

Several markers may stand on consecutive lines before one block.

A python block runs as a script; a bash block runs line by line under `bash -e`, with the `python`
of the test's interpreter first on PATH. Both run in a scratch directory that holds links to the
checkout's play.py, train.py, examples/, tasks/ and cfg/, so that the commands written for the
checkout's root run and their outputs (videos/, outputs/) land in the scratch directory.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LANGUAGES = ("python", "bash")
MARKER = re.compile(r"^<!--\s*docs-test:\s*(skip|replace|needs)\b(.*?)-->\s*$")
FENCE = re.compile(r"^```(\w*)\s*$")


@dataclasses.dataclass(frozen=True)
class Example:
    path: str  # relative to the checkout
    line: int  # of the opening fence, 1-based
    language: str
    code: str  # as run: the block with the marker's replacements made
    skip: str | None  # the reason it is not run
    needs: tuple[str, ...] = ()  # modules it imports from optional extras

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"


def markdown_files() -> list[str]:
    """The Markdown files whose blocks are examples, relative to the checkout."""
    paths = ["README.md", "gpu/README.md", *sorted(glob.glob("docs/*.md", root_dir=ROOT))]
    return [p for p in paths if os.path.isfile(os.path.join(ROOT, p))]


def _replacements(spec: str, where: str) -> list[tuple[str, str]]:
    pairs = []
    for part in spec.split(";"):
        old, sep, new = part.partition("=>")
        if not sep or not old.strip():
            raise ValueError(f"{where}: a docs-test replace needs OLD => NEW, got {part.strip()!r}")
        pairs.append((old.strip(), new.strip()))
    return pairs


def examples(path: str) -> list[Example]:
    """The python and bash blocks of the Markdown file `path` (relative to the checkout)."""
    with open(os.path.join(ROOT, path)) as f:
        lines = f.read().splitlines()
    for n, line in enumerate(lines, 1):
        if line.strip().startswith("<!-- docs-test") and not MARKER.match(line.strip()):
            raise ValueError(
                f"{path}:{n}: expected docs-test skip REASON, replace OLD => NEW or needs MODULE"
            )
    found, i = [], 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        start = i
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), None)
        if end is None:
            raise ValueError(f"{path}:{start + 1}: a code block that is never closed")
        i = end + 1
        if fence.group(1) not in LANGUAGES:
            continue
        code = "\n".join(lines[start + 1 : end]) + "\n"
        markers, j = [], start - 1
        while j >= 0 and MARKER.match(lines[j].strip()):
            markers.insert(0, MARKER.match(lines[j].strip()))
            j -= 1
        skip, needs = None, ()
        for marker in markers:
            kind, arg = marker.group(1), marker.group(2).strip()
            if kind == "skip":
                if not arg:
                    raise ValueError(f"{path}:{start}: docs-test skip needs a reason")
                skip = arg
            elif kind == "needs":
                needs += tuple(arg.split())
            else:
                for old, new in _replacements(arg, f"{path}:{start}"):
                    if old not in code:
                        raise ValueError(f"{path}:{start}: {old!r} is not in the block it should replace")
                    code = code.replace(old, new)
        found.append(Example(path, start + 1, fence.group(1), code, skip, needs))
    return found


def all_examples() -> list[Example]:
    return [e for path in markdown_files() for e in examples(path)]
