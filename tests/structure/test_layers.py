"""The code's shape: layers that import only downwards, no import circle, small units, and
the env's execution model chosen in one place.

Imports inside functions count as much as module-level ones (an engine imported inside a
function is how the backends keep optional engines optional, but a unienv module imported there
is still a dependency). `tasks/` is the package `unienv.tasks`.
"""

import ast
import importlib.util
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE_DIRS = {"unienv": ROOT / "unienv", "unienv.tasks": ROOT / "tasks"}
MAX_UNIT_LINES = 320
# The package's groups, lower first: a module may import its own group and those before it,
# never one after it (the allowed directions). The folder list is the architecture.
LAYERS = [
    ("unienv.errors", "unienv.utils"),  # exceptions; arrays, random streams, rows, files, limits
    ("unienv.backends",),  # the SimBackend contract and one module per engine
    # what a task is made of: the contract, the tasks, terrain, rendering, sensors, robot models,
    # motion files (g1_tracking's reference)
    (
        "unienv.task",
        "unienv.tasks",
        "unienv.terrain",
        "unienv.render",
        "unienv.sensors",
        "unienv.robots",
        "unienv.motion",
    ),
    ("unienv.dr",),  # domain randomization, scheduled over a backend's DR terms
    ("unienv.env", "unienv.make"),  # the VectorEnv and its constructors
    # above the env: adapters for RL libraries; the deployment contract a policy file carries
    # and the standalone runner; training, which writes policy files with their contract
    ("unienv.wrappers",),
    ("unienv.deploy",),
    ("unienv.training",),
    ("unienv.policies",),  # the trained policy files unienv ships (data; training.shipped finds them)
    # tools behind the CLI; deploy's check and its command line read unienv's policy files with
    # training's loaders, so they sit here, above training, while the contract stays below it
    (
        "unienv.bench",
        "unienv.tools",
        "unienv.viewer",
        "unienv.dynamics",
        "unienv.deploy.check",
        "unienv.deploy.__main__",
    ),
]
# The package's top folder: what `import unienv` and `python -m unienv` need, and the import paths
# users write (unienv.make, unienv.Task, unienv.errors); everything else lives in a group's folder.
TOP_LEVEL = {
    "__init__.py": "import unienv: the public names, the Gymnasium ids, the Hydra configs",
    "__main__.py": "python -m unienv: list, options, sim2sim, export, deploy, motion",
    "make.py": "unienv.make and the Gymnasium registrations",
    "task.py": "unienv.Task, the task contract",
    "errors.py": "unienv.errors, the exceptions users catch",
}


def modules() -> dict[str, pathlib.Path]:
    """Every module of unienv (tasks included) by dotted name."""
    found = {}
    for package, folder in PACKAGE_DIRS.items():
        for path in folder.rglob("*.py"):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            if package == "unienv" and parts[:1] == ["tasks"]:
                continue
            found[".".join([package, *parts])] = path
    return found


MODULES = modules()


def imports(name: str, function_level: bool = False) -> set[str]:
    """The unienv modules `name` imports at module level (not under `if TYPE_CHECKING`), and
    with `function_level` those it imports inside its functions too."""
    tree = ast.parse(MODULES[name].read_text())
    package = name if MODULES[name].name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in _statements(tree) if function_level else tree.body:
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + [base]
                ).strip(".")
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        out |= {t for t in targets if t in MODULES and t != name}
    return out


