"""Each DR term changes the physics as it should, measured, not read back."""

import math

import torch

from tests.dr.conftest import (
    BOX_VX,
    HINGE_Q,
    HINGE_V,
    POLE_COM,
    POLE_MASS,
    SLIDER_Q,
    SLIDER_V,
    state,
)

G = 9.81


def _accelerations(env, qpos, qvel, ctrls):
    """The acceleration of every dof over one physics step from (qpos, qvel), per ctrl."""
    b = env.backend
    ids = torch.arange(b.num_envs)
    dtype = b.get_state_views()["qpos"].dtype
    out = []
    for ctrl in ctrls:
        b.set_state_tensor(ids, qpos.to(b.device, dtype), qvel.to(b.device, dtype))
        b.step_tensor(ctrl.to(b.device, dtype), 1)
        out.append((state(env)[1] - qvel) / b.dt)
    return out


def holding_torque(env, angle=math.pi / 2):
    """The hinge torque that holds the pole still at `angle` (horizontal by default).

    Hinge acceleration is affine in the motor torque; at rest, with the cart
    servo at its target, the cart feels no force, so zero hinge acceleration is
    exactly the gravity torque, c_h = m g l.
    """
    qpos, qvel = state(env)
    qpos[:, HINGE_Q], qpos[:, SLIDER_Q], qvel[:] = angle, 0.0, 0.0
    zero = torch.zeros(env.num_envs, 2, dtype=torch.float64)
    one = zero.clone()
    one[:, 1] = 1.0
    a0, a1 = (a[:, HINGE_V] for a in _accelerations(env, qpos, qvel, [zero, one]))
    return (-a0 / (a1 - a0)).abs()


def test_heavier_pole_needs_more_holding_torque(make_env):
    env = make_env(
        {"mass": {"param": "body_mass", "objects": "pole", "range": [0.5, 3.0], "operation": "scale"}}
    )
    mass = env.dr_params()["mass"][:, 0]
    assert torch.allclose(mass / POLE_MASS, env.dr.params()["mass"][:, 0] / POLE_MASS)
    assert float(mass.max() - mass.min()) > 0.1  # the envs really differ
    torque = holding_torque(env)
    # tau = m g l per env, to the integrator's precision
    assert torch.allclose(torque, mass * G * POLE_COM, rtol=1e-3), (torque, mass * G * POLE_COM)


def test_com_moves_the_holding_torque(make_env):
    env = make_env(
        {
            "com": {
                "param": "body_com",
                "objects": "pole",
                "axes": [2],
                "range": [-0.1, 0.1],
                "operation": "add",
            }
        }
    )
    com = env.dr_params()["com"][:, 0]  # the pole's COM height along the pole
    torque = holding_torque(env)
    assert torch.allclose(torque, POLE_MASS * G * com, rtol=1e-3), (torque, POLE_MASS * G * com)


def test_gravity_scales_the_holding_torque(make_env):
    env = make_env({"g": {"param": "gravity", "axes": [2], "range": [0.5, 1.5], "operation": "scale"}})
    gz = env.dr_params()["g"][:, 0]
    torque = holding_torque(env)
    assert torch.allclose(torque, POLE_MASS * gz.abs() * POLE_COM, rtol=1e-3)


def _swing(env, seconds=1.0):
    """Let the pole fall from horizontal; its largest speed over the swing."""
    qpos, qvel = state(env)
    qpos[:, HINGE_Q], qvel[:] = math.pi / 2, 0.0
    dtype = env.backend.get_state_views()["qpos"].dtype
    env.backend.set_state_tensor(torch.arange(env.num_envs), qpos.to(dtype), qvel.to(dtype))
    zero = torch.zeros(env.num_envs, 2, dtype=dtype)
    top = torch.zeros(env.num_envs, dtype=torch.float64)
    for _ in range(round(seconds / env.backend.dt)):
        env.backend.step_tensor(zero, 1)
        top = torch.maximum(top, state(env)[1][:, HINGE_V].abs())
    return top


def test_higher_damping_slows_a_free_swing(make_env):
    env = make_env(
        {"damping": {"param": "dof_damping", "objects": "hinge", "range": [0.0, 0.2], "operation": "abs"}}
    )
    damping = env.dr_params()["damping"][:, 0]
    speed = _swing(env)
    order = torch.argsort(damping)
    assert bool((speed[order].diff() < 0).all()), (damping, speed)  # strictly slower with damping
    assert float(speed[order[0]] / speed[order[-1]]) > 1.2


