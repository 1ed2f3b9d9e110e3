"""G1 tracking: the Unitree G1 imitates a reference motion, as BeyondMimic does (Liao et al.
2025, "BeyondMimic"; its reward and termination terms as mjlab's G1 tracking task states them).

Robot, PD gains, default pose, action scale and timing are the G1's robot spec's
(tasks/velocity/robots/g1.py: Menagerie's G1 `unitree_g1/scene_mjx.xml`, mjlab's gains, a 0.02 s
control step). The motion
(`motion`): a built-in clip (`unienv.motion.clips`: squat and arm_swing made here, walk recorded from a trained policy) or a motion
.npz (`python -m unienv motion convert` or `record`), at the control rate; it loops, and a clip
that ends elsewhere than it starts (a walk) goes on from where it ended (`looped`). Tracked bodies: BODIES (BeyondMimic's 14);
the anchor is the torso. Reference targets of the bodies: the reference's bodies moved so that
its anchor lies under the robot's (the robot's anchor x, y and heading, the reference's height),
so drift is the anchor terms' alone; their velocities turned by the same heading. Videos draw
the reference as a translucent ghost (`ghost_qpos`).
Reset (`reset_episode`: the state and the memory from one draw): the robot at the reference frame
of a start phase, joints + U(-reset_noise_scale, +it), the memory at the next frame.
Start phases (BeyondMimic's adaptive sampling): the clip is cut in one bin a second; a bin is
drawn with probability in proportion to its failure count (an average over resets, rate
`adaptive_alpha`, of the episodes that ended there before the time limit) plus
`adaptive_uniform` / bins, and the phase uniformly inside it.
Observation blocks: ref_joint_pos (29, the next frame's joints minus the default pose),
ref_joint_vel (29, x0.05), ref_anchor_pos (3, the reference anchor in the robot anchor's frame,
m), ref_anchor_ori (6, the first two columns of the reference anchor's rotation in the robot
anchor's frame), future_joint_pos (29 per frame of `future_frames` more, minus the default
pose; absent if 0), base_lin_vel, base_ang_vel (3 each, the pelvis's, in its frame), joint_pos
(29, minus the default), joint_vel (29, x0.05), last_action (29).
Reward (each term times its weight and dt, WEIGHTS; errors squared, `tracking_sigmas` in m, rad, m/s,
rad/s): anchor_pos exp(-|dp|^2/0.3^2) and anchor_ori exp(-angle^2/0.4^2) of the anchor in the
world; body_pos, body_ori, body_lin_vel, body_ang_vel exp(-mean over BODIES of the squared
error / sigma^2) against the aligned reference (sigmas 0.3, 0.4, 1.0, 3.14); action_rate
|a - a_prev|^2; joint_limits, rad past 90 % of each joint's range (both tasks/velocity/terms.py's). Weights (BeyondMimic's):
anchor_pos, anchor_ori 0.5; the four body terms 1; action_rate -0.1; joint_limits -10. The step's total is floored
at 0 (as g1_velocity's): with a first policy's action noise the two penalties outweigh the
tracking terms, and a negative step reward would teach it to fall. Perfect tracking earns
(0.5 + 0.5 + 4 x 1) x 0.02 = 0.1 a step.
Terminates when the anchor's height is off the reference's by more than `max_anchor_height_error`
(0.25 m), its gravity's z in its own frame by more than `max_anchor_gravity_error` (0.8), or an
end effector's (ankles, wrists) height by more than `max_end_effector_height_error` (0.25 m).
"""

import dataclasses

import gymnasium as gym
import numpy as np

from unienv.backends.base import load_mjmodel
from unienv.errors import ArgumentError, unknown_name
from unienv.motion import clips, load
from unienv.motion.convert import for_model
from unienv.task import Task, TaskOptions, option
from unienv.tasks.common import rotation_matrix, to_body
from unienv.tasks.velocity.robots.g1 import G1
from unienv.tasks.velocity.terms import action_rate, joint_limits
from unienv.utils.limits import check_size

