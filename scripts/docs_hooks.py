"""MkDocs hooks (mkdocs.yml `hooks:`): parts of pages generated from the code and from data, so
that they cannot drift from it.

- `<!-- perf-tables -->` becomes the benchmark tables of docs/bench/*.json (scripts/perf_table.py),
  `<!-- robots-tables -->` those of docs/bench/robots/*.json, `<!-- peers-tables -->` the newest
  run of docs/bench/peers/*.json (`python -m unienv.bench --peers`) and `<!-- pixels-tables -->`
  that of docs/bench/pixels/*.json (`python -m unienv.bench pixels`).
- `<!-- task: NAME -->` becomes the reference of task NAME: its Gymnasium id, spaces, the
  backend features it requires, its constructor options with their defaults (what `task.<option>=`
  sets on the command line), and its module docstring (reward terms, termination, parity; a
  velocity task's is its robot spec's).
- `<!-- gallery -->` becomes the grid of task frames in docs/frames/ (scripts/gallery.py).
- `<!-- velocity-robots -->`, `<!-- velocity-terms -->`, `<!-- velocity-task -->` become the
  table of the velocity task's robots (from their specs), the table of its reward terms (from
  their docstrings) and the task's own docstring.
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


def velocity_robots() -> str:
    """The velocity task's robots, a row each, from their specs (tasks/velocity/robots/)."""
    from unienv.tasks import TASKS, Velocity, task_class

    ids: dict[str, list[str]] = {}
    for name, entry in TASKS.items():
        if isinstance(entry, Velocity):
            ids.setdefault(entry.robot, []).append(name)
    rows = [
        "| robot | tasks | model | source | license | PD gains | action scale | timing |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for names in ids.values():
        r = task_class(names[0]).robot
        model = f"tasks/assets/{os.path.basename(r.scene)}" if os.path.isabs(r.scene) else r.scene
        scale = f"{r.action_scale} x torque limit / kp" if r.scale_by_torque else f"{r.action_scale} rad"
        timing = f"{r.sim_dt * 1e3:g} ms x {r.decimation} = {r.sim_dt * r.decimation * 1e3:g} ms"
        tasks = ", ".join(f"`{n}`" for n in names)
        rows.append(
            f"| {r.title} | {tasks} | `{model}` | {r.source} | {r.license} | {r.gains_doc} | {scale} | {timing} |"
        )
    return "\n".join(rows)


def velocity_terms() -> str:
    """The legged reward terms (tasks/velocity/terms.py), a row each: its name, its docstring, what
    it reads beyond the base reading."""
    from unienv.tasks.velocity.terms import TERMS

    rows = ["| term | what | reads |", "| --- | --- | --- |"]
    for name, fn in TERMS.items():
        what = " ".join(inspect.cleandoc(fn.__doc__ or "").split()).replace("|", "\\|")  # not a cell's end
        rows.append(f"| `{name}` | {what} | {', '.join(fn.reads) or 'the base reading'} |")
    return "\n".join(rows)


def velocity_task() -> str:
    """The velocity task's module docstring, as a text block."""
    from unienv.tasks.velocity import task

    return "\n".join(["```text", inspect.cleandoc(task.__doc__), "```"])


def gallery() -> str:
    """The frames of docs/frames/ (scripts/gallery.py), one per task, in the registry's order, as a
    grid of captioned images (raw HTML: the page is /gallery/, the frames /frames/)."""
    from unienv.tasks import TASKS

    found = {
        os.path.basename(p)[: -len(".jpg")] for p in glob.glob(os.path.join(ROOT, "docs", "frames", "*.jpg"))
    }
    figures = [
        f'<figure><img src="../frames/{name}.jpg" alt="{name}" loading="lazy"><figcaption><code>{name}</code></figcaption></figure>'
        for name in TASKS
        if name in found
    ]
    return "\n".join(['<div class="gallery">', *figures, "</div>"])


GENERATED = {
    "velocity-robots": velocity_robots,
    "velocity-terms": velocity_terms,
    "velocity-task": velocity_task,
    "gallery": gallery,
}


BENCH_TABLES = {  # marker -> (folder of docs/bench/ holding its runs' JSON, its renderer)
    "perf-tables": ("", perf_table.render),
    "robots-tables": ("robots", perf_table.render),
    "peers-tables": ("peers", perf_table.render_peers),
    "pixels-tables": ("pixels", perf_table.render_pixels),
}


def on_page_markdown(markdown: str, page, config, files) -> str:
    for marker, make in GENERATED.items():
        if f"<!-- {marker} -->" in markdown:
            markdown = markdown.replace(f"<!-- {marker} -->", make())
    for marker, (folder, render) in BENCH_TABLES.items():
        if f"<!-- {marker} -->" in markdown:
            runs = sorted(glob.glob(os.path.join(ROOT, "docs", "bench", folder, "*.json")))
            markdown = markdown.replace(f"<!-- {marker} -->", render(runs))
    return TASK.sub(lambda m: task_reference(m.group(1)), markdown)
