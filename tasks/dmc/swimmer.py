"""dm_control's swimmer swimmer6: a 6-link planar swimmer in a viscous fluid swims its nose to a target.

Model: dm_control's swimmer.xml with 6 links, built as dm_control builds it (5 segments
after the head, each with a joint limited to +-60 degrees, a motor, a velocimeter and a
gyro on a site; written once to unienv's cache folder), 0.002 s, 15 physics steps per env
step (0.03 s), 1000 steps. Action (5): the joint motors. Observation (25): joints = qpos
without the root's x, y, yaw (5); to_target = target - nose in the head's frame, x and y
(2); body_velocities = each link's local x, y velocity and z angular velocity, from its
velocimeter and gyro (18). Reward: tolerance(|to_target|, (0, 0.1), margin 0.5,
long_tail). Reset: root yaw ~ U(-pi, pi), joints ~ U(their range), at rest; the target at
x, y ~ U(-b, b) with b = 0.3 with probability 0.2, else 2. dm_control moves the target geom
in the model; here each env keeps its target in memory.
"""

import gymnasium as gym
import numpy as np

from unienv.tasks.dmc.common import DMCTask, derived_scene, tolerance

LINKS = 6
BLOCKS = {"joints": LINKS - 1, "to_target": 2, "body_velocities": 3 * LINKS}
TARGET_SIZE = 0.1  # the target geom's radius


def add_links(root, links: int = LINKS) -> None:
    """dm_control's swimmer of `links` links: a chain of segments 0.1 m apart after the head."""
    from xml.etree.ElementTree import SubElement

    parent = root.find("./worldbody/body")
    actuator, sensor = SubElement(root, "actuator"), SubElement(root, "sensor")
    limit = 360.0 / links
    for i in range(links - 1):
        body = SubElement(parent, "body", {"name": f"segment_{i}", "pos": "0 .1 0"})
        SubElement(body, "geom", {"class": "visual", "name": f"visual_{i}"})
        SubElement(body, "geom", {"class": "inertial", "name": f"inertial_{i}"})
        SubElement(body, "site", {"name": f"site_{i}"})
        SubElement(body, "joint", {"name": f"joint_{i}", "range": f"{-limit} {limit}"})
        SubElement(actuator, "motor", {"name": f"motor_{i}", "joint": f"joint_{i}"})
        SubElement(sensor, "velocimeter", {"name": f"velocimeter_{i}", "site": f"site_{i}"})
        SubElement(sensor, "gyro", {"name": f"gyro_{i}", "site": f"site_{i}"})
        parent = body
    for camera in root.findall("./worldbody/body/camera"):
        if camera.get("mode") == "trackcom":
            camera.set("pos", " ".join(str(float(v) * links / 6.0) for v in camera.get("pos").split()))


class SwimmerSwimmer6(DMCTask):
    name = "dmc_swimmer_swimmer6"
    domain = "swimmer"
    sim_dt = 0.002
    decimation = 15
    time_limit = 30.0
    root_body = "head"
    blocks = BLOCKS
    single_action_space = gym.spaces.Box(-1.0, 1.0, (LINKS - 1,), np.float32)
    camera = {"distance": 2.0, "azimuth": 90.0, "elevation": -60.0, "track_body": "head"}

    @property
    def scene(self) -> str:
        return derived_scene(self.domain, f"{LINKS}links", add_links)

    def resolve(self, backend):
        self.head = backend.find("body", ["head"])
        self.velocity_sensors = ["head_vel", "head_gyro"]
        for i in range(LINKS - 1):
            self.velocity_sensors += [f"velocimeter_{i}", f"gyro_{i}"]

    def read(self, backend):
        xp, s = self.xp, self.read_state(backend)
        s["nose"] = self.sensor(backend, "nose_pos")
        s["head"] = self.xmat(backend, self.head)[:, 0].reshape(len(s["nose"]), 3, 3)
        local = xp.concat([self.sensor(backend, n) for n in self.velocity_sensors], 1).reshape(
            len(s["nose"]), LINKS, 6
        )
        s["body_velocities"] = local[:, :, [0, 1, 5]].reshape(len(local), 3 * LINKS)
        return s

    def _to_target(self, s, memory):
        """target - nose in the head's frame, x and y (N, 2)."""
        return ((memory["target"] - s["nose"])[:, None, :] @ s["head"])[:, 0, :2]

    def observe(self, s, memory):
        return self.xp.concat((s["qpos"][:, 3:], self._to_target(s, memory), s["body_velocities"]), 1)

    def reward(self, s, prev, action, memory):
        distance = self.xp.norm(self._to_target(s, memory))
        r = tolerance(self.xp, distance, (0.0, TARGET_SIZE), margin=5 * TARGET_SIZE, sigmoid="long_tail")
        return r, {"at_target": r}

    def reset_memory(self, rng):
        xp = self.xp
        close = rng.uniform((1,), dtype=self.dtype) < 0.2
        box = xp.where(close, self.array(0.3), self.array(2.0))
        xy = box * rng.uniform((2,), -1.0, 1.0, dtype=self.dtype)
        return {"target": xp.concat((xy, xp.zeros((len(xy), 1), self.dtype) + 0.05), 1)}

    def scene_marks(self, memory):
        """Camera images draw each env's target, and the light dm_control moves with it, at its x, y."""
        xy = memory["target"][:, :2]
        return {"geom_pos": {"target": xy}, "light_pos": {"target_light": xy}}
