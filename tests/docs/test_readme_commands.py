"""README's test commands work as written in a fresh environment: every bash block that runs
pytest installs the `test` extra (or `all`, which holds it) first, and no sentence states a
test count that the suite's growth would make wrong (nor does Getting started)."""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _readme() -> str:
    with open(os.path.join(ROOT, "README.md")) as f:
        return f.read()


def test_every_pytest_block_installs_pytest():
    blocks = re.findall(r"```bash\n(.*?)```", _readme(), re.S)
    runs = [b for b in blocks if "pytest" in b]
    assert runs, "README runs no tests"
    for block in runs:
        for line in block.splitlines():
            if "python -m pytest" in line:
                before = line.split("python -m pytest")[0]
                assert re.search(r"\.\[[^\]]*\b(test|all)\b", before), f"installs no pytest first: {line}"


def test_no_test_count_is_stated():
    with open(os.path.join(ROOT, "docs", "getting-started.md")) as f:
        getting_started = f.read()
    for text in (_readme(), getting_started):
        assert not re.search(r"\b\d+ tests\b", text)
