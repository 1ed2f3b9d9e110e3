"""Collection rules for the task tests.

The DeepMind Control Suite tasks (dmc_*) are registered only where dm-control is installed
(without it test_dmc.py is skipped, saying so). test_tasks.py's and test_layout.py's per-task
runs on the other backends (genesis, mjwarp) are kept for two dmc domains that both run
(cartpole, reacher):
test_dmc.py checks genesis's refusals and docs/dmc.md records which backend runs which
domain, so that 25 genesis scene builds do not enter the suite's time.
"""

import pytest

OTHER_BACKEND_DMC = {"dmc_cartpole_balance", "dmc_reacher_easy"}
PER_TASK_ON_OTHER_BACKENDS = {
    "test_random_actions_stay_finite_on_other_backends",
    "test_observation_width_is_the_sum_of_the_blocks",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        params = item.callspec.params if hasattr(item, "callspec") else {}
        name = params.get("name")
        if (
            isinstance(name, str)
            and name.startswith("dmc_")
            and name not in OTHER_BACKEND_DMC
            and item.originalname in PER_TASK_ON_OTHER_BACKENDS
            and params.get("backend", "other") != "mujoco"
        ):
            item.add_marker(pytest.mark.skip(reason="dmc domains on other backends: see test_dmc.py"))