BODIES = ("pelvis", "left_hip_roll_link", "left_knee_link", "left_ankle_roll_link", "right_hip_roll_link")
BODIES += ("right_knee_link", "right_ankle_roll_link", "torso_link", "left_shoulder_roll_link")
BODIES += ("left_elbow_link", "left_wrist_yaw_link", "right_shoulder_roll_link", "right_elbow_link")
BODIES += ("right_wrist_yaw_link",)
ANCHOR, END_EFFECTORS = (
    BODIES.index("torso_link"),
    [BODIES.index(b) for b in BODIES if "ankle" in b or "wrist" in b],
)
WEIGHTS = {"anchor_pos": 0.5, "anchor_ori": 0.5, "body_pos": 1.0, "body_ori": 1.0, "body_lin_vel": 1.0}
WEIGHTS |= {"body_ang_vel": 1.0, "action_rate": -0.1, "joint_limits": -10.0}
SIGMAS = {"anchor_pos": 0.3, "anchor_ori": 0.4, "body_pos": 0.3, "body_ori": 0.4, "body_lin_vel": 1.0}
SIGMAS |= {"body_ang_vel": 3.14}
JOINT_VEL_SCALE = 0.05
MAX_FUTURE_FRAMES = 250  # 5 s of reference ahead, 29 columns a frame (BeyondMimic observes up to 10)


@dataclasses.dataclass
class G1TrackingOptions(TaskOptions):
    motion: str = option("squat", "a built-in clip (squat, arm_swing, walk) or a motion .npz's path")
    episode_length_s: float = option(10.0, "s: an episode is truncated after it")
    action_scale: float = option(0.25, "an action of 1 moves a joint's target by this x torque limit / kp")
    future_frames: int = option(0, "reference frames after the next one whose joints are observed")
    reward_weights: dict = option(WEIGHTS, "each term's weight (then times dt); the ones given replace these")
    tracking_sigmas: dict = option(
        SIGMAS,
        "each tracking term's error scale (m, rad, m/s, rad/s): exp(-error^2 / sigma^2); the ones given replace these",
    )
    reset_noise_scale: float = option(0.05, "rad: reset joints U(-it, it) off the reference")
    max_anchor_height_error: float = option(0.25, "m: an episode ends when the anchor's height is off more")
    max_anchor_gravity_error: float = option(0.8, "an episode ends when the anchor's gravity z is off more")
    max_end_effector_height_error: float = option(0.25, "m: the same for an ankle's or a wrist's height")
    adaptive_uniform: float = option(0.1, "start bins' probability floor (over the bins) beside failures")
    adaptive_alpha: float = option(0.001, "rate of the start bins' failure averages, per reset")

    def __post_init__(self):
        super().__post_init__()
        unknown = sorted(set(self.reward_weights or {}) - set(WEIGHTS))
        if unknown:
            raise ArgumentError(f"task.reward_weights: expected terms of {list(WEIGHTS)}, got {unknown}")
        self.reward_weights = {**WEIGHTS, **(self.reward_weights or {})}
        for name, sigma in (self.tracking_sigmas or {}).items():
            if name not in SIGMAS:
                raise unknown_name("term of task.tracking_sigmas", name, SIGMAS)
            if isinstance(sigma, bool) or not isinstance(sigma, (int, float)) or not sigma > 0:
                raise ArgumentError(f"task.tracking_sigmas.{name}: expected a number > 0, got {sigma!r}")
        self.tracking_sigmas = {**SIGMAS, **(self.tracking_sigmas or {})}


def yaw_turn(xp, c, s, v):
    """Vectors v (N, B, 3) turned about z by the angles of cosines c and sines s (N, 1)."""
    return xp.stack((c * v[..., 0] - s * v[..., 1], s * v[..., 0] + c * v[..., 1], v[..., 2]), -1)


def yaw_quat(xp, ch, sh, q):
    """wxyz quaternions q (..., 4) turned about the world's z by the angles of half-angle cosines
    ch and sines sh: qz * q."""
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return xp.stack((ch * w - sh * z, ch * x - sh * y, ch * y + sh * x, ch * z + sh * w), -1)


