"""Hydra's configuration (play.py, train.py), shipped as unienv.cfg: unienv.make(dr="default")
reads the DR presets in dr/ from here, wherever unienv is installed.

The `task` group is generated, not written here: `import unienv` stores each task's options
dataclass in Hydra's ConfigStore (unienv.tasks.store_configs), as task/<name> and
task_options/<name>; task/ holds only presets that build on those (quadruped_rough.yaml)."""
