"""Quadruped on rough terrain: the quadruped task (tasks/quadruped.py) on generated terrain,
with a height scan in its observation and a terrain curriculum, as legged_gym trains it.

Scene: assets/quadruped.xml with its floor replaced by a `unienv.terrain` heightmap
(`terrain`: a mapping of `TerrainConfig` fields, as the Hydra group cfg/terrain/
gives; default: every type, 10 levels). Each env spawns at the centre of its tile
(columns in turn by env index, levels up to `max_init_level`), facing a random yaw.
Action, command, reward terms and termination: the quadruped's, with the base
height measured from the ground under the base (the mean of the scan), and the
step reward floored at 0. Observation blocks: the quadruped's, then height_scan
(P): the terrain under a grid of P points around the base in its yaw frame
(`scan_size` m every `scan_resolution` m; 17 x 11 = 187 by default), as
clip(base z - 0.5 - h, -1, 1). The scan looks the heights up on the terrain's
surface (`unienv.terrain.Surface`: the engine's ray casts to rounding, at a fraction
of their cost). Curriculum (`unienv.terrain.Curriculum`), at each reset: an env that
walked more than half a tile from its spawn point moves up a level, one that walked
less than half what its command asked for over an episode moves down. Needs body
views and contact forces.
"""

import dataclasses

import numpy as np

from unienv.task import option
from unienv.tasks.velocity.quadruped import Quadruped, QuadrupedOptions
from unienv.terrain import Curriculum, Surface, from_cfg

SCAN_OFFSET, SCAN_CLIP = 0.5, 1.0  # m: the scan reads clip(base z - offset - ground height, +-clip)


@dataclasses.dataclass
class QuadrupedRoughOptions(QuadrupedOptions):
    terrain: dict | None = option(
        None,
        "TerrainConfig fields; play.py and train.py: the terrain group (terrain=mixed); None: every type",
    )
    max_init_level: int = option(0, "spawn levels spread over [0, max_init_level]")
    scan_size: tuple = option((1.6, 1.0), "m: the height scan's extent along and across the heading")
    scan_resolution: float = option(0.1, "m: the height scan's spacing")


class QuadrupedRough(Quadruped):
    name = "quadruped_rough"
    Options = QuadrupedRoughOptions

    def __init__(self, **options):
        super().__init__(**options)
        self.ground = from_cfg(self.terrain)
        self.terrain = dataclasses.asdict(self.ground.config)  # the option, as a policy file records it
        self.scene = self.ground.write_scene(self.scene)  # a robot variant's scene, set by its __init__
        along, across = (np.arange(-s / 2, s / 2 + 1e-9, self.scan_resolution) for s in self.scan_size)
        self.scan_points = np.stack(np.meshgrid(along, across, indexing="ij"), -1).reshape(-1, 2)

    def observation_blocks(self):
        return super().observation_blocks() | {"height_scan": len(self.scan_points)}

    def deployment(self):
        declared = super().deployment()
        scan = {"quantity": "height_scan", "frame": "base_yaw", "points": self.scan_points.tolist()}
        scan |= {"offset": SCAN_OFFSET, "clip": SCAN_CLIP, "scale": 1.0}
        return declared | {"observation": declared["observation"] | {"height_scan": scan}}

    def setup(self, backend):
        super().setup(backend)
        levels, columns = self.ground.spawn_origins(backend.num_envs, self.max_init_level)
        self.curriculum = Curriculum(
            self.ground, self.xp.asarray(levels), self.xp.asarray(columns), self.dtype
        )
        self.surface = Surface(self.ground, self.xp, self.dtype)
        self.scan_along, self.scan_across = (self.array(self.scan_points[:, i]) for i in (0, 1))

    def read(self, backend):
        xp, s, p = self.xp, super().read(backend), self.root_q
        qpos = xp.asarray(backend.get_state_views()["qpos"])
        rot = s["rot"]
        yaw = xp.arctan2(rot[:, 1, 0, None], rot[:, 0, 0, None])  # of the body's x axis
        cos, sin = xp.cos(yaw), xp.sin(yaw)
        along, across = self.scan_along, self.scan_across
        s["scan"] = self.surface(
            qpos[:, p, None] + cos * along - sin * across, qpos[:, p + 1, None] + sin * along + cos * across
        )
        s["z"] = s["height"]
        s["height"] = s["z"] - s["scan"].mean(1)  # above the ground under the base
        s["xy"] = xp.copy(qpos[:, p : p + 2])
        return s

    def observe(self, s, memory):
        heights = self.xp.clip(s["z"][:, None] - SCAN_OFFSET - s["scan"], -SCAN_CLIP, SCAN_CLIP)
        return self.xp.concat((super().observe(s, memory), heights), 1)

    def reward(self, s, prev, action, memory):
        """The quadruped's, floored at 0 (legged_gym's only_positive_rewards): on rough terrain,
        with pushes, the penalties outweigh the tracking terms early in training, and a
        negative step reward teaches the policy to fall at once."""
        total, terms = super().reward(s, prev, action, memory)
        return self.xp.clip(total, 0.0, None), terms

    def on_reset(self, mask, s, memory):
        walked = self.xp.norm(s["xy"] - self.curriculum.origins()[:, :2])
        commanded = self.xp.norm(memory["command"][:, :2]) * self.episode_length_s
        self.curriculum.update(mask, walked, commanded)

    def reset_state(self, env_ids, rng):
        qpos, qvel = super().reset_state(env_ids, rng)
        p = self.root_q
        qpos[:, p : p + 3] += self.curriculum.origins()[env_ids]
        xp, yaw = self.xp, rng.uniform((1,), -np.pi, np.pi, dtype=self.dtype)
        zero = xp.zeros_like(yaw)
        qpos[:, p + 3 : p + 7] = xp.concat((xp.cos(yaw / 2), zero, zero, xp.sin(yaw / 2)), 1)
        return qpos, qvel
