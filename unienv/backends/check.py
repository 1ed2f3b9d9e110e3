"""`check_backend(backend)`: the SimBackend contract's invariants, run on one backend.

As Gymnasium's `check_env` does for an env, this runs a backend, a third party's included,
through what the contract promises and raises `ContractError` (an AssertionError) naming the
first check that fails and what it saw. The checks, in order:

  capabilities  `get_capabilities()` is a frozen `Capabilities` naming this backend, its
                float dtype and its device, the same on every call;
  metadata      the state views (time, qpos, qvel, ctrl) have the shapes the metadata gives
                (nq, nv, nu, num_envs), the capabilities' dtype and the backend's device, as
                do the physics-state rows (physics_state_size wide);
  materialize   a second `materialize()` changes nothing;
  step          a step advances every env's time by nsteps * dt;
  bad input     a call with a wrong shape, an id out of range, nsteps < 1, NaN where the
                contract refuses it (qpos always; ctrl where host reads are free) or a
                refused DR value raises ArgumentError and changes neither the physics state
                nor the DR values; on a `sync_free` backend a NaN ctrl row is flagged by
                `pop_diverged` instead and never reaches the state;
  set state     `set_state_tensor` and `set_state_tensor_mask` write the selected rows only
                (every other row of `get_physics_state()` bit-identical), and body views are
                current right after (MuJoCo's kinematics at the written qpos);
  snapshot      `set_physics_state(get_physics_state())` restores it exactly, after steps;
  DR            per writable term: a written value reads back (to the dtype's precision),
                other envs keep theirs, and `get_dr_default` stays the compiled value;
  close         `close()` is idempotent and later calls raise BackendClosedError.

The backend must have num_envs >= 2 (row isolation needs two rows). The checks step and
write it, and close it at the end. Only the DR terms the backend can write now are checked
(a term that must be named in `randomize=` at construction is skipped unless it was).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import torch

from unienv.backends.base import Capabilities, SimBackend
from unienv.backends.scene import load_mjmodel
from unienv.errors import ArgumentError, BackendClosedError, CapabilityError, ContractError


def _expect(ok: bool, check: str, what: str) -> None:
    if not ok:
        raise ContractError(f"check_backend, {check}: {what}")


def _ctrl(b: SimBackend, value: float = 0.0, rows: int | None = None) -> torch.Tensor:
    n = b.num_envs if rows is None else rows
    return torch.full((n, b.nu), value, dtype=b.get_capabilities().dtype, device=b.device)


def _snapshot(b: SimBackend) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The physics state and every writable DR term's values, copied."""
    return b.get_physics_state().clone(), {t: b.get_dr_param(t) for t in _writable_terms(b)}


def _writable_terms(b: SimBackend) -> list[str]:
    terms = []
    for term in b.get_dr_capabilities():
        try:
            b.get_dr_default(term)
        except CapabilityError:  # must be named in randomize= at construction, and was not
            continue
        terms.append(term)
    return terms


def _same(a: tuple[torch.Tensor, dict], b: tuple[torch.Tensor, dict]) -> bool:
    return torch.equal(a[0], b[0]) and all(torch.equal(a[1][t], b[1][t]) for t in a[1])


def check_capabilities(b: SimBackend) -> None:
    check = "capabilities"
    caps = b.get_capabilities()
    _expect(isinstance(caps, Capabilities), check, f"expected a Capabilities, got {type(caps).__name__}")
    try:
        caps.backend = "changed"  # type: ignore[misc]
        frozen = False
    except dataclasses.FrozenInstanceError:
        frozen = True
    _expect(frozen, check, "Capabilities must be frozen")
    _expect(caps.backend == b.name, check, f"backend {caps.backend!r}, but the backend's name is {b.name!r}")
    _expect(caps.dtype in (torch.float32, torch.float64), check, f"dtype {caps.dtype} is not float32/64")
    _expect(torch.device(caps.device) == b.device, check, f"device {caps.device!r}, backend on {b.device}")
    _expect(b.get_capabilities() == caps, check, "two calls gave different capabilities")


