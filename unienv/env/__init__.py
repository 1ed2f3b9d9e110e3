"""The environment layer: the vector env over a task and a backend, and its other forms.

vector.py   UniEnv, the Gymnasium VectorEnv: one pipeline (transition, autoreset,
            observation), the Gymnasium face
paths.py    how that pipeline runs where the state lives: host ids (the CPU engine,
            NumPy or torch tasks) or device masks (mjwarp, genesis), chosen once
graph.py    the step replayed as one CUDA graph, where the backend allows it
checks.py   the env's argument checks
forms.py    NumpyEnv (NumPy in and out) and SingleEnv (one env, `gymnasium.make`)
"""

from unienv.env.forms import NumpyEnv, SingleEnv, numpy_env
from unienv.env.vector import UniEnv

__all__ = ["NumpyEnv", "SingleEnv", "UniEnv", "numpy_env"]
