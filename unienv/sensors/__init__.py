"""Sensors a task or a config declares by name, each yielding a named observation block.

`Camera` and `CameraSensor` (`unienv.sensors.camera`): images of every env from a scene
camera or a free one, drawn by the engine's camera renderer (`unienv.render.cameras`).
"""

from unienv.sensors.camera import Camera, CameraSensor

__all__ = ["Camera", "CameraSensor"]
