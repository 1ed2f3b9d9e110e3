"""Worked example: identify a randomized payload mass on arm7 from simulated rollouts.

1. `record_rollouts` runs the project's batched MuJoCo backend on tasks/assets/arm7.xml with
   a different payload mass per env (DR term body_mass; the backend scales the payload's
   inertia with it) and drives the arm's position servos with a multi-sine excitation around
   the "home" keyframe, away from the joint limits and the floor. Per physics step it logs
   q_k, v_k (the state before the step), the applied joint force and a_k.

   tau_k is what the actuators really apply: force = clip(kp (ctrl - q_k) - kv v_k,
   forcerange), times gear (MuJoCo's explicit actuator force at the start of the step).
   a_k = (v_{k+1} - v_k) / dt is exactly the acceleration of MuJoCo's Euler step, whose
   equation is (M + diag(armature) + dt D) a_k + c(q_k, v_k) = tau_k - D v_k: the joint
   armature and damping D are not rigid-body terms, so identify estimates them too
   (armature=True, damping=True); the armature column then absorbs dt D.

2. `identify_payloads` calls unienv.dynamics.identify per env on (q, v, a, tau) alone, with
   the arm's links known and the payload's 10 parameters, armature and damping unknown, and
   reads the payload mass off the estimate.

With `noise=True` the logs get sensor noise (`NOISE`: encoder, velocity and torque noise)
before identification, and a is estimated from the noisy v alone (low-pass filter, then the
Euler step's forward difference); noisy q, v and tau enter the regression as they are.

Run it: python -m unienv.dynamics payload [--noise]
"""

from __future__ import annotations

import os

import numpy as np
import torch

from unienv.backends import create
from unienv.backends.base import load_mjmodel
from unienv.dynamics.identify import identify
from unienv.dynamics.model import DynamicsModel

ARM7 = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tasks/assets/arm7.xml"
)
NOISE = {"q": 1e-4, "v": 1e-3, "tau": 0.05}  # std: rad (encoder), rad/s, N*m (torque sensing)
_FREQS = np.array([0.31, 0.53, 0.87, 1.29])  # Hz, the excitation's components


def record_rollouts(
    masses: np.ndarray, seconds: float = 4.0, sim_dt: float = 0.002, seed: int = 0, scene: str = ARM7
) -> dict[str, np.ndarray]:
    """Simulate len(masses) envs, env i with payload mass masses[i]; return (E, T, ...) arrays
    q, v, a, tau (the joint forces applied during step k) and the true masses."""
    masses = np.asarray(masses, dtype=np.float64)
    num_envs, rng = len(masses), np.random.default_rng(seed)
    backend = create("mujoco", scene, num_envs=num_envs, sim_dt=sim_dt)
    info, ids = backend.info, torch.arange(num_envs)
    payload = int(backend.find("body", "payload")[0])
    mass = backend.get_dr_param("body_mass", ids).clone()
    mass[:, payload] = torch.from_numpy(masses)
    backend.set_dr_param("body_mass", ids, mass)

    home = torch.from_numpy(info.keyframes["home"]).repeat(num_envs, 1)
    backend.set_state_tensor(ids, home, torch.zeros(num_envs, backend.nv))
    kp = backend.get_dr_param("actuator_kp", ids).numpy()
    kv = backend.get_dr_param("actuator_kd", ids).numpy()
    force_range = _force_range(scene)
    dof = info.joint_dof_adr[info.actuator_joint]
    if (info.actuator_joint < 0).any() or len(set(dof)) != backend.nu:
        raise ValueError("scene: expected one joint actuator per dof")

    # ctrl(t) = home + sum_k amp_jk sin(2 pi f_k t + phase_jk), ramped in over the first second
    amp = rng.uniform(0.05, 0.15, (num_envs, backend.nu, len(_FREQS)))
    phase = rng.uniform(0, 2 * np.pi, amp.shape)
    steps = int(round(seconds / sim_dt))
    views = backend.get_state_views()
    log = {k: np.empty((num_envs, steps, backend.nv)) for k in ("q", "v", "a", "tau")}
    ctrl_lo, ctrl_hi = info.ctrl_range[:, 0], info.ctrl_range[:, 1]
    for k in range(steps):
        t = k * sim_dt
        wave = (amp * np.sin(2 * np.pi * _FREQS * t + phase)).sum(-1) * min(1.0, t)
        ctrl = np.clip(home.numpy() + wave, ctrl_lo, ctrl_hi)
        q, v = views["qpos"].numpy().copy(), views["qvel"].numpy().copy()
        force = np.clip(kp * (ctrl - q[:, dof]) - kv * v[:, dof], force_range[:, 0], force_range[:, 1])
        tau = np.zeros_like(v)
        tau[:, dof] = force * info.actuator_gear
        backend.step_tensor(torch.from_numpy(ctrl), 1)
        log["q"][:, k], log["v"][:, k], log["tau"][:, k] = q, v, tau
        log["a"][:, k] = (views["qvel"].numpy() - v) / sim_dt
    backend.close()
    log["mass"] = masses
    return log