def check_metadata(b: SimBackend) -> None:
    check = "metadata"
    caps, n = b.get_capabilities(), b.num_envs
    views = b.get_state_views()
    shapes = {"time": (n,), "qpos": (n, b.nq), "qvel": (n, b.nv), "ctrl": (n, b.nu)}
    for name, shape in shapes.items():
        _expect(name in views, check, f"the state views have no {name!r}")
        v = views[name]
        _expect(tuple(v.shape) == shape, check, f"{name} view {tuple(v.shape)}, metadata says {shape}")
        _expect(v.dtype == caps.dtype, check, f"{name} view is {v.dtype}, capabilities say {caps.dtype}")
        _expect(v.device == b.device, check, f"{name} view on {v.device}, backend on {b.device}")
    info = b.info
    _expect(len(info.qpos0) == b.nq, check, f"info.qpos0 has {len(info.qpos0)} entries, nq is {b.nq}")
    _expect(info.ctrl_range.shape == (b.nu, 2), check, f"info.ctrl_range {info.ctrl_range.shape}")
    state = b.get_physics_state()
    size = b.physics_state_size
    _expect(size >= 1 + b.nq + b.nv, check, f"physics_state_size {size} < 1 + nq + nv")
    _expect(
        tuple(state.shape) == (n, size), check, f"physics state {tuple(state.shape)}, expected {(n, size)}"
    )


def check_materialize(b: SimBackend) -> None:
    b.step_tensor(_ctrl(b, 0.1))  # a state that a rebuild would lose
    before = b.get_physics_state().clone()
    b.materialize()
    _expect(
        torch.equal(b.get_physics_state(), before), "materialize", "a second materialize() changed the state"
    )


def check_step(b: SimBackend) -> None:
    t0 = b.get_state_views()["time"].to("cpu", torch.float64, copy=True)
    b.step_tensor(_ctrl(b), 2)
    dt = b.get_state_views()["time"].to("cpu", torch.float64) - t0
    _expect(
        bool(((dt - 2 * b.dt).abs() <= 1e-3 * b.dt).all()),
        "step",
        f"step_tensor(ctrl, 2) advanced time by {dt.tolist()}, expected {2 * b.dt} in every env",
    )


def check_bad_input(b: SimBackend) -> None:
    check, n = "bad input", b.num_envs
    dtype, dev = b.get_capabilities().dtype, b.device
    qpos = torch.as_tensor(b.info.qpos0, dtype=dtype, device=dev)[None].clone()
    qvel = torch.zeros(1, b.nv, dtype=dtype, device=dev)
    nan_qpos = qpos.clone()
    nan_qpos[0, 0] = float("nan")
    cases: list[tuple[str, Callable[[], object]]] = [
        ("step_tensor with ctrl of the wrong shape", lambda: b.step_tensor(_ctrl(b, rows=n + 1))),
        ("step_tensor with nsteps=0", lambda: b.step_tensor(_ctrl(b), 0)),
        ("set_state_tensor with an id out of range", lambda: b.set_state_tensor([n], qpos, qvel)),
        ("set_state_tensor with a negative id", lambda: b.set_state_tensor([-1], qpos, qvel)),
        ("set_state_tensor with NaN in qpos", lambda: b.set_state_tensor([0], nan_qpos, qvel)),
        (
            "set_state_tensor with qpos of the wrong shape",
            lambda: b.set_state_tensor([0], qpos[:, :-1], qvel),
        ),
        ("set_physics_state of the wrong width", lambda: b.set_physics_state(b.get_physics_state()[:, :2])),
    ]
    if not b.get_capabilities().sync_free:
        nan_ctrl = _ctrl(b)
        nan_ctrl[0] = float("nan")
        cases.append(("step_tensor with NaN in ctrl (host reads are free)", lambda: b.step_tensor(nan_ctrl)))
    for term in _writable_terms(b)[:1]:
        default = b.get_dr_default(term).to(dev)
        cases.append(
            (
                "set_dr_param with an id out of range",
                lambda t=term, d=default: b.set_dr_param(t, [n], d[None]),
            )
        )
        cases.append(
            (
                "set_dr_param with NaN values",
                lambda t=term, d=default: b.set_dr_param(t, [0], torch.full_like(d, float("nan"))[None]),
            )
        )
    for what, call in cases:
        before = _snapshot(b)
        try:
            call()
        except ArgumentError:
            pass
        except Exception as e:
            raise ContractError(f"check_backend, {check}: {what} raised {type(e).__name__}: {e}") from e
        else:
            raise ContractError(f"check_backend, {check}: {what} was accepted; expected ArgumentError")
        _expect(_same(_snapshot(b), before), check, f"{what} raised, but changed the state or DR values")
    if b.get_capabilities().sync_free:  # checked on the device: flagged, held at zero ctrl
        b.pop_diverged()
        nan_ctrl = _ctrl(b)
        nan_ctrl[0] = float("nan")
        b.step_tensor(nan_ctrl)
        flagged = b.pop_diverged().cpu()
        views = b.get_state_views()
        finite = bool(torch.isfinite(views["qpos"]).all() and torch.isfinite(views["qvel"]).all())
        _expect(
            bool(flagged[0]) and finite,
            check,
            "a NaN ctrl row must be flagged by pop_diverged, the state finite",
        )


