"""The task's MJCF as viser scene nodes, and the body poses that move them.

Model: every body of the scene is one viser frame per shown env, `/env{k}/body{b}`, holding its
visible geoms (meshes, primitives, heightfields) as meshes in the body's frame; the world body's
geoms (floor, terrain) and the mocap bodies are bodies like the others. `/env{k}` is a fixed grid
offset that tiles the shown envs side by side. A frame is then only a pose per body: the world
pose of body b of env i is `body_poses(...)[0][k, b], [1][k, b]`, MuJoCo's `xpos`/`xquat` for that
env's state, exactly (the invariant a test checks): MuJoCo's kinematics of the qpos rows (and mocap poses) that
the backend reports through the contract, so every engine shows alike, float32 ones included.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
import torch
import trimesh

from unienv.render import FLOOR

PLANE_EXTENT = 10.0  # m: the half size drawn for an infinite plane (MJCF size 0)
VISIBLE_GROUPS = (0, 1, 2)  # MuJoCo's viewer shows these geom groups by default


def geom_mesh(model: mujoco.MjModel, g: int) -> trimesh.Trimesh | None:
    """Geom g as a triangle mesh in its body's frame, or None for a type not drawn."""
    size, kind = model.geom_size[g], model.geom_type[g]
    t = mujoco.mjtGeom
    if kind == t.mjGEOM_BOX:
        mesh = trimesh.creation.box(extents=2 * size)
    elif kind == t.mjGEOM_SPHERE:
        mesh = trimesh.creation.icosphere(subdivisions=2, radius=size[0])
    elif kind == t.mjGEOM_ELLIPSOID:
        mesh = trimesh.creation.icosphere(subdivisions=2, radius=1.0)
        mesh.apply_scale(size)
    elif kind == t.mjGEOM_CAPSULE:
        mesh = trimesh.creation.capsule(height=2 * size[1], radius=size[0], count=[12, 12])
    elif kind == t.mjGEOM_CYLINDER:
        mesh = trimesh.creation.cylinder(radius=size[0], height=2 * size[1], sections=16)
    elif kind == t.mjGEOM_PLANE:
        x, y = (s if s > 0 else PLANE_EXTENT for s in size[:2])
        mesh = trimesh.Trimesh([[-x, -y, 0], [x, -y, 0], [x, y, 0], [-x, y, 0]], [[0, 1, 2], [0, 2, 3]])
    elif kind == t.mjGEOM_MESH:
        m = model.geom_dataid[g]
        v0, nv = model.mesh_vertadr[m], model.mesh_vertnum[m]
        f0, nf = model.mesh_faceadr[m], model.mesh_facenum[m]
        mesh = trimesh.Trimesh(model.mesh_vert[v0 : v0 + nv], model.mesh_face[f0 : f0 + nf], process=False)
    elif kind == t.mjGEOM_HFIELD:
        mesh = _heightfield(model, model.geom_dataid[g])
    else:
        return None
    pose = np.eye(4)
    quat = model.geom_quat[g]
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, quat)
    pose[:3, :3], pose[:3, 3] = mat.reshape(3, 3), model.geom_pos[g]
    mesh.apply_transform(pose)
    return mesh


def _heightfield(model: mujoco.MjModel, h: int) -> trimesh.Trimesh:
    """Heightfield h as a grid mesh: MuJoCo's (rx, ry, elevation, base) size, rows along y."""
    rows, cols = model.hfield_nrow[h], model.hfield_ncol[h]
    rx, ry, top, _ = model.hfield_size[h]
    data = model.hfield_data[model.hfield_adr[h] : model.hfield_adr[h] + rows * cols].reshape(rows, cols)
    x, y = np.meshgrid(np.linspace(-rx, rx, cols), np.linspace(-ry, ry, rows))
    vertices = np.stack((x, y, data * top), -1).reshape(-1, 3)
    r, c = np.meshgrid(np.arange(rows - 1), np.arange(cols - 1), indexing="ij")
    a = (r * cols + c).ravel()
    faces = np.concatenate((np.stack((a, a + 1, a + cols + 1), 1), np.stack((a, a + cols + 1, a + cols), 1)))
    return trimesh.Trimesh(vertices, faces, process=False)


