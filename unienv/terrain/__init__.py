"""Rough terrain: a tiled heightmap of difficulty levels by terrain types, as a MuJoCo hfield.

Model: the terrain is a grid of square tiles, `num_levels` rows along x (level 0,
the easiest, at x = 0) by one column per terrain type along y. Each tile is a
heightmap sampled every `resolution` metres, given by one pure function of the
type, the tile's difficulty and, for the random types, the tile's own random
stream (`tile_rng`: seeded by the config's seed, the level and the column). The
same config therefore gives the same terrain bit for bit, on every machine and
backend. Difficulty rises linearly over the levels across `difficulty`.

Types (heights in metres at tile-local coordinates u, v in [0, tile_size)):
  flat          0
  rough         uniform in [-a, a], a = 0.01 + 0.07 d, on a grid of `resolution`
  slope_up      pyramid: s * min(e, edge - platform), s = 0.4 d (rise per metre),
  slope_down    its negative
                where e = tile_size / 2 - max(|u - c|, |v - c|) is the distance
                from the tile's edge and c the tile's centre
  stairs_up     stepped pyramid: h * floor(min(e, edge - platform) / width),
  stairs_down   its negative; h = 0.05 + 0.15 d, width = 0.3 m
  obstacles     `num_obstacles` boxes of random size (0.3 to 1.0 m) and height
                +-(0.05 + 0.15 d), off the central platform

Every tile but rough keeps a flat platform of half-width `platform` at its centre,
where its envs spawn (`spawn_origins`). `write_scene` puts the heightmap into a
scene's MJCF in place of its floor plane, as an hfield geom; an engine without
hfields refuses such a scene at construction. `Surface` looks the ground height up
under any points, as MuJoCo collides with the hfield, in NumPy or torch. `Curriculum`
moves envs between levels at reset as legged_gym does.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

import numpy as np

from unienv.backends.base import TERRAIN_GROUP
from unienv.backends.scene import MAX_HFIELD_SIDE, edit_spec, write_spec
from unienv.errors import ArgumentError, unknown_name
from unienv.utils import limits
from unienv.utils.arrays import NUMPY, torch_namespace

TYPES = ("flat", "rough", "slope_up", "slope_down", "stairs_up", "stairs_down", "obstacles")
STEP_WIDTH = 0.3  # m, the tread of a stair
SPAWN_CLEARANCE = 0.3  # m around a tile's centre that a spawning robot must clear


HFIELD_BYTES = 40
"""Bytes a height sample costs while a terrain is built: float64 heights, the tile grid's float64
coordinates, MuJoCo's float32 copy in the model and the scene file's text of it."""


@dataclasses.dataclass(frozen=True)
class TerrainConfig:
    """What `cfg/terrain/*.yaml` sets: the tile grid, its difficulty range and its seed."""

    types: tuple[str, ...] = TYPES  # one column of tiles per type
    num_levels: int = 10  # rows of tiles, easiest first
    tile_size: float = 4.0  # m, side of a square tile
    resolution: float = 0.1  # m between height samples
    difficulty: tuple[float, float] = (0.0, 1.0)  # of the first and the last level
    platform: float = 0.6  # m, half-width of the flat spawn platform at each tile's centre
    num_obstacles: int = 12  # boxes per obstacles tile
    seed: int = 0

    def __post_init__(self):
        object.__setattr__(self, "types", tuple(self.types))
        object.__setattr__(self, "difficulty", tuple(float(d) for d in self.difficulty))
        for t in self.types:
            if t not in TYPES:
                raise unknown_name("terrain type", t, TYPES)
        if not self.types:
            raise ArgumentError("types: expected at least one terrain type, got none")
        if isinstance(self.num_levels, bool) or not isinstance(self.num_levels, int) or self.num_levels < 1:
            raise ArgumentError(f"num_levels: expected a positive int, got {self.num_levels!r}")
        low, high = self.difficulty
        if not 0.0 <= low <= high <= 1.0:
            raise ArgumentError(f"difficulty: expected 0 <= low <= high <= 1, got {self.difficulty}")
        if not self.resolution > 0 or not self.tile_size > 2 * self.platform >= 0:
            raise ArgumentError(
                f"tile_size, platform, resolution: expected tile_size > 2 platform >= 0 and resolution > 0, "
                f"got {self.tile_size}, {self.platform}, {self.resolution}"
            )
        n = self.tile_size / self.resolution
        if abs(n - round(n)) > 1e-9:
            raise ArgumentError(
                f"resolution: expected a divisor of tile_size {self.tile_size}, got {self.resolution}"
            )
        rows, columns = len(self.types) * round(n), self.num_levels * round(n)
        limits.check_size(
            "resolution: heightfield samples along its longer side (max(len(types), num_levels) x "
            "tile_size / resolution)",
            max(rows, columns),
            MAX_HFIELD_SIDE,
        )
        limits.check_memory(
            "resolution", rows * columns * HFIELD_BYTES, None, f"a {rows} x {columns} heightfield"
        )

    @property
    def samples(self) -> int:
        """Height samples along a tile's side."""
        return round(self.tile_size / self.resolution)

    def level_difficulty(self, level: int) -> float:
        """The difficulty of curriculum level `level`: `difficulty` spread evenly over the levels."""
        low, high = self.difficulty
        return low if self.num_levels == 1 else low + (high - low) * level / (self.num_levels - 1)


