"""MkDocs hooks (mkdocs.yml `hooks:`): parts of pages generated from the code and from data, so
that they cannot drift from it.

- `<!-- perf-tables -->` becomes the benchmark tables of docs/bench/*.json (scripts/perf_table.py),
  `<!-- peers-tables -->` those of docs/bench/peers/*.json (`python -m unienv.bench --peers`).
- `<!-- task: NAME -->` becomes the reference of task NAME: its Gymnasium id, spaces, the
  backend features it requires, its constructor options with their defaults (what `task.<option>=`
  sets on the command line), and its module docstring (reward terms, termination, parity).
"""

from __future__ import annotations

import glob
import importlib
import inspect
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import perf_table  # noqa: E402

TASK = re.compile(r"^<!-- task: (\w+) -->$", re.M)


def task_reference(name: str) -> str:
    from unienv.tasks import gym_id, option_defaults, task_class

    cls = task_class(name)
    task = cls()
    doc = inspect.cleandoc(importlib.import_module(cls.__module__).__doc__ or "")  # a robot's: its spec's
    options = ", ".join(f"`{k}={v!r}`" for k, v in option_defaults(name).items()) or "none"
    needs = ", ".join(f"`{f}`" for f in task.requires) or "nothing beyond the core contract"
    return "\n".join(
        [
            f"`{gym_id(name)}` · action `{task.single_action_space}` · observation "
            f"`{task.single_observation_space}`",
            "",
            f"- requires: {needs}",
            f"- options (`task.<option>=` on the command line, `task_options=` in `unienv.make`): {options}",
            f"- physics: `sim_dt={task.sim_dt}`, `decimation={task.decimation}`, root body `{task.root_body}`",
            "",
            "```text",
            doc,
            "```",
        ]
    )


def on_page_markdown(markdown: str, page, config, files) -> str:
    if "<!-- perf-tables -->" in markdown:
        runs = sorted(glob.glob(os.path.join(ROOT, "docs", "bench", "*.json")))
        markdown = markdown.replace("<!-- perf-tables -->", perf_table.render(runs))
    if "<!-- peers-tables -->" in markdown:
        runs = sorted(glob.glob(os.path.join(ROOT, "docs", "bench", "peers", "*.json")))
        markdown = markdown.replace("<!-- peers-tables -->", perf_table.render_peers(runs))
    return TASK.sub(lambda m: task_reference(m.group(1)), markdown)