def geom_color(model: mujoco.MjModel, g: int) -> tuple[tuple[int, int, int], float]:
    """(RGB 0-255, opacity) of geom g: its material's colour where it has one and kept the default;
    a plane takes unienv's floor colour (unienv.render.FLOOR), as in the videos."""
    if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_PLANE:
        return tuple(int(255 * c) for c in FLOOR["rgb1"]), 1.0
    rgba = model.geom_rgba[g]
    if model.geom_matid[g] >= 0 and np.allclose(rgba, (0.5, 0.5, 0.5, 1.0)):
        rgba = model.mat_rgba[model.geom_matid[g]]
    return tuple(int(255 * c) for c in rgba[:3]), float(rgba[3])


def tile_offsets(count: int, spacing: float) -> np.ndarray:
    """(count, 3) grid offsets, row-major, as unienv.render.tile lays out video frames."""
    columns = math.ceil(math.sqrt(count))
    return np.array([[spacing * (k % columns), -spacing * (k // columns), 0.0] for k in range(count)])


def build(server, model: mujoco.MjModel, count: int, spacing: float) -> list[dict]:
    """Add `count` copies of the model's bodies to server's scene; returns the frame handles of
    those with something to draw, [env k]{body b: frame}. Lights: the model's own and a sky."""
    meshes = {}
    for g in range(model.ngeom):
        if model.geom_group[g] not in VISIBLE_GROUPS or model.geom_rgba[g][3] == 0:
            continue
        mesh = geom_mesh(model, g)
        if mesh is not None:
            meshes.setdefault(int(model.geom_bodyid[g]), []).append((g, mesh))
    server.scene.add_light_hemisphere("/light/sky", intensity=1.0)
    for i in range(model.nlight):
        direction = model.light_dir[i]
        if model.light_type[i] == mujoco.mjtLightType.mjLIGHT_DIRECTIONAL:
            server.scene.add_light_directional(f"/light/{i}", wxyz=_look(direction), intensity=1.5)
        else:
            server.scene.add_light_point(f"/light/{i}", position=tuple(model.light_pos[i]), intensity=2.0)
    frames = []
    for k, offset in enumerate(tile_offsets(count, spacing)):
        server.scene.add_frame(f"/env{k}", position=tuple(offset), show_axes=False)
        frames.append({})
        for b, geoms in sorted(meshes.items()):
            frames[k][b] = server.scene.add_frame(f"/env{k}/body{b}", show_axes=False)
            for g, mesh in geoms:
                color, opacity = geom_color(model, g)
                server.scene.add_mesh_simple(
                    f"/env{k}/body{b}/geom{g}",
                    mesh.vertices.astype(np.float32),
                    mesh.faces.astype(np.uint32),
                    color=color,
                    opacity=None if opacity >= 1 else opacity,
                    flat_shading=model.geom_type[g] == mujoco.mjtGeom.mjGEOM_HFIELD,
                )
    return frames


def _look(direction: np.ndarray) -> tuple[float, ...]:
    """The wxyz rotation taking +z to `direction` (viser's lights shine along their +z)."""
    z = np.array([0.0, 0.0, 1.0])
    d = np.asarray(direction, float) / (np.linalg.norm(direction) or 1.0)
    axis, w = np.cross(z, d), 1.0 + float(z @ d)
    q = np.array([w, *axis]) if w > 1e-9 else np.array([0.0, 1.0, 0.0, 0.0])
    return tuple(q / np.linalg.norm(q))


class Poses:
    """World poses of every body of the chosen envs, from the state the backend reports through the
    contract (its qpos rows, and its mocap bodies' poses where it moves them per env), by MuJoCo's
    kinematics in float64: the same numbers on every engine, MuJoCo's xpos/xquat for that state."""

    def __init__(self, backend, model: mujoco.MjModel):
        self.backend, self.model, self.data = backend, model, mujoco.MjData(model)
        self.mocap = backend.get_capabilities().mocap and model.nmocap > 0

    def __call__(self, env_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(K, nbody, 3) positions and (K, nbody, 4) wxyz quaternions, float64, of envs env_ids."""
        qpos = self.backend.get_state_views()["qpos"]
        ids = torch.as_tensor(env_ids, device=qpos.device)
        qpos = qpos[ids].double().cpu().numpy()
        if self.mocap:
            mocap = [m[ids].double().cpu().numpy() for m in self.backend.get_mocap_views()]
        pos, quat = np.empty((len(ids), self.model.nbody, 3)), np.empty((len(ids), self.model.nbody, 4))
        for k, q in enumerate(qpos):
            self.data.qpos[:] = q
            if self.mocap:
                self.data.mocap_pos[:], self.data.mocap_quat[:] = mocap[0][k], mocap[1][k]
            mujoco.mj_kinematics(self.model, self.data)
            pos[k], quat[k] = self.data.xpos, self.data.xquat
        return pos, quat