def test_armature_slows_a_driven_pole(make_env):
    env = make_env(
        {"arm": {"param": "dof_armature", "objects": "hinge", "range": [0.0, 0.05], "operation": "abs"}}
    )
    armature = env.dr_params()["arm"][:, 0]
    qpos, qvel = state(env)
    qpos[:, HINGE_Q], qvel[:] = 0.0, 0.0  # upright: gravity has no torque
    ctrl = torch.zeros(env.num_envs, 2, dtype=torch.float64)
    ctrl[:, 1] = 1.0
    (acc,) = _accelerations(env, qpos, qvel, [ctrl])
    inertia = 1.0 / acc[:, HINGE_V]  # torque 1: effective inertia, linear in armature
    slope = (inertia - inertia[0]) / (armature - armature[0])
    assert torch.allclose(slope[1:], torch.ones_like(slope[1:]), rtol=1e-2), slope


def test_frictionloss_resists_a_small_torque(make_env):
    env = make_env(
        {"fl": {"param": "dof_frictionloss", "objects": "hinge", "range": [0.0, 1.0], "operation": "abs"}},
    )
    free = make_env({})  # no friction loss on the hinge
    loss = env.dr_params()["fl"][:, 0]

    def hinge_acceleration(e):
        qpos, qvel = state(e)
        qpos[:, HINGE_Q], qvel[:] = 0.0, 0.0
        ctrl = torch.zeros(e.num_envs, 2, dtype=torch.float64)
        ctrl[:, 1] = 0.5  # N m
        return _accelerations(e, qpos, qvel, [ctrl])[0][:, HINGE_V]

    acc, acc_free = hinge_acceleration(env), hinge_acceleration(free)
    order = torch.argsort(loss)
    assert bool((acc[order].diff() <= 1e-9).all()), (loss, acc)  # never faster with more loss
    held = loss > 0.5  # more friction loss than torque: (MuJoCo's soft) stiction
    assert bool(held.any()) and bool((~held).any())
    assert bool((acc[held] < 0.15 * acc_free[held]).all()), (loss, acc / acc_free)


def test_lower_friction_lengthens_a_slide(make_env):
    v0 = 2.0
    env = make_env(
        {
            "friction": {
                "param": "geom_friction",
                "axes": [0],
                "shared": True,
                "range": [0.3, 1.0],
                "operation": "scale",
            }
        },
        box_vx=v0,
    )
    mu = env.dr_params()["friction"][:, 0]
    x0 = state(env)[0][:, BOX_VX].clone()
    ctrl = torch.zeros(env.num_envs, 2, dtype=env.backend.get_state_views()["qpos"].dtype)
    for _ in range(round(1.5 / env.backend.dt)):
        env.backend.step_tensor(ctrl, 1)
    qpos, qvel = state(env)
    distance = qpos[:, BOX_VX] - x0
    assert float(qvel[:, BOX_VX].abs().max()) < 1e-2  # every box has stopped
    order = torch.argsort(mu)
    assert bool((distance[order].diff() < 0).all()), (mu, distance)
    expected = v0**2 / (2 * mu * G)  # Coulomb sliding
    assert torch.allclose(distance, expected, rtol=0.15), (distance, expected)


def test_servo_gains_set_force(make_env):
    env = make_env(
        {
            "kp": {
                "param": "actuator_kp",
                "objects": "cart_servo",
                "range": [20.0, 100.0],
                "operation": "abs",
            },
            "kd": {"param": "actuator_kd", "objects": "cart_servo", "range": [1.0, 10.0], "operation": "abs"},
        }
    )
    kp, kd = env.dr_params()["kp"][:, 0], env.dr_params()["kd"][:, 0]
    qpos, qvel = state(env)
    qpos[:, HINGE_Q], qpos[:, SLIDER_Q], qvel[:] = 0.0, 0.0, 0.0
    target = torch.zeros(env.num_envs, 2, dtype=torch.float64)
    target[:, 0] = 0.1  # servo force kp * 0.1 at rest
    (acc,) = _accelerations(env, qpos, qvel, [target])
    per_kp = acc[:, SLIDER_V] / kp
    assert torch.allclose(per_kp, per_kp[0].expand_as(per_kp), rtol=1e-2), (kp, acc[:, SLIDER_V])
    # moving cart at the target: the servo brakes it with -kd v, so faster for larger kd
    qvel[:, SLIDER_V] = 0.5
    (acc,) = _accelerations(env, qpos, qvel, [torch.zeros_like(target)])
    order = torch.argsort(kd)
    assert bool((acc[order, SLIDER_V].diff() < 0).all()), (kd, acc[:, SLIDER_V])


