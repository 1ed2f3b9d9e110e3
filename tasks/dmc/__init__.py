"""The DeepMind Control Suite: dm_control's tasks on the models its package ships, their rewards
written in the tasks' arrays (common.py: dm_control's `tolerance`, the scenes it derives); offered
where dm-control is installed (the dmc extra). tests/tasks/test_dmc.py steps them beside
dm_control."""