def _statements(tree: ast.AST):
    """Every node of `tree`, but what an `if TYPE_CHECKING:` holds (annotations' imports)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        yield node
        yield from _statements(node)


GRAPH = {name: imports(name) for name in MODULES}  # what importing a module imports
# and what its functions import when they run: a circle or an upward import hidden in a function
# is one all the same
FULL_GRAPH = {name: imports(name, function_level=True) for name in MODULES}


def layer(name: str) -> int | None:
    """The group of `name`: that of its longest matching prefix (a module may sit apart from its
    folder's group: deploy's check)."""
    found = [
        (len(p), i)
        for i, prefixes in enumerate(LAYERS)
        for p in prefixes
        if name == p or name.startswith(p + ".")
    ]
    return max(found)[1] if found else None


@pytest.mark.parametrize("graph", [GRAPH, FULL_GRAPH], ids=["module level", "function level too"])
def test_no_import_circle(graph):
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(name, trail):
        if state.get(name) == 1:
            raise AssertionError("import circle: " + " -> ".join(trail[trail.index(name) :] + [name]))
        if state.get(name) == 2:
            return
        state[name] = 1
        for other in sorted(graph[name]):
            visit(other, trail + [name])
        state[name] = 2

    for name in sorted(graph):
        visit(name, [])


def test_layers_import_only_downwards():
    upward = [
        f"{a} imports {b}"
        for a, targets in FULL_GRAPH.items()
        for b in targets
        if layer(a) is not None and layer(b) is not None and layer(b) > layer(a)
    ]
    assert not upward, upward


def test_tasks_are_reached_through_the_registry():
    """Nothing outside tasks/ imports a particular task (training's evaluation, the viewer, the
    deployment contract and the tools read a task's blocks and options by name, and name a task
    through unienv.tasks); a robot spec imports no other robot's."""
    outside = [
        f"{a} imports {b}"
        for a, targets in FULL_GRAPH.items()
        for b in targets
        if not a.startswith("unienv.tasks") and b.startswith("unienv.tasks.") and b != "unienv.tasks.common"
    ]
    robots = "unienv.tasks.velocity.robots."
    between = [
        f"{a} imports {b}"
        for a, t in FULL_GRAPH.items()
        for b in t
        if a.startswith(robots) and b.startswith(robots)
    ]
    assert not outside and not between, outside + between


def test_the_top_folder_holds_only_the_listed_modules():
    found = {p.name for p in (ROOT / "unienv").glob("*.py")}
    assert found == set(TOP_LEVEL), (
        f"unlisted: {sorted(found - set(TOP_LEVEL))}, missing: {sorted(set(TOP_LEVEL) - found)}"
    )


def test_every_module_is_in_a_group():
    """A new folder takes its place in LAYERS (and so its allowed directions) when it is made."""
    top = {"unienv." + name.removesuffix(".py") for name in TOP_LEVEL} - {"unienv.__init__"}
    ungrouped = [name for name in MODULES if layer(name) is None and name not in top | {"unienv"}]
    assert not ungrouped, ungrouped


def test_every_package_is_installed():
    """pyproject's package list names every folder of unienv and of tasks/ that holds Python, and
    each such folder has an __init__.py (a missing one is absent from a non-editable install)."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {
        ".".join((package, *p.parent.relative_to(folder).parts))
        for package, folder in PACKAGE_DIRS.items()
        for p in folder.rglob("*.py")
    }
    assert folders <= listed, sorted(folders - listed)
    bare = [f for package, folder in PACKAGE_DIRS.items() for f in {p.parent for p in folder.rglob("*.py")}]
    assert not [str(f) for f in bare if not (f / "__init__.py").exists()]


def test_no_unit_is_longer_than_a_few_screens():
    long = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_UNIT_LINES:
                    long.append(f"{name}.{node.name}: {lines} lines")
    assert not long, long


def test_the_execution_model_is_read_in_one_place():
    """Only the module that chooses the env's path reads `sync_free` or the task's namespace."""
    readers = [
        str(path.relative_to(ROOT))
        for name, path in MODULES.items()
        if (name.startswith("unienv.env") or name.startswith("unienv.dr"))
        and re.search(r"\.sync_free|_host_arrays", path.read_text())
    ]
    assert readers == ["unienv/env/paths.py"], readers


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.startswith("unienv.env")))
def test_the_env_calls_no_private_backend_method(name):
    calls = re.findall(r"backend\._\w+", MODULES[name].read_text())
    assert not calls, calls


def test_every_module_is_found():
    assert importlib.util.find_spec("unienv.env.paths") and "unienv.env.paths" in MODULES
    assert "unienv.tasks.gym.cartpole" in MODULES and "unienv.backends.base" in MODULES
