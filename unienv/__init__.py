"""unienv: Gymnasium-compatible vectorized robot simulation on batched engines.

    env = unienv.make("ant", backend="mujoco", num_envs=256, seed=0)
    obs, info = env.reset()
    obs, reward, terminated, truncated, info = env.step(actions)

Importing unienv registers every task with Gymnasium ("unienv/Ant-v0", ...)
and its options with Hydra's ConfigStore (the `task` config group of cfg/), and
imports no optional engine (genesis, warp, pinocchio).
"""

from gymnasium.vector import AutoresetMode

from unienv.env import NumpyEnv, SingleEnv, UniEnv, numpy_env
from unienv.errors import ArgumentError, BackendClosedError, CapabilityError
from unienv.make import make, make_single, make_vector, register_envs
from unienv.tasks import store_configs

register_envs()
store_configs()

__version__ = "0.1.0"
__all__ = [
    "ArgumentError",
    "AutoresetMode",
    "BackendClosedError",
    "CapabilityError",
    "NumpyEnv",
    "SingleEnv",
    "UniEnv",
    "make",
    "make_single",
    "make_vector",
    "numpy_env",
]
