"""Terrain, height scans and the curriculum: the generator against its documented formulas,
the hfield as MuJoCo sees it, cross-backend scans, and level moves."""

import os

import numpy as np
import pytest
import torch

from tests.contract.conftest import AVAILABLE, backend_options, create_backend
from unienv.errors import ArgumentError, CapabilityError, UnknownNameError
from unienv.terrain import TYPES, Curriculum, Surface, Terrain, TerrainConfig, tile_heights, tile_rng
from unienv.utils.arrays import NUMPY, torch_namespace

# a free box above the floor, which terrain replaces
SCENE = os.path.join(os.path.dirname(__file__), "mocap.xml")
LEVELS = 3


def _tile(terrain, level, column):
    n = terrain.config.samples
    return terrain.heights[column * n : (column + 1) * n, level * n : (level + 1) * n]


@pytest.mark.parametrize("kind", TYPES)
def test_each_type_follows_its_formula(kind):
    config = TerrainConfig(types=(kind,), num_levels=LEVELS, seed=3)
    terrain = Terrain(config)
    n, res, half, p = config.samples, config.resolution, config.tile_size / 2, config.platform
    u, v = np.meshgrid(np.arange(n) * res, np.arange(n) * res)
    edge = half - np.maximum(abs(u - half), abs(v - half))
    rise = np.minimum(edge, half - p)
    for level in range(LEVELS):
        d = level / (LEVELS - 1)
        h = _tile(terrain, level, 0)
        expected = {
            "flat": np.zeros_like(u),
            "slope_up": 0.4 * d * rise,
            "slope_down": -0.4 * d * rise,
            "stairs_up": (0.05 + 0.15 * d) * np.floor(rise / 0.3 + 1e-9),
            "stairs_down": -(0.05 + 0.15 * d) * np.floor(rise / 0.3 + 1e-9),
        }.get(kind)
        if expected is not None:
            np.testing.assert_allclose(h, expected, atol=1e-12)
        elif kind == "rough":
            a = 0.01 + 0.07 * d
            assert abs(h).max() <= a and h.std() > a / 3
            np.testing.assert_array_equal(h, tile_rng(config, level, 0).uniform(-a, a, size=u.shape))
        else:  # obstacles: flat ground and boxes of one height, the platform clear
            step = 0.05 + 0.15 * d
            assert set(np.round(np.unique(abs(h)), 12)) == {0.0, round(step, 12)}
            assert (h[edge > half - p] == 0).all()
            np.testing.assert_array_equal(h, tile_heights(kind, d, u, v, config, tile_rng(config, level, 0)))
        if kind in ("stairs_up", "slope_up") and level:
            assert h[n // 2, n // 2] > h[0, 0] == 0.0  # the top is in the middle


def test_terrain_is_deterministic_by_seed():
    make = lambda seed: Terrain(TerrainConfig(types=TYPES, num_levels=2, seed=seed)).heights  # noqa: E731
    assert np.array_equal(make(7), make(7))
    assert not np.array_equal(make(7), make(8))


def test_bad_configs_are_refused():
    with pytest.raises(UnknownNameError, match="terrain type 'stairz'.*stairs_up"):
        TerrainConfig(types=("stairz",))
    with pytest.raises(ArgumentError, match="difficulty"):
        TerrainConfig(difficulty=(0.5, 0.2))
    with pytest.raises(ArgumentError, match="resolution"):
        TerrainConfig(resolution=0.3)


def _terrain_scene():
    terrain = Terrain(TerrainConfig(types=TYPES, num_levels=LEVELS, seed=1))
    return terrain, terrain.write_scene(SCENE)


# fixed poses of the box (x, y, z, yaw): tiles of several types and levels, turned
POSES = [(2.0, 2.0, 1.0, 0.0), (6.05, 14.0, 1.5, 0.3), (10.0, 26.0, 1.0, -2.0), (9.3, 18.7, 2.0, 1.2)]
OFFSETS = torch.tensor([[x, y] for x in np.arange(-0.8, 0.81, 0.2) for y in np.arange(-0.5, 0.51, 0.25)])


def _scan(name, path):
    backend = create_backend(name, len(POSES), scene=path)
    dtype = backend.get_capabilities().dtype
    qpos = torch.as_tensor(backend.info.qpos0, dtype=dtype).repeat(len(POSES), 1)
    for i, (x, y, z, yaw) in enumerate(POSES):
        qpos[i, :7] = torch.tensor([x, y, z, np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])
    backend.set_state_tensor(
        torch.arange(len(POSES)),
        qpos.to(backend.device),
        torch.zeros(len(POSES), backend.nv, dtype=dtype, device=backend.device),
    )
    scan = backend.get_height_scan(backend.find("body", "box")[0], OFFSETS.to(backend.device, dtype))
    assert scan.dtype == dtype and scan.device == backend.device and scan.shape == (len(POSES), len(OFFSETS))
    backend.close()
    return scan.cpu().double()


def test_scans_read_the_generated_heights_on_mujoco():
    """At sample points the hfield MuJoCo builds and ray-casts is the generator's heightmap."""
    terrain, path = _terrain_scene()
    scan = _scan("mujoco", path)
    res = terrain.config.resolution
    for i, (x, y, _, yaw) in enumerate(POSES):
        c, s = np.cos(yaw), np.sin(yaw)
        for k, (dx, dy) in enumerate(OFFSETS.double().numpy()):
            px, py = x + c * dx - s * dy, y + s * dx + c * dy
            ix, iy = px / res, py / res
            if abs(ix - round(ix)) < 1e-6 and abs(iy - round(iy)) < 1e-6:  # on a sample point
                assert scan[i, k] == pytest.approx(terrain.heights[round(iy), round(ix)], abs=1e-6)
            else:  # between samples MuJoCo interpolates: within the neighbouring samples
                near = terrain.heights[int(iy) : int(iy) + 2, int(ix) : int(ix) + 2]
                assert near.min() - 1e-6 <= scan[i, k] <= near.max() + 1e-6


def test_scans_agree_across_backends():
    _, path = _terrain_scene()
    scans = {}
    for name in AVAILABLE:
        try:
            scans[name] = _scan(name, path)
        except CapabilityError as e:  # refused at construction, naming what it lacks
            assert name == "genesis" and "hfield" in str(e)
    assert "mujoco" in scans and len(scans) >= 1 + ("mjwarp" in AVAILABLE)
    for name, scan in scans.items():
        torch.testing.assert_close(scan, scans["mujoco"], atol=1e-5, rtol=0, msg=name)


def test_surface_lookup_equals_the_engines_ray_casts():
    """Surface evaluates the hfield's triangles as MuJoCo collides with them: at random points
    of a terrain of its own (steep rough ground, where the two diagonals of a cell differ by
    centimetres), in NumPy and torch, float64 and float32, it equals mujoco's vertical rays."""
    config = TerrainConfig(
        types=("rough", "stairs_down", "obstacles"), num_levels=2, seed=11, difficulty=(0.8, 1.0)
    )
    terrain = Terrain(config)
    rng = np.random.default_rng(5)
    span_x, span_y = ((n - 1) * config.resolution for n in terrain.heights.shape[::-1])
    poses = np.stack([rng.uniform(1, span_x - 1, 6), rng.uniform(1, span_y - 1, 6)], 1)
    offsets = rng.uniform(-0.9, 0.9, (400, 2))
    backend = create_backend("mujoco", len(poses), scene=terrain.write_scene(SCENE))
    qpos = torch.as_tensor(backend.info.qpos0).repeat(len(poses), 1)
    qpos[:, :3] = torch.as_tensor(np.concatenate([poses, np.full((len(poses), 1), 0.5)], 1))
    backend.set_state_tensor(
        torch.arange(len(poses)), qpos, torch.zeros(len(poses), backend.nv, dtype=torch.float64)
    )
    rays = backend.get_height_scan(backend.find("body", "box")[0], torch.as_tensor(offsets)).numpy()
    backend.close()
    x, y = poses[:, :1] + offsets[:, 0], poses[:, 1:] + offsets[:, 1]  # yaw 0: the world axes
    cpu = torch_namespace(torch.device("cpu"))
    for xp, dtype, atol in (
        (NUMPY, np.float64, 1e-6),
        (cpu, torch.float64, 1e-6),
        (cpu, torch.float32, 2e-5),
    ):
        heights = Surface(terrain, xp, dtype)(xp.asarray(x, dtype=dtype), xp.asarray(y, dtype=dtype))
        assert heights.dtype == dtype
        np.testing.assert_allclose(np.asarray(heights, dtype=np.float64), rays, atol=atol, rtol=0)
    assert np.ptp(rays) > 0.3  # the points span steep, varied ground


@pytest.mark.parametrize("xp", [NUMPY, torch_namespace(torch.device("cpu"))], ids=["numpy", "torch"])
def test_surface_gives_nan_for_a_point_that_is_not_finite_and_indexes_no_cell(xp):
    """A diverged robot's NaN or infinite position has no cell: its height is NaN, and the
    finite points keep their heights (before, floor(NaN) cast to int indexed out of range)."""
    terrain = Terrain(TerrainConfig(types=("rough",), num_levels=2, seed=1))
    surface = Surface(terrain, xp, xp.float64)
    x = xp.asarray([1.3, float("nan"), 2.0, float("inf"), 0.7], dtype=xp.float64)
    y = xp.asarray([1.1, 1.0, float("nan"), 1.0, -float("inf")], dtype=xp.float64)
    heights = np.asarray(surface(x, y))
    assert np.isnan(heights[1:4]).all() and np.isnan(heights[4])
    expected = np.asarray(surface(xp.asarray([1.3], dtype=xp.float64), xp.asarray([1.1], dtype=xp.float64)))
    assert heights[0] == expected[0] and np.isfinite(expected[0])


def test_curriculum_moves_levels_at_reset_only():
    terrain = Terrain(TerrainConfig(types=("flat", "stairs_up"), num_levels=LEVELS))
    levels, columns = (torch.from_numpy(x) for x in terrain.spawn_origins(6, max_init_level=1))
    assert columns.tolist() == [0, 1, 0, 1, 0, 1] and levels.tolist() == [0, 0, 1, 1, 0, 0]
    curriculum = Curriculum(terrain, levels.clone(), columns, torch.float64)
    origins = curriculum.origins()
    # level 1 (difficulty 0.5), column 1: the centre of the stairs' top, 4 steps of 0.125 m up
    torch.testing.assert_close(origins[3], torch.tensor([6.0, 6.0, 0.5], dtype=torch.float64))
    assert origins[2].tolist() == [6.0, 2.0, 0.0]  # flat
    # walked: far, far (but at the top level next), too little, enough for neither, far (not reset), little
    distance = torch.tensor([3.0, 3.0, 0.2, 1.5, 3.0, 0.1], dtype=torch.float64)
    commanded = torch.tensor([4.0, 4.0, 4.0, 2.0, 4.0, 0.1], dtype=torch.float64)
    curriculum.levels[1] = LEVELS - 1
    mask = torch.tensor([True, True, True, True, False, True])
    curriculum.update(mask, distance, commanded)
    assert curriculum.levels.tolist() == [1, LEVELS - 1, 0, 1, 0, 0]


def test_height_scan_refuses_bad_arguments():
    _, path = _terrain_scene()
    backend = create_backend("mujoco", 2, scene=path)
    with pytest.raises(ArgumentError, match=r"offsets: expected a \(P, 2\) torch.Tensor, got Tensor \(3,\)"):
        backend.get_height_scan(1, torch.zeros(3, dtype=torch.float64))
    with pytest.raises(ArgumentError, match="offsets: contains NaN"):
        backend.get_height_scan(1, torch.full((2, 2), float("nan"), dtype=torch.float64))
    with pytest.raises(ArgumentError, match="body_ids"):
        backend.get_height_scan(99, torch.zeros(2, 2, dtype=torch.float64))
    backend.close()


@pytest.mark.parametrize("name", ["mujoco", "mjwarp"])
def test_quadruped_rough_curriculum_moves_envs_at_reset(name):
    """In the env: a robot carried 3 m from its spawn point goes up a level at its reset, one
    that stayed put against a 1 m/s command goes down, one not reset keeps its level, and each
    reset env starts on its new tile."""
    if name not in AVAILABLE:
        pytest.skip(f"{name} is not installed here")
    import unienv

    terrain = {"types": ["flat", "rough"], "num_levels": 3, "tile_size": 2.0}
    options = {"terrain": terrain, "max_init_level": 1, "command_ranges": {"lin_vel_x": [1.0, 1.0]}}
    env = unienv.make("quadruped_rough", backend=name, num_envs=4, seed=0, task_options=options,
                      **backend_options(name))  # fmt: skip
    curriculum, backend = env.task.curriculum, env.backend
    env.reset()
    assert curriculum.levels.tolist() == [0, 0, 1, 1]
    qpos = backend.get_state_views()["qpos"].clone()
    qpos[0, 0] += 3.0  # env 0 carried 3 m along x
    backend.set_state_tensor(torch.arange(4), qpos, torch.zeros_like(backend.get_state_views()["qvel"]))
    env.step(torch.zeros(4, 12))
    env.reset(options={"reset_mask": torch.tensor([True, False, True, False])})
    assert curriculum.levels.tolist() == [1, 0, 0, 1]
    spawn = backend.get_state_views()["qpos"][:, :2].cpu().double()
    expected = torch.tensor([[3.0, 1.0], [1.0, 1.0]], dtype=torch.float64)  # levels 1 and 0, column 0
    torch.testing.assert_close(spawn[[0, 2]], expected, atol=1e-5, rtol=0)
    env.close()
