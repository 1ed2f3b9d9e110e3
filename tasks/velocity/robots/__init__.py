"""The velocity task's robots, one spec (`unienv.tasks.velocity.spec.RobotSpec`) per module; the
registry (`unienv.tasks.TASKS`) binds each to the task by name."""
