"""The environment classes under their first import path (`unienv.envs.UniEnv`); they live in
`unienv.env`."""

from unienv.env import NumpyEnv, SingleEnv, UniEnv, numpy_env

__all__ = ["NumpyEnv", "SingleEnv", "UniEnv", "numpy_env"]