def test_latency_delays_the_first_response_by_k_steps(make_mujoco_env):
    env = make_mujoco_env({"lat": {"param": "action_latency", "range": [0, 3]}}, num_envs=32)
    delay = env.dr_params()["lat"][:, 0]
    assert set(delay.tolist()) == {0, 1, 2, 3}, delay  # with 32 envs each delay shows up here
    action = torch.zeros(env.num_envs, 2)
    action[:, 1] = 0.1 * (1.0 + torch.arange(env.num_envs))  # a distinct motor torque per env, in [-5, 5]
    first = torch.full((env.num_envs,), -1)
    for step in range(6):
        env.step(action)
        applied = env.backend.get_state_views()["ctrl"][:, 1]
        assert bool(((applied == 0) | (applied == action[:, 1].double())).all())
        first = torch.where((first < 0) & (applied != 0), step, first)
    assert torch.equal(first, delay), (first, delay)  # step index k: k steps of nothing first


def test_push_changes_root_velocity_by_the_commanded_amount(make_env):
    push = {"param": "push", "body": "box", "range": [-1.0, 1.0], "interval": 1}
    pushed = make_env({"push": push}, box_z=2.0)  # in the air for the first steps
    twin = make_env({}, box_z=2.0)
    pushed.step(torch.zeros(4, 2))
    twin.step(torch.zeros(4, 2))
    dv = pushed.dr_params()["push"]
    assert float(dv.abs().min()) > 0  # every env pushed on every axis
    change = state(pushed)[1][:, 0:3] - state(twin)[1][:, 0:3]
    atol = 1e-9 if pushed.backend.get_state_views()["qvel"].dtype == torch.float64 else 1e-5
    assert torch.allclose(change, dv, atol=atol), (change, dv)
    assert torch.equal(state(pushed)[1][:, 3:6], state(twin)[1][:, 3:6])  # at the COM: no spin


def _obs_noise(env, obs):
    """obs minus the task's own observation of the same state (which is in the task's
    array namespace: NumPy on mujoco for an `arrays = "any"` task)."""
    return obs - torch.as_tensor(env.task.observe(env.task.read(env.backend), {}))


def test_obs_noise_has_the_configured_std(make_mujoco_env):
    std, bias = 0.05, 0.1
    env = make_mujoco_env(
        {"noise": {"param": "obs_noise", "distribution": "gaussian", "std": std, "bias": bias}}, num_envs=64
    )
    noise = []
    for _ in range(30):
        obs, *_ = env.step(torch.zeros(64, 2))
        noise.append(_obs_noise(env, obs))
    noise = torch.stack(noise)  # (steps, envs, 17)
    episode_bias = env.dr_params()["noise"]  # constant within the episode
    fresh = noise - episode_bias
    assert abs(float(fresh.std()) / std - 1) < 0.03, float(fresh.std())  # 32640 draws: se 0.4 %
    assert abs(float(fresh.mean())) < 3 * std / math.sqrt(fresh.numel())
    assert float(episode_bias.abs().max()) <= bias
    assert abs(float(episode_bias.std()) / (bias / math.sqrt(3)) - 1) < 0.1  # uniform [-b, b]: 1088 draws


def test_uniform_obs_noise_on_an_index_range(make_mujoco_env):
    env = make_mujoco_env(
        {"noise": {"param": "obs_noise", "range": [-0.2, 0.2], "indices": [9, 17]}}, num_envs=64
    )
    obs, *_ = env.step(torch.zeros(64, 2))
    noise = _obs_noise(env, obs)
    assert torch.equal(noise[:, :9], torch.zeros_like(noise[:, :9]))  # qpos columns untouched
    assert float(noise.abs().max()) <= 0.2
    assert abs(float(noise[:, 9:].std()) / (0.4 / math.sqrt(12)) - 1) < 0.1


def test_init_state_adds_to_the_task_reset(make_mujoco_env):
    env = make_mujoco_env(
        {"v": {"param": "init_state", "field": "qvel", "objects": "hinge", "range": [-1.0, 1.0]}}
    )
    qvel = state(env)[1]
    assert torch.equal(qvel[:, HINGE_V], env.dr_params()["v"][:, 0])  # the task's reset qvel is zero
    assert torch.equal(qvel[:, :HINGE_V], torch.zeros_like(qvel[:, :HINGE_V]))