def _target_state(b: SimBackend, rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    """qpos0 moved by 0.2 along every coordinate but quaternions, and qvel 0.1, for `rows` envs."""
    info = b.info
    shift = np.full(b.nq, 0.2)
    for j, kind in enumerate(info.joint_type):
        adr = int(info.joint_qpos_adr[j])
        if kind == 0:  # free: [p, quat]
            shift[adr + 3 : adr + 7] = 0.0
        elif kind == 1:  # ball: quat
            shift[adr : adr + 4] = 0.0
    dtype = b.get_capabilities().dtype
    qpos = torch.as_tensor(info.qpos0 + shift, dtype=dtype, device=b.device).repeat(rows, 1)
    qvel = torch.full((rows, b.nv), 0.1, dtype=dtype, device=b.device)
    return qpos, qvel


def _check_rows(
    b: SimBackend, how: str, written: list[int], before: torch.Tensor, qpos: torch.Tensor
) -> None:
    check = f"set state ({how})"
    after = b.get_physics_state()
    others = [i for i in range(b.num_envs) if i not in written]
    _expect(torch.equal(after[others], before[others]), check, f"rows {others}, not selected, changed")
    tol = 1e-5 if b.get_capabilities().dtype == torch.float32 else 1e-9
    got = after[written, 1 : 1 + b.nq].cpu()
    want = qpos[0].to("cpu", got.dtype)
    _expect(bool(((got - want).abs() <= tol).all()), check, f"rows {written} hold qpos {got.tolist()}")
    _expect(bool((after[written, 0] == 0).all()), check, f"rows {written} must start at time 0")
    if not b.get_capabilities().body_views:
        return
    import mujoco

    model = load_mjmodel(b.scene, b.dt)
    data = mujoco.MjData(model)
    data.qpos[:] = want.numpy()
    mujoco.mj_kinematics(model, data)
    pos = b.get_body_views(np.arange(model.nbody)).pos[written].cpu().double()
    tol = 1e-4 if b.get_capabilities().dtype == torch.float32 else 1e-6
    err = float((pos - torch.from_numpy(data.xpos)).abs().max())
    _expect(
        err <= tol, check, f"body positions right after the write are {err:.3g} m from the written qpos's"
    )


def check_set_state(b: SimBackend) -> None:
    n = b.num_envs
    b.step_tensor(_ctrl(b, 0.1), 2)
    qpos, qvel = _target_state(b, 1)
    before = b.get_physics_state().clone()
    b.set_state_tensor([n - 1], qpos, qvel)
    _check_rows(b, "set_state_tensor", [n - 1], before, qpos)
    b.step_tensor(_ctrl(b, 0.1), 2)
    full_qpos, full_qvel = _target_state(b, n)
    full_qpos[1:] += 0.5  # rows outside the mask: must be ignored
    mask = torch.zeros(n, dtype=torch.bool, device=b.device)
    mask[0] = True
    before = b.get_physics_state().clone()
    b.set_state_tensor_mask(mask, full_qpos, full_qvel)
    _check_rows(b, "set_state_tensor_mask", [0], before, qpos)


def check_snapshot(b: SimBackend) -> None:
    saved = b.get_physics_state().clone()
    b.step_tensor(_ctrl(b, 0.3), 3)
    b.set_physics_state(saved)
    _expect(
        torch.equal(b.get_physics_state(), saved),
        "snapshot",
        "set_physics_state(get_physics_state()) is not exact",
    )


def _candidate(b: SimBackend, term: str, default: torch.Tensor) -> torch.Tensor | None:
    """A value of the term the backend accepts that differs from the default, if any."""
    for scale in (1.5, 0.5):
        value = default * scale
        if torch.equal(value, default):
            continue
        try:
            b.check_dr_param(term, value[None].to(b.device))
        except ArgumentError:
            continue
        return value
    return None


def check_dr(b: SimBackend) -> None:
    check = "DR"
    tol = 1e-6 if b.get_capabilities().dtype == torch.float32 else 1e-12
    for term in _writable_terms(b):
        default = b.get_dr_default(term).clone()
        value = _candidate(b, term, default)
        if value is None:
            continue
        b.set_dr_param(term, [0], value[None].to(b.device))
        got = b.get_dr_param(term, [0])[0].cpu()
        close = torch.allclose(got, value.cpu().double(), rtol=tol, atol=tol)
        _expect(close, check, f"{term}: wrote {value.tolist()}, read back {got.tolist()}")
        rest = b.get_dr_param(term, list(range(1, b.num_envs))).cpu()
        _expect(
            torch.equal(rest, default.cpu().double().expand_as(rest)), check, f"{term}: other envs changed"
        )
        now = b.get_dr_default(term)
        _expect(
            torch.equal(now, default), check, f"{term}: get_dr_default returned {now.tolist()} after a write"
        )
        b.set_dr_param(term, [0], default[None].to(b.device))


def check_close(b: SimBackend) -> None:
    check = "close"
    b.close()
    try:
        b.close()
    except Exception as e:
        raise ContractError(f"check_backend, {check}: a second close() raised {type(e).__name__}: {e}") from e
    _expect(b.closed, check, "closed is False after close()")
    calls = {
        "step_tensor": lambda: b.step_tensor(torch.zeros(b.num_envs, b.nu)),
        "get_state_views": b.get_state_views,
        "get_physics_state": b.get_physics_state,
        "materialize": b.materialize,
    }
    for name, call in calls.items():
        try:
            call()
        except BackendClosedError:
            continue
        except Exception as e:
            raise ContractError(
                f"check_backend, {check}: {name} after close() raised {type(e).__name__}"
            ) from e
        raise ContractError(f"check_backend, {check}: {name} after close() did not raise BackendClosedError")


CHECKS = (
    check_capabilities,
    check_metadata,
    check_materialize,
    check_step,
    check_bad_input,
    check_set_state,
    check_snapshot,
    check_dr,
    check_close,
)


def check_backend(backend: SimBackend) -> None:
    """Run the contract's checks (CHECKS, see the module docstring) on `backend`, which needs
    num_envs >= 2; raise ContractError naming the first that fails. Closes the backend."""
    if not isinstance(backend, SimBackend):
        raise ArgumentError(f"backend: expected a SimBackend, got {type(backend).__name__}")
    if backend.num_envs < 2:
        raise ArgumentError(
            f"backend: expected num_envs >= 2 (row isolation needs two rows), got {backend.num_envs}"
        )
    for check in CHECKS:
        check(backend)
