"""Legged velocity: a robot tracks a commanded planar velocity and yaw rate.

Robots are data, the task is behaviour: task.py is the one task (`VelocityTask`), spec.py what a
robot is to it (`RobotSpec`), robots/ one spec per robot, terms.py the reward terms as free
functions chosen and weighted by name. The registry (`unienv.tasks.TASKS`) binds a robot to the
task in one line (`"h1_velocity": velocity("h1")`); terrain, the height scan and the curriculum
are the task's options, not other classes.
"""