def _force_range(scene: str) -> np.ndarray:
    """Actuator force limits (nu, 2), +-inf where unlimited (not in SceneInfo; read here)."""
    m = load_mjmodel(scene)
    limited = m.actuator_forcelimited.astype(bool)[:, None]
    return np.where(limited, m.actuator_forcerange, np.array([-np.inf, np.inf]))


def add_noise(
    log: dict[str, np.ndarray], sim_dt: float, seed: int = 1, width: int = 9
) -> dict[str, np.ndarray]:
    """Noisy copies of q, v, tau (`NOISE`, Gaussian) and a from the noisy v alone: a zero-phase
    low-pass filter on v (a moving average of `width` samples, applied twice), then the
    forward difference a_k = (v_{k+1} - v_k) / dt that the Euler step defines (a central
    difference would lag it by half a step, a bias of about 1%). The filter's edges are cut."""
    rng = np.random.default_rng(seed)
    out = {key: log[key] + NOISE[key] * rng.normal(size=log[key].shape) for key in ("q", "v", "tau")}
    smooth = _smooth(out["v"], width)
    out["a"] = np.diff(smooth, axis=1, append=smooth[:, -1:]) / sim_dt
    trim = slice(2 * width, -2 * width)
    return {key: out[key][:, trim] for key in ("q", "v", "a", "tau")} | {"mass": log["mass"]}


def _smooth(x: np.ndarray, width: int) -> np.ndarray:
    kernel = np.ones(width) / width
    for _ in range(2):
        x = np.apply_along_axis(lambda s: np.convolve(s, kernel, mode="same"), 1, x)
    return x


def identify_payloads(
    model: DynamicsModel,
    log: dict[str, np.ndarray],
    stride: int = 4,
    skip: float = 0.5,
    sim_dt: float = 0.002,
) -> np.ndarray:
    """The payload mass identified per env from (q, v, a, tau) alone, every `stride`-th
    sample after the first `skip` seconds."""
    start = int(round(skip / sim_dt))
    estimates = []
    for e in range(len(log["q"])):
        q, v, a, tau = (log[key][e, start::stride] for key in ("q", "v", "a", "tau"))
        result = identify(model, q, v, a, tau, bodies=["payload"], armature=True, damping=True)
        estimates.append(result["payload.m"])
    return np.asarray(estimates)


def main(num_envs: int = 8, seconds: float = 4.0, seed: int = 0, noise: bool = False) -> int:
    from unienv.dynamics.mujoco_model import MujocoDynamics

    rng = np.random.default_rng(seed)
    masses = rng.uniform(0.5, 3.0, num_envs)
    log = record_rollouts(masses, seconds=seconds, seed=seed)
    if noise:
        log = add_noise(log, 0.002, seed=seed + 1)
    estimates = identify_payloads(MujocoDynamics(ARM7), log)
    print(f"payload mass, {'noisy' if noise else 'noiseless'} data, {seconds:g} s per env")
    print(f"{'env':>3} {'true kg':>9} {'identified':>11} {'rel. error':>11}")
    for e, (m, est) in enumerate(zip(masses, estimates, strict=True)):
        print(f"{e:>3} {m:>9.4f} {est:>11.4f} {abs(est - m) / m:>11.2e}")
    return 0