def tile_rng(config: TerrainConfig, level: int, column: int) -> np.random.Generator:
    """The random stream of one tile: the same config gives the same tile."""
    return np.random.default_rng([config.seed, level, column])


def tile_heights(kind: str, difficulty: float, u: np.ndarray, v: np.ndarray, config: TerrainConfig, rng=None):
    """Heights (m) of a tile of type `kind` at tile-local points (u, v) (any equal shapes).

    The random types (rough, obstacles) draw from `rng` (see `tile_rng`): rough
    draws one height per sample of the tile's grid, so it takes that grid's points."""
    d, half = difficulty, config.tile_size / 2
    edge = half - np.maximum(np.abs(u - half), np.abs(v - half))  # distance from the tile's border
    rise = np.minimum(edge, half - config.platform)  # flat on the central platform
    if kind == "flat":
        return np.zeros_like(u)
    if kind == "rough":
        a = 0.01 + 0.07 * d
        return rng.uniform(-a, a, size=u.shape)
    if kind in ("slope_up", "slope_down"):
        h = 0.4 * d * rise
        return h if kind == "slope_up" else -h
    if kind in ("stairs_up", "stairs_down"):
        h = (0.05 + 0.15 * d) * np.floor(rise / STEP_WIDTH + 1e-9)
        return h if kind == "stairs_up" else -h
    if kind == "obstacles":
        out = np.zeros_like(u)
        size = rng.uniform(0.3, 1.0, (config.num_obstacles, 2))
        corner = rng.uniform(0.0, config.tile_size, (config.num_obstacles, 2)) - size / 2
        height = (0.05 + 0.15 * d) * rng.choice([-1.0, 1.0], config.num_obstacles)
        for (x0, y0), (sx, sy), h in zip(corner, size, height, strict=True):
            out = np.where((u >= x0) & (u < x0 + sx) & (v >= y0) & (v < y0 + sy), h, out)
        return np.where(edge > half - config.platform, 0.0, out)  # the platform stays clear
    raise unknown_name("terrain type", kind, TYPES)


