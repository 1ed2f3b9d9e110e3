"""Domain randomization: which parameters vary per env, how they are drawn, when.

A DR config (the `dr` group of cfg/, `cfg/dr/<name>.yaml`) maps a term name to
a term. Each term has a `param`, the thing it changes, which picks its kind
(`KINDS`, one class each in `unienv.dr.kinds`):

  * `model`: a backend DR parameter (`body_mass`, `body_com`, `geom_friction`,
    `dof_damping`, ... see `unienv.backends.DR_TERMS`) on the entries picked by
    `objects` (names or regexes over the backend's bodies, geoms, joints or
    actuators, by the parameter's index kind; default all, the world body
    never) and `axes` (components of a vector entry, e.g. [0] for sliding
    friction; default all);
  * `obs_noise`: noise added to observation columns, drawn afresh for every
    observation, plus a per-episode bias uniform in [-bias, bias] per column;
    the columns are those of the task's named observation blocks `blocks:
    [name, ...]` (`Task.observation_layout`; preferred), or the columns
    `indices: [start, stop)`, or all;
  * `action_latency`: env i applies the action of d_i steps ago (zero actions
    before its first d_i), d_i uniform on the integers of `range: [lo, hi]`;
  * `push`: a velocity change dv (world frame, m/s) of `body` and its subtree,
    delivered as the force m*dv/T at the body's COM during one env step of T s;
  * `init_state`: a change to the task's reset state, `field: qpos | qvel`, on
    the columns of the joints in `objects` (a free joint's position only:
    quaternions are never perturbed).

A sample x is drawn per env, and per entry unless `shared: true`, from
`distribution`: `uniform` on `range: [lo, hi]`, `log_uniform` on [lo, hi]
(0 < lo), or `gaussian` with `mean`, `std`, clipped to `clip: [lo, hi]`; a
number as `range` is a fixed value. `operation` makes the value from the
compiled default d (for `init_state`, from the task's reset state): `abs` x,
`scale` d*x, `add` d+x. `schedule` says when: `startup` (once, when the env is
built, from make's seed), `reset` (each env at its own reset, before its state
is set; the default) or `interval` (before every `interval: k`-th env step, or
after a fresh draw from `interval: [lo, hi]` per env and firing; timers restart
at the env's reset, and until its first firing a term leaves the default).
`ramp: n` (a model, push or init_state term with operation `scale` or `add`)
widens the draws from no change to the whole distribution over the env's first
n steps: x becomes u + min(1, t/n) (x - u), t the steps taken, u the draw that
changes nothing (1 for scale, 0 for add and a push): a curriculum for training
(train.py evaluates at the full range, `full_range`).

Invariants:
  * everything is checked when the manager is built, before anything runs: an
    unknown parameter, field or block or a misspelled name lists the valid
    ones; a parameter the backend cannot write raises CapabilityError naming
    both; a range that can give a value the backend refuses (mass <= 0,
    friction < 0, negative damping or gain: the rules of
    `unienv.backends.dr_rules`, and the engine's own limits) is refused.
    Nothing is clamped except by a gaussian's stated `clip`.
  * a value is always made from the compiled default, never from the last
    sample, so nothing accumulates; every entry (and observation column) is
    written by one term only, so term order does not matter.
  * each term draws from its own per-env stream (`unienv.utils.random`) keyed by the
    env seed and the term's name: what env i gets depends on the seed, the term
    and env i's own history, never on other envs or on the other terms.
  * a reset or an interval firing writes only the rows of the envs concerned.

Hot path: the manager works on `unienv.utils.rows.Rows`. With `device_rows` (the env's
choice where the backend's state lives where a host read would wait for it) every call works on all envs through the mask:
draws are made for every env but advance only the masked envs' streams
(`EnvRandom.for_mask`, so env i draws what it would alone), buffers change with
`torch.where`, parameters go to the backend with `set_dr_param_mask`, pushes
are a wrench that is zero where none is due; nothing is read back on the host.
With `host_rows` (the CPU engine, where host reads are free) a call works on the
selected envs' ids, and an interval firing that selects no env is skipped. The
manager keeps the current value of every parameter it writes in a device buffer
(read from the backend once, at startup), so no write reads the backend back,
and the extremes drawn so far as device tensors, read only by `ranges()`.

Reading: `env.dr_params()` (each term's current values per env, columns named
by `env.dr.labels()`), `env.dr.ranges()` (the extremes drawn so far, which a
sweep reports). A push's m is the subtree's current, randomized mass, from the
manager's own buffer.

Modules: `config` (presets, `parse`, `backend_params`, `full_range`), `spec` (`Term`,
`Distribution` and the field readers), `kinds` (a class per kind, `KINDS`),
`manager` (`DomainRandomization`).
"""

from unienv.dr.config import PARAMS, ROLES, backend_params, full_range, parse, preset
from unienv.dr.kinds import KINDS, ActionLatency, InitState, Kind, Model, ObsNoise, Push
from unienv.dr.manager import DomainRandomization
from unienv.dr.spec import DISTRIBUTIONS, OPERATIONS, SCHEDULES, Distribution, Term
from unienv.utils.rows import Rows, device_rows, host_rows

__all__ = [
    "DISTRIBUTIONS",
    "KINDS",
    "OPERATIONS",
    "PARAMS",
    "ROLES",
    "SCHEDULES",
    "ActionLatency",
    "DomainRandomization",
    "Distribution",
    "InitState",
    "Kind",
    "Model",
    "ObsNoise",
    "Push",
    "Rows",
    "Term",
    "backend_params",
    "device_rows",
    "full_range",
    "host_rows",
    "parse",
    "preset",
]
