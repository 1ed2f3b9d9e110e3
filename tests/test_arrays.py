"""The two array namespaces tasks compute in (unienv.utils.arrays) agree, and NumPy draws come from the
same per-env random streams as torch draws (unienv.utils.random)."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from unienv.utils.arrays import NUMPY, torch_namespace
from unienv.utils.random import EnvRandom, NumpySampler, OneEnvSampler

TORCH = torch_namespace(torch.device("cpu"))


@pytest.fixture
def arrays():
    rng = np.random.default_rng(7)
    return rng.normal(size=(5, 2, 3)), rng.normal(size=(5, 1, 3)), rng.normal(size=(5, 4))


CALLS = {
    "cos": lambda xp, a, b, c: xp.cos(c),
    "cross (broadcast)": lambda xp, a, b, c: xp.cross(b, a),
    "norm": lambda xp, a, b, c: xp.norm(a),
    "stack": lambda xp, a, b, c: xp.stack((c[:, 0], xp.abs(c[:, 1]), xp.square(c[:, 2])), 1),
    "concat": lambda xp, a, b, c: xp.concat((c, a.reshape(len(a), -1)), 1),
    "where": lambda xp, a, b, c: xp.where(c > 0, c, 0.0),
    "clip": lambda xp, a, b, c: xp.clip(c, -0.5, None),
    "amax": lambda xp, a, b, c: xp.amax(c, 1),
    "astype": lambda xp, a, b, c: xp.astype(c > 0, xp.float64) * xp.exp(c),
    "broadcast_to": lambda xp, a, b, c: xp.copy(xp.broadcast_to(b, a.shape)) + a,
    "arctan2": lambda xp, a, b, c: xp.arctan2(c[:, 0], c[:, 1]),
    "take (flat)": lambda xp, a, b, c: xp.take(a, xp.astype(xp.floor(xp.abs(c) * 7), xp.int64)),
}


@pytest.mark.parametrize("name", CALLS)
def test_numpy_and_torch_forms_compute_the_same(name, arrays):
    call = CALLS[name]
    numpy_result = call(NUMPY, *arrays)
    torch_result = call(TORCH, *(torch.from_numpy(x) for x in arrays))
    assert isinstance(numpy_result, np.ndarray) and isinstance(torch_result, torch.Tensor)
    assert numpy_result.dtype == torch_result.numpy().dtype
    np.testing.assert_allclose(numpy_result, torch_result.numpy(), rtol=1e-13, atol=1e-15)


def test_asarray_shares_a_cpu_tensors_memory_and_copy_does_not():
    t = torch.zeros(3, 2, dtype=torch.float64)
    view, copy = NUMPY.asarray(t), NUMPY.copy(NUMPY.asarray(t))
    t[1, 1] = 5.0
    assert view[1, 1] == 5.0 and copy[1, 1] == 0.0
    assert NUMPY.asarray([1, 2], dtype=np.float32).dtype == np.float32


def test_numpy_draws_are_the_torch_streams():
    """The same ids drawn in NumPy and in torch: identical uniforms and integers (normals to an
    ulp, from libm), the same counters after, and other envs' streams untouched."""
    with_numpy, with_torch = EnvRandom(10), EnvRandom(10)
    with_numpy.seed(42), with_torch.seed(42)
    for ids in ([0, 3, 9], [3], [1, 2, 3, 4, 5, 6, 7, 8]):
        a, b = with_numpy.for_envs(np.array(ids)), with_torch.for_envs(torch.tensor(ids))
        for shape in ((2,), (70,), (3, 2)):  # 70: past a block of 64, which starts a new one
            x, y = a.uniform(shape, -1.0, 2.0), b.uniform(shape, -1.0, 2.0)
            assert isinstance(x, np.ndarray) and np.array_equal(x, y.numpy())
        assert np.array_equal(a.integers((5,), 2, 9), b.integers((5,), 2, 9).numpy())
        np.testing.assert_allclose(a.normal((4,)), b.normal((4,)).numpy(), rtol=0, atol=1e-15)
    assert torch.equal(with_numpy._counts, with_torch._counts)


_DRAW_NORMALS = (
    "import numpy as np; from unienv.utils.random import EnvRandom; r = EnvRandom(64); r.seed(11); "
    "print(r.for_envs(np.arange(64)).normal((500,)).tobytes().hex())"
)


def test_numpy_normal_draws_do_not_depend_on_numpys_simd_kernels():
    """A NumPy normal draw gives the same bits with every SIMD kernel NumPy could pick on this CPU
    turned off (NPY_DISABLE_CPU_FEATURES): NumPy's AVX-512 log1p and cos round otherwise than its
    others, and a chaotic task (half_cheetah) turns that last bit of its start into another
    episode. On a CPU without AVX-512 both runs take the same kernels; on one with it, this fails
    where the draw goes through NumPy's log1p and cos."""
    umath = (np._core if hasattr(np, "_core") else np.core)._multiarray_umath  # NumPy 2 or 1.26
    dispatched = " ".join(f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f))
    runs = []
    for disabled in ("", dispatched):
        environ = {**os.environ, "NPY_DISABLE_CPU_FEATURES": disabled}
        done = subprocess.run(
            [sys.executable, "-c", _DRAW_NORMALS], env=environ, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-2000:]
        runs.append(done.stdout.strip())
    assert runs[0] == runs[1] and len(runs[0]) == 64 * 500 * 16


