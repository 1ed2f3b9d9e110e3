"""Collection rules for the task tests.

The DeepMind Control Suite tasks (dmc_*) simulate models that the dm-control package ships:
without it, every test of a dmc task is skipped with that reason. test_tasks.py's
per-task runs on the other backends (genesis, mjwarp) are kept for two dmc domains that
both run (cartpole, reacher); tests/tasks/test_dmc.py checks genesis's refusals, and
docs/dmc.md records which backend runs which domain, so that 25 genesis scene builds do
not enter the suite's time.
"""

import importlib.util

import pytest

HAS_DM_CONTROL = importlib.util.find_spec("dm_control") is not None
OTHER_BACKEND_DMC = {"dmc_cartpole_balance", "dmc_reacher_easy"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        name = getattr(item, "callspec", None) and item.callspec.params.get("name")
        if not (isinstance(name, str) and name.startswith("dmc_")):
            continue
        if not HAS_DM_CONTROL:
            item.add_marker(
                pytest.mark.skip(reason="dm-control is not installed (pip install 'unienv[dmc]')")
            )
        elif item.originalname == "test_random_actions_stay_finite_on_other_backends" and (
            name not in OTHER_BACKEND_DMC
        ):
            item.add_marker(pytest.mark.skip(reason="dmc domains on other backends: see test_dmc.py"))