def angle_between(xp, a, b):
    """Rotation angle (rad) between wxyz quaternions a and b (..., 4): 2 atan2(|v|, |w|) of a* b,
    whose vector part is a_w b_v - b_w a_v - a_v x b_v (by components: elementwise, no gathers)."""
    (aw, ax, ay, az), (bw, bx, by, bz) = (a[..., i] for i in range(4)), (b[..., i] for i in range(4))
    vx = aw * bx - bw * ax - (ay * bz - az * by)
    vy = aw * by - bw * ay - (az * bx - ax * bz)
    vz = aw * bz - bw * az - (ax * by - ay * bx)
    return 2.0 * xp.arctan2(
        xp.sqrt(vx * vx + vy * vy + vz * vz), xp.abs(aw * bw + ax * bx + ay * by + az * bz)
    )


class G1Tracking(Task):
    name = "g1_tracking"
    sim_dt, decimation, root_body, requires, arrays = 0.004, 5, "pelvis", ("body_views",), "any"
    single_action_space = gym.spaces.Box(-1.0, 1.0, (G1.joints,), np.float32)
    camera, Options = G1.camera, G1TrackingOptions
    terms = tuple(WEIGHTS)

    def __init__(self, **options):
        super().__init__(**options)
        self.future_frames = check_size(
            "task.future_frames", self.future_frames, MAX_FUTURE_FRAMES, 0, "frames"
        )
        if not self.adaptive_uniform > 0.0 or not 0.0 <= self.adaptive_alpha <= 1.0:
            raise ArgumentError(
                f"task.adaptive_uniform, task.adaptive_alpha: expected > 0 and in [0, 1], got "
                f"{self.adaptive_uniform!r}, {self.adaptive_alpha!r}"
            )
        self.scene, per_torque = G1.build()
        self.joint_scale_np = self.action_scale * per_torque
        model, where = load_mjmodel(self.scene), "task.motion"
        is_clip = self.motion in clips.NAMES  # a file at another rate is resampled to the control rate
        self.reference = (
            clips.clip(self.motion, model)
            if is_clip
            else for_model(load(self.motion, where), model, self.dt, f"{where}: {self.motion}")
        )

    def observation_blocks(self):
        ref = {"ref_joint_pos": 29, "ref_joint_vel": 29, "ref_anchor_pos": 3, "ref_anchor_ori": 6}
        future = {"future_joint_pos": 29 * self.future_frames} if self.future_frames else {}
        robot = {"base_lin_vel": 3, "base_ang_vel": 3, "joint_pos": 29, "joint_vel": 29, "last_action": 29}
        return ref | future | robot

    def setup(self, backend):
        super().setup(backend)
        info, m = backend.info, self.reference
        joints = [backend.names("joint")[j] for j in info.actuator_joint]
        missing = [n for n in (*joints, *BODIES) if n not in (*m.joint_names, *m.body_names)]
        if missing or m.body_names[0] != self.root_body:
            raise ArgumentError(
                f"task.motion: {self.motion}: expected the G1's joints and bodies (the pelvis first), missing {missing}"
            )
        order = [m.joint_names.index(j) for j in joints]
        body_order = [m.body_names.index(b) for b in BODIES]
        self.body_ids = backend.find("body", BODIES)
        self.q_idx, self.v_idx = (
            info.joint_qpos_adr[info.actuator_joint],
            info.joint_dof_adr[info.actuator_joint],
        )
        self.default_q = self.array(info.keyframes[G1.keyframe][self.q_idx])
        self.joint_scale = self.array(self.joint_scale_np)
        low, high = info.joint_range[info.actuator_joint].T
        middle, half = (low + high) / 2, (high - low) / 2 * G1.soft_limits
        self.q_low, self.q_high = self.array(middle - half), self.array(middle + half)
        root_rot = rotation_matrix(np, m.body_quat[:, 0])
        qpos, qvel = np.zeros((m.frames, backend.nq)), np.zeros((m.frames, backend.nv))
        qpos[:, :3], qpos[:, 3:7], qpos[:, self.q_idx] = (
            m.body_pos[:, 0],
            m.body_quat[:, 0],
            m.joint_pos[:, order],
        )
        qvel[:, :3], qvel[:, 3:6] = m.body_lin_vel[:, 0], to_body(m.body_ang_vel[:, 0], root_rot)
        qvel[:, self.v_idx] = m.joint_vel[:, order]
        self.ref_qpos, self.ref_qvel = self.array(qpos), self.array(qvel)
        self.ref_q, self.ref_qd = self.ref_qpos[:, self.q_idx], self.ref_qvel[:, self.v_idx]
        pos, quat = m.body_pos[:, body_order], m.body_quat[:, body_order]
        self.ref_pos, self.ref_quat = self.array(pos), self.array(quat)
        # the bodies' offsets from the anchor, linear and angular velocities: turned together (T, 3 B, 3)
        vectors = (
            pos - pos[:, ANCHOR : ANCHOR + 1],
            m.body_lin_vel[:, body_order],
            m.body_ang_vel[:, body_order],
        )
        self.ref_vectors = self.array(np.concatenate(vectors, 1))
        rot = rotation_matrix(np, quat[:, ANCHOR])  # per frame, once: the reference anchor's
        self.ref_rot, self.ref_gravity_z = self.array(rot), self.array(rot[:, 2, 2])
        self.ref_yaw = self.array(np.arctan2(rot[:, 1, 0], rot[:, 0, 0]))
        # a clip that ends elsewhere than it starts (a walk) goes on from where it ended: each
        # wrap moves the env's clip frame in the world (memory["origin"]: x, y, yaw) so that the
        # first frame's anchor lies where the last one's was, turned by the clip's change of heading
        yaws = np.arctan2(rot[[0, -1], 1, 0], rot[[0, -1], 0, 0])
        self.loop_yaw = float(yaws[1] - yaws[0])
        self.loop_first, self.loop_last = (pos[i, ANCHOR, :2].tolist() for i in (0, -1))
        self.moves = self.loop_first != self.loop_last or self.loop_yaw != 0.0  # else origins stay 0
        self.q_idx, self.v_idx = self.xp.asarray(self.q_idx), self.xp.asarray(self.v_idx)
        self.bins = int(m.frames // m.fps) + 1
        self.failures = self.xp.zeros((self.bins,), self.dtype)
        self.bin_ids = self.xp.asarray(np.arange(self.bins))
        self.lower = self.array(np.tril(np.ones((self.bins, self.bins))))  # cumulative sums by products
        self.weights = self.array([self.reward_weights[k] * self.dt for k in self.terms])
        self.sigmas = self.array([1.0 / self.tracking_sigmas[k] ** 2 for k in self.terms[:6]])

    def action_to_ctrl(self, action):
        return self.default_q + self.joint_scale * action

    def read(self, backend):
        xp, views = self.xp, backend.get_state_views()
        qpos, qvel, bodies = (
            xp.asarray(views["qpos"]),
            xp.asarray(views["qvel"]),
            backend.get_body_views(self.body_ids),
        )
        pos, quat, lin, ang = (
            xp.copy(xp.asarray(v)) for v in (bodies.pos, bodies.quat, bodies.lin_vel, bodies.ang_vel)
        )
        rot = rotation_matrix(xp, qpos[:, 3:7])
        base = xp.concat((to_body(qvel[:, :3], rot), qvel[:, 3:6]), 1)
        return {
            "q": qpos[:, self.q_idx],
            "qd": qvel[:, self.v_idx],
            "base": base,
            "pos": pos,
            "quat": quat,
            "lin": lin,
            "ang": ang,
        }

    def target(self, s, frame):
        """The reference at `frame` (N,) aligned to the robot's anchor: body positions,
        orientations, velocities (N, B, ...), and the reference's own positions and orientations."""
        xp, a = self.xp, ANCHOR
        pos, quat, vectors = self.ref_pos[frame], self.ref_quat[frame], self.ref_vectors[frame]
        w, x, y, z = (s["quat"][:, a, i] for i in range(4))  # the robot anchor's heading: R[:2, 0]
        yaw = xp.arctan2(2 * x * y + 2 * w * z, w * w + x * x - y * y - z * z) - self.ref_yaw[frame]
        c, sn = xp.cos(yaw)[:, None], xp.sin(yaw)[:, None]
        origin = xp.concat((s["pos"][:, a, :2], pos[:, a, 2:]), 1)[:, None]
        turned = yaw_quat(xp, xp.cos(yaw / 2)[:, None], xp.sin(yaw / 2)[:, None], quat)
        v, b = yaw_turn(xp, c, sn, vectors), len(BODIES)
        return {"world_pos": pos, "world_quat": quat, "pos": origin + v[:, :b], "quat": turned,
                "lin": v[:, b : 2 * b], "ang": v[:, 2 * b :]}  # fmt: skip

    def in_world(self, origin, pos, quat):
        """Positions (N, 3) and wxyz quaternions (N, 4) of the clip placed at each env's origin
        (N, 3: x, y, yaw; zeros until the clip first wraps; always, for a clip that ends where it
        starts)."""
        if not self.moves:
            return pos, quat
        xp, half = self.xp, origin[:, 2] / 2
        shift = xp.concat((origin[:, :2], xp.zeros_like(half[:, None])), 1)
        return self.turned(origin, pos) + shift, yaw_quat(xp, xp.cos(half), xp.sin(half), quat)

    def turned(self, origin, v):
        """Vectors v (N, 3) of the clip turned by each env's origin yaw (as they are, for a clip
        that ends where it starts)."""
        if not self.moves:
            return v
        yaw = origin[:, 2:3]
        return yaw_turn(self.xp, self.xp.cos(yaw), self.xp.sin(yaw), v[:, None])[:, 0]

    def looped(self, origin, wrapped):
        """The origins after the frame (N,) where `wrapped` went back to the clip's first."""
        if not self.moves:
            return origin
        xp, yaw = self.xp, origin[:, 2:3]
        (x, y), (fx, fy) = self.loop_last, self.loop_first
        c, s, turned = xp.cos(yaw), xp.sin(yaw), yaw + self.loop_yaw
        c2, s2 = xp.cos(turned), xp.sin(turned)
        step = xp.concat((c * x - s * y - (c2 * fx - s2 * fy), s * x + c * y - (s2 * fx + c2 * fy)), 1)
        return xp.where(wrapped[:, None], xp.concat((origin[:, :2] + step, turned), 1), origin)

    def frame(self, memory, ahead=0):
        return self.xp.astype(memory["frame"] + ahead, self.xp.int64) % len(self.ref_q)

    def observe(self, s, memory):
        xp, f = self.xp, self.frame(memory)
        a = ANCHOR
        anchor = self.in_world(memory["origin"], self.ref_pos[f][:, a], self.ref_quat[f][:, a])[0]
        rot_r, rot_m = rotation_matrix(xp, s["quat"][:, a]), self.ref_rot[f]
        ref_anchor = to_body(anchor - s["pos"][:, a], rot_r)
        relative = [to_body(self.turned(memory["origin"], rot_m[:, :, i]), rot_r) for i in (0, 1)]
        future = [self.ref_q[self.frame(memory, k + 1)] - self.default_q for k in range(self.future_frames)]
        return xp.concat(
            (self.ref_q[f] - self.default_q, JOINT_VEL_SCALE * self.ref_qd[f], ref_anchor, *relative, *future,
             s["base"], s["q"] - self.default_q, JOINT_VEL_SCALE * s["qd"], memory["last_action"]), 1)  # fmt: skip

    def errors(self, s, memory):
        """Squared tracking errors (N, 6) in the order of `terms`, against the target frame."""
        xp, a, ref = self.xp, ANCHOR, self.target(s, self.frame(memory))
        sq = lambda d: xp.square(d).sum(-1)  # noqa: E731
        anchor_pos, anchor_quat = self.in_world(
            memory["origin"], ref["world_pos"][:, a], ref["world_quat"][:, a]
        )
        return xp.stack((
            sq(s["pos"][:, a] - anchor_pos),
            xp.square(angle_between(xp, s["quat"][:, a], anchor_quat)),
            sq(s["pos"] - ref["pos"]).mean(1),
            xp.square(angle_between(xp, s["quat"], ref["quat"])).mean(1),
            sq(s["lin"] - ref["lin"]).mean(1),
            sq(s["ang"] - ref["ang"]).mean(1)), 1)  # fmt: skip

    def reward(self, s, prev, action, memory):
        xp = self.xp
        tracking = xp.exp(-self.errors(s, memory) * self.sigmas)
        rate, limits = (term(self, s, prev, action, memory) for term in (action_rate, joint_limits))
        weighted = xp.concat((tracking, xp.stack((rate, limits), 1)), 1) * self.weights
        return xp.clip(weighted.sum(1), 0.0, None), dict(zip(self.terms, weighted.T, strict=True))

    def terminated(self, s, memory):
        f, a, e = self.frame(memory), ANCHOR, END_EFFECTORS
        pos, q = self.ref_pos[f], s["quat"][:, a]
        gravity_z = self.ref_gravity_z[f] - (
            q[:, 0] ** 2 - q[:, 1] ** 2 - q[:, 2] ** 2 + q[:, 3] ** 2
        )  # R[2, 2]
        return (
            (self.xp.abs(pos[:, a, 2] - s["pos"][:, a, 2]) > self.max_anchor_height_error)
            | (self.xp.abs(gravity_z) > self.max_anchor_gravity_error)
            | (self.xp.abs(pos[:, e, 2] - s["pos"][:, e, 2]) > self.max_end_effector_height_error).any(1)
        )

    def ghost_qpos(self, memory):
        """Videos draw the reference frame that the robot's state is scored against, where it is
        (just after a wrap: the first frame, which the new origin puts where the last one was)."""
        f = self.xp.where(memory["frame"] == 0, 0, self.frame(memory, -1))
        qpos = self.xp.copy(self.ref_qpos[f])
        qpos[:, :3], qpos[:, 3:7] = self.in_world(memory["origin"], qpos[:, :3], qpos[:, 3:7])
        return qpos

    def remember(self, s, action, memory):
        frame = (memory["frame"] + 1.0) % len(self.ref_q)
        origin = self.looped(memory["origin"], frame == 0)
        return {
            "frame": frame,
            "steps": memory["steps"] + 1.0,
            "last_action": self.xp.copy(action),
            "origin": origin,
        }

    def on_reset(self, mask, s, memory):
        """Failures (episodes ended before the time limit) counted into their phase's bin."""
        xp = self.xp
        failed = mask & (memory["steps"] < self.max_episode_steps)
        ended = (memory["frame"] - 1.0) % len(self.ref_q)
        bins = xp.astype(xp.floor(ended * self.bins / len(self.ref_q)), xp.int64)
        counts = xp.astype(((bins[:, None] == self.bin_ids) & failed[:, None]).sum(0), self.dtype)
        rate = self.adaptive_alpha * xp.astype(mask.any(), self.dtype)
        self.failures = (1.0 - rate) * self.failures + rate * counts

    def reset_episode(self, env_ids, rng):
        """A start phase drawn (adaptive sampling, see the module docstring), the robot at its
        reference frame, and the memory from the next frame on: one draw for both."""
        xp, p = self.xp, self.failures + self.adaptive_uniform / self.bins
        cdf = (self.lower * (p / p.sum())).sum(1)
        u = rng.uniform((2,), dtype=self.dtype)
        chosen = xp.astype((u[:, :1] >= cdf[:-1]).sum(1), self.dtype)
        frame = xp.floor(xp.clip((chosen + u[:, 1]) / self.bins, 0.0, 1.0) * (len(self.ref_q) - 1))
        f = xp.astype(frame, xp.int64)
        qpos, noise = xp.copy(self.ref_qpos[f]), self.reset_noise_scale
        qpos[:, self.q_idx] += rng.uniform((29,), -noise, noise, dtype=self.dtype)
        zeros = xp.zeros((rng.rows, 33), self.dtype)
        memory = {
            "frame": (frame + 1.0) % len(self.ref_q),
            "steps": zeros[:, 0],
            "last_action": zeros[:, 1:30],
        }
        memory["origin"] = zeros[:, 30:]  # the clip where it starts until it wraps
        return qpos, xp.copy(self.ref_qvel[f]), memory

    def reset_state(self, env_ids, rng):
        """reset_episode's state (the env calls reset_episode)."""
        return self.reset_episode(env_ids, rng)[:2]