def test_an_envs_numpy_draws_do_not_depend_on_which_other_envs_draw():
    alone, together = EnvRandom(6), EnvRandom(6)
    alone.seed(3), together.seed(3)
    for _ in range(3):
        x = alone.for_envs(np.array([4])).uniform((3,))
        y = together.for_envs(np.array([1, 4, 5])).uniform((3,))
        assert np.array_equal(x[0], y[1])


def test_one_envs_draws_are_the_general_numpy_draws():
    """OneEnvSampler (Python ints) gives the general NumpySampler's numbers bit for bit, and moves
    the streams as it does: draws within a block, across its end (70 and 100 numbers), after seeds
    near 2**32 and counters near 2**64 (where uint64 wraps)."""
    fast, general = EnvRandom(5), EnvRandom(5)
    for seed in (0, 7, 2**32 - 1):
        fast.seed(seed), general.seed(seed)
        for env in (0, 4):
            for _ in range(2):
                a, b = fast.for_envs(np.array([env])), NumpySampler(general, np.array([env]))
                assert isinstance(a, OneEnvSampler) and not isinstance(b, OneEnvSampler)
                for shape in ((3,), (2, 3), (70,), (1,), (100,)):
                    x, y = a.uniform(shape, -0.1, 0.1), b.uniform(shape, -0.1, 0.1)
                    assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
                for shape in ((3,), (2, 5), (40,)):
                    assert a.normal(shape, 0.5, 0.1).tobytes() == b.normal(shape, 0.5, 0.1).tobytes()
                assert a.integers((4,), -3, 9).tobytes() == b.integers((4,), -3, 9).tobytes()
                assert a.uniform((2,), np.zeros(2), np.arange(1.0, 3.0), np.float32).tobytes() == (
                    b.uniform((2,), np.zeros(2), np.arange(1.0, 3.0), np.float32).tobytes()
                )
        assert torch.equal(fast._counts, general._counts) and torch.equal(fast._keys, general._keys)
    for r in (fast, general):
        r._counts[2] = -10  # 2**64 - 10 as uint64: the next block's counter wraps past 2**64
    x, y = fast.for_envs(np.array([2])).uniform((5,)), NumpySampler(general, np.array([2])).uniform((5,))
    assert x.tobytes() == y.tobytes() and torch.equal(fast._counts, general._counts)


@pytest.mark.parametrize("xp", [NUMPY, TORCH], ids=["numpy", "torch"])
def test_task_rotation_matrices_are_mujocos(xp):
    """tasks.common's rotation_matrix equals mju_quat2Mat; R @ v and rotate (a vector shared by
    the batch, as a task's constant offset, and for rotate vectors per env too) rotate as
    mju_rotVecQuat does, and v @ R (vectors per env) as it does by the conjugate. Each row is computed alone: a batch of one gives its bits."""
    import mujoco

    from unienv.tasks.common import rotate, rotation_matrix, to_body

    rng = np.random.default_rng(11)
    quat = rng.normal(size=(6, 4))
    quat /= np.linalg.norm(quat, axis=-1, keepdims=True)
    shared, v = rng.normal(size=3) * 5.0, rng.normal(size=(6, 2, 3)) * 5.0
    matrices, rotated = np.empty((6, 9)), np.empty((6, 3))
    forward, inverse = np.empty_like(v), np.empty_like(v)
    for i in range(6):
        mujoco.mju_quat2Mat(matrices[i], quat[i])
        mujoco.mju_rotVecQuat(rotated[i], shared, quat[i])
        for j in range(2):
            mujoco.mju_rotVecQuat(forward[i, j], v[i, j], quat[i])
            mujoco.mju_rotVecQuat(inverse[i, j], v[i, j], quat[i] * [1.0, -1.0, -1.0, -1.0])
    q = xp.asarray(quat)
    rot = rotation_matrix(xp, q)
    np.testing.assert_allclose(np.asarray(rot).reshape(6, 9), matrices, rtol=0, atol=1e-15)
    np.testing.assert_allclose(np.asarray(rot @ xp.asarray(shared)), rotated, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(rotate(xp, q, xp.asarray(shared))), rotated, rtol=0, atol=1e-12)
    # rotate broadcast over (N, 1, 4) quaternions and (N, K, 3) vectors, one set per env
    np.testing.assert_allclose(np.asarray(rotate(xp, q[:, None], xp.asarray(v))), forward, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(xp.asarray(v) @ rot), inverse, rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        np.asarray(to_body(xp.asarray(v[:, 0]), rot)), inverse[:, 0], rtol=0, atol=1e-12
    )
    for i in range(6):
        alone = rotation_matrix(xp, q[i : i + 1])
        assert np.array_equal(np.asarray(alone), np.asarray(rot[i : i + 1]))
        assert np.array_equal(
            np.asarray(alone @ xp.asarray(shared)), np.asarray(rot @ xp.asarray(shared))[i : i + 1]
        )
        assert np.array_equal(
            np.asarray(xp.asarray(v[i : i + 1]) @ alone), np.asarray(xp.asarray(v) @ rot)[i : i + 1]
        )
