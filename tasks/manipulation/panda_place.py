"""Panda place: panda_lift's Franka Panda (`tasks/manipulation/panda_lift.py`: the same Menagerie scene, arm,
inverse-kinematics action, reset and timing) picks up the box and carries it to a target
position drawn per episode, held there in the air.

Model: panda_lift's, with Menagerie's mocap marker "mocap_target" as it ships, a translucent red
box of the box's size, moved to the target. Action (4): panda_lift's, the gripper site's motion
along world x, y, z and the fingers' opening.

Target: x and y drawn uniformly from `target_box`, an area beside the box's (`cube_box`, 10 x
10 cm here, narrower than panda_lift's), on the left (y > 0) or, mirrored in y, on the right,
each with probability 1/2; so the target lies 10 to 27 cm from where the box starts, sideways,
where the arm reaches with its hand pointing down. Its height (the box's centre) is drawn from
`target_height_range`, 4 to 10 cm above the box's rest height: more than `success_tolerance`,
so a box pushed along the table never succeeds, it must be carried. The target is drawn apart
from the box's start (an area, not an offset from the box) because a task draws its memory
(`reset_memory`) apart from its state (`reset_state`).

Observation blocks: panda_lift's blocks of the arm and box (joint_pos, joint_vel,
gripper_opening, gripper_pos, cube_to_gripper, cube_quat, cube_lin_vel, cube_ang_vel), then
target_pos (3, world) and cube_to_target (3, target minus box, world). Reward terms per step,
each times its weight: panda_lift's reach, grasp and lift (1 - |target - box height| / (target -
rest height), floored at 0), then place, 1 - tanh(|target - box| / place_scale), counted only
while the box's centre is `lifted_height` above its rest height (so that carrying the box pays
and pushing it does not), and success (1 while successful). place_scale (15 cm) is wider than
reach_scale so that the term still slopes at the start of a 20 cm carry; place outweighs lift
so that a box held high beside the target pays less than one held at it. Success
(`info["is_success"]`, and in the episode statistics as the episode's last value): the box's
centre within `success_tolerance` of the target. Never terminates; truncated after
`episode_length_s` (3 s: grasp, lift, carry and hold). Needs body views, site Jacobians and
mocap (for the marker), as panda_lift.
"""

import dataclasses

from unienv.task import option, total
from unienv.tasks.manipulation.panda_lift import (
    ARM,
    ARM_AND_CUBE,
    REST_HEIGHT,
    PandaLift,
    PandaLiftOptions,
    corners,
    panda_scene,
)


@dataclasses.dataclass
class PandaPlaceOptions(PandaLiftOptions):
    episode_length_s: float = option(3.0, "s: an episode is truncated after it")
    cube_box: tuple = option(((0.5, -0.05), (0.6, 0.05)), "m: the box's xy at reset, low and high corners")
    target_box: tuple = option(
        ((0.5, 0.15), (0.6, 0.2)), "m: the target's xy area on the left (y > 0); mirrored in y half the time"
    )
    target_height_range: tuple = option((0.07, 0.13), "m: the target height of the box's centre")
    success_tolerance: float = option(0.025, "m: success while |target - box| is below it")
    lift_weight: float = option(2.0, "weight of the lift term (0 at rest, 1 at the target height)")
    place_weight: float = option(4.0, "weight of 1 - tanh(|target - box| / place_scale) while lifted")
    place_scale: float = option(0.15, "m: the place term's width")
    lifted_height: float = option(0.015, "m: the place term counts while the box is this far above rest")

    def __post_init__(self):
        super().__post_init__()
        self.target_box = corners(self.target_box, "target_box")


class PandaPlace(PandaLift):
    name = "panda_place"
    Options = PandaPlaceOptions

    def __init__(self, **options):
        super().__init__(**options)
        self.scene = panda_scene(plate=False)

    def observation_blocks(self):
        return {**ARM_AND_CUBE, "target_pos": 3, "cube_to_target": 3}

    def setup(self, backend):
        super().setup(backend)
        self.target_low, self.target_high = self.array(self.target_box)

    def observe(self, s, memory):
        target = memory["target"]
        return self.xp.concat((*self.arm_and_cube(s), target, target - s["qpos"][:, ARM + 2 : ARM + 5]), 1)

    def reward(self, s, prev, action, memory):
        xp, cube = self.xp, s["qpos"][:, ARM + 2 : ARM + 5]
        _, terms = super().reward(s, prev, action, memory)  # reach, grasp, lift, success (this task's)
        success = terms.pop("success")
        lifted = xp.astype(cube[:, 2] > REST_HEIGHT + self.lifted_height, self.dtype)
        distance = xp.norm(memory["target"] - cube)
        terms["place"] = self.place_weight * lifted * (1.0 - xp.tanh(distance / self.place_scale))
        terms["success"] = success
        return total(terms), terms

    def success(self, s, memory):
        return self.xp.norm(memory["target"] - s["qpos"][:, ARM + 2 : ARM + 5]) < self.success_tolerance

    def reset_memory(self, rng):
        xp = self.xp
        xy = rng.uniform((2,), self.target_low, self.target_high, dtype=self.dtype)
        side = 1.0 - 2.0 * xp.astype(rng.uniform((1,), dtype=self.dtype) < 0.5, self.dtype)  # +-1
        height = rng.uniform((1,), *self.target_height_range, dtype=self.dtype)
        return {"target": xp.concat((xy[:, :1], side * xy[:, 1:], height), 1)}