class Terrain:
    """A generated terrain: `heights[iy, ix]` at world (ix * resolution, iy * resolution)."""

    def __init__(self, config: TerrainConfig):
        self.config = c = config
        n = c.samples
        self.heights = np.zeros((len(c.types) * n, c.num_levels * n))
        local = np.arange(n) * c.resolution
        u, v = np.meshgrid(local, local)  # (n, n), [iy, ix]
        for level in range(c.num_levels):
            for column, kind in enumerate(c.types):
                h = tile_heights(kind, c.level_difficulty(level), u, v, c, tile_rng(c, level, column))
                self.heights[column * n : (column + 1) * n, level * n : (level + 1) * n] = h

    def tile_origin(self, level: np.ndarray, column: np.ndarray) -> np.ndarray:
        """World (x, y, z) of the centres of tiles (level, column), (..., 3): z is the highest
        ground within SPAWN_CLEARANCE m of the centre, where a robot stands clear of it."""
        c, n = self.config, self.config.samples
        level, column = np.broadcast_arrays(np.asarray(level), np.asarray(column))
        r, mid = round(SPAWN_CLEARANCE / c.resolution), n // 2
        tops = [
            self.heights[k * n + mid - r : k * n + mid + r + 1, lv * n + mid - r : lv * n + mid + r + 1].max()
            for lv, k in zip(level.ravel(), column.ravel(), strict=True)
        ]
        x, y = (level + 0.5) * c.tile_size, (column + 0.5) * c.tile_size
        return np.stack([x, y, np.reshape(tops, level.shape)], -1)

    def spawn_origins(self, num_envs: int, max_init_level: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Each env's spawn tile, as legged_gym lays them out: columns (types) in turn by env
        index, levels spread over [0, max_init_level]. Returns levels (num_envs,) int64 and
        columns (num_envs,) int64; `tile_origin` gives the points."""
        envs = np.arange(num_envs)
        columns = envs % len(self.config.types)
        levels = (envs // len(self.config.types)) % (min(max_init_level, self.config.num_levels - 1) + 1)
        return levels.astype(np.int64), columns.astype(np.int64)

    def hfield_heights(self) -> np.ndarray:
        """`heights` as the hfield of `write_scene` holds them: MuJoCo stores an hfield's
        samples as float32 fractions of its height span."""
        low, span = self._span()
        return low + span * ((self.heights - low) / span).astype(np.float32)

    def _span(self) -> tuple[float, float]:
        low, high = float(self.heights.min()), float(self.heights.max())
        return low, max(high - low, 1e-3)

    def write_scene(self, scene: str | os.PathLike, floor: str = "floor") -> str:
        """A copy of the MJCF `scene` whose geom `floor` is this terrain (an hfield), written
        once per (scene, terrain) to a cache directory; returns its path."""
        import mujoco

        spec = edit_spec(scene)
        geom = spec.geom(floor)
        if geom is None:
            raise ArgumentError(
                f"scene: {os.fspath(scene)!r} has no geom named {floor!r} to replace by terrain"
            )
        c, h = self.config, self.heights
        low, span = self._span()
        hfield = spec.add_hfield(
            name="terrain",
            nrow=h.shape[0],
            ncol=h.shape[1],
            size=[(h.shape[1] - 1) * c.resolution / 2, (h.shape[0] - 1) * c.resolution / 2, span, 0.5],
            userdata=((h - low) / span).astype(np.float32).ravel().tolist(),
        )
        # a light checker of one square per tile, lit from above at a slant: tiles, steps and
        # slopes stand out in renders
        spec.add_texture(
            name="terrain", type=mujoco.mjtTexture.mjTEXTURE_2D, builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER,
            rgb1=[0.62, 0.64, 0.66], rgb2=[0.45, 0.5, 0.55], width=64, height=64,
        )  # fmt: skip
        repeat = 1 / (2 * c.tile_size)  # per metre: a checker square per tile
        material = spec.add_material(name="terrain", texrepeat=[repeat, repeat], texuniform=True)
        material.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = "terrain"
        spec.worldbody.add_light(
            name="terrain_sun", type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL, dir=[0.4, 0.6, -0.7],
            diffuse=[0.6, 0.6, 0.6], castshadow=False,
        )  # fmt: skip
        spec.visual.headlight.ambient = [0.25, 0.25, 0.25]
        spec.visual.headlight.diffuse = [0.45, 0.45, 0.45]
        geom.material = "terrain"
        geom.type = mujoco.mjtGeom.mjGEOM_HFIELD
        geom.group = TERRAIN_GROUP  # what height scans see
        geom.hfieldname = hfield.name
        geom.pos = [hfield.size[0], hfield.size[1], low]
        geom.size = [0.0, 0.0, 0.0]
        return write_spec(spec, scene, "unienv_terrain")


class Surface:
    """The ground height under world points (x, y), as MuJoCo collides with a terrain's hfield,
    in an array namespace (NumPy, or torch on a device).

    MuJoCo's hfield is a grid of cells, each split into two triangles along its diagonal
    from sample (ix, iy) to (ix + 1, iy + 1), so the surface is a plane on each triangle.
    A lookup finds the triangle and evaluates its plane: a few elementwise calls and three
    gathers per batch, where the CPU engine casts a ray per point, at a small fraction of
    the rays' cost (the documentation's "Performance" page has the figures).
    Points beyond the terrain's edge take the height of the nearest edge cell's plane
    (the physics has no ground there). Heights agree with the engine's vertical ray casts
    (`SimBackend.get_height_scan`) to rounding. A point that is not finite (a diverged robot's)
    has height NaN, looked up without indexing by it; the env ends that episode (`diverged`) and
    hands out none of its values.
    """

    def __init__(self, terrain: Terrain, xp, dtype):
        h = terrain.hfield_heights()
        h00, h10, h01, h11 = h[:-1, :-1], h[:-1, 1:], h[1:, :-1], h[1:, 1:]  # [iy, ix] cell corners
        # per triangle t (below the diagonal, where fx >= fy: t = 0; above it: t = 1) of cell
        # (iy, ix): height = base + along_x fx + along_y fy at fractions (fx, fy) of the cell
        planes = np.stack(
            [
                np.stack([h00, h10 - h00, h11 - h10], -1),
                np.stack([h00, h11 - h01, h01 - h00], -1),
            ],
            -2,
        ).reshape(-1, 3)  # row (iy * cells_x + ix) * 2 + t
        self.xp = xp
        self.base, self.along_x, self.along_y = (
            xp.asarray(np.ascontiguousarray(p), dtype=dtype) for p in planes.T
        )
        self.cells_y, self.cells_x = h00.shape
        self.inverse_resolution = 1.0 / terrain.config.resolution

    def __call__(self, x, y):
        """Heights (m) at world points (x, y): arrays of one shape."""
        xp = self.xp
        finite = xp.isfinite(x) & xp.isfinite(y)  # not a diverged robot's NaN, which has no cell
        gx = xp.where(finite, x, 0.0) * self.inverse_resolution  # in samples
        gy = xp.where(finite, y, 0.0) * self.inverse_resolution
        ix = xp.clip(xp.floor(gx), 0, self.cells_x - 1)
        iy = xp.clip(xp.floor(gy), 0, self.cells_y - 1)
        fx, fy = gx - ix, gy - iy
        row = xp.astype((iy * self.cells_x + ix) * 2 + (fy > fx), xp.int64)
        height = xp.take(self.base, row) + xp.take(self.along_x, row) * fx + xp.take(self.along_y, row) * fy
        return xp.where(finite, height, float("nan"))


class Curriculum:
    """Terrain levels per env, moved at reset as legged_gym does: an env that walked farther
    than half a tile from its origin goes up a level, one that walked less than half the
    distance its command asked for goes down; levels stay in [0, num_levels). Arrays of
    the namespace of `levels` (NumPy, or torch on its device), masks only (no host read)."""

    def __init__(self, terrain: Terrain, levels, columns, dtype):
        c = terrain.config
        self.num_levels, self.tile_size = c.num_levels, c.tile_size
        self.levels, self.columns = levels, columns
        self.xp = NUMPY if isinstance(levels, np.ndarray) else torch_namespace(levels.device)
        grid = np.stack(np.meshgrid(np.arange(c.num_levels), np.arange(len(c.types)), indexing="ij"), -1)
        origins = terrain.tile_origin(grid[..., 0], grid[..., 1])
        self._origins = self.xp.asarray(origins, dtype=dtype)  # (levels, columns, 3)

    def origins(self):
        """(num_envs, 3) the spawn point of each env on its tile."""
        return self._origins[self.levels, self.columns]

    def update(self, mask, distance, commanded) -> None:
        """Move the envs of `mask` (being reset) by their walked `distance` (m) against the
        `commanded` distance (m) of their episode."""
        xp = self.xp
        up = distance > self.tile_size / 2
        down = (distance < 0.5 * commanded) & ~up
        step = xp.astype(up, self.levels.dtype) - xp.astype(down, self.levels.dtype)
        self.levels[:] = xp.where(mask, xp.clip(self.levels + step, 0, self.num_levels - 1), self.levels)


def from_cfg(cfg: dict | None) -> Terrain:
    """A Terrain from a Hydra `terrain` group node (cfg/terrain/*.yaml); None: the defaults."""
    cfg = dict(cfg or {})
    fields = {f.name for f in dataclasses.fields(TerrainConfig)}
    unknown = sorted(set(cfg) - fields - {"name"})
    if unknown:
        raise ArgumentError(f"terrain: unknown keys {unknown}; expected some of {sorted(fields)}")
    return Terrain(TerrainConfig(**{k: v for k, v in cfg.items() if k in fields}))


__all__: Sequence[str] = (
    "TYPES",
    "Curriculum",
    "Surface",
    "Terrain",
    "TerrainConfig",
    "from_cfg",
    "tile_heights",
    "tile_rng",
)
