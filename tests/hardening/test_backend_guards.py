"""One rule on every backend for what reaches an engine: the device named, the scene file,
its heightfields and DR values whose products overflow. Each refusal names the argument and
leaves the backend as it was."""

import pytest
import torch

from tests.contract.conftest import CPU_BACKENDS, SUITE_DEVICES, backend_params
from unienv import backends
from unienv.errors import ArgumentError
from unienv.tasks import GYM_ASSETS

HOPPER = f"{GYM_ASSETS}/hopper.xml"
SCENES = {
    "unparsable": (
        '<mujoco><worldbody><body><geom type="sphere" size="a"/></body></worldbody></mujoco>',
        "is not valid MJCF",
    ),
    "massless": (
        '<mujoco><worldbody><body><joint type="hinge"/></body></worldbody></mujoco>',
        "does not compile",
    ),
    "huge_hfield": (
        '<mujoco><asset><hfield name="ground" nrow="200000" ncol="200000" size="1 1 1 1"/></asset>'
        '<worldbody><geom type="hfield" hfield="ground"/></worldbody></mujoco>',
        "heightfield 'ground' .* 200000 x 200000 samples; expected at most 32768 a side",
    ),
}


@pytest.mark.parametrize("backend", backend_params(CPU_BACKENDS))
@pytest.mark.parametrize("device", ["cpu:1", "cpu:7"])
def test_an_indexed_cpu_is_refused(backend, device):
    with pytest.raises(ArgumentError, match=r"device: the CPU has no index .* got 'cpu:\d'"):
        backends.create(backend, HOPPER, 2, 0.002, device=device)


@pytest.mark.parametrize("backend", backend_params(CPU_BACKENDS))
@pytest.mark.parametrize("scene", list(SCENES))
def test_a_bad_scene_file_is_one_clear_refusal(backend, scene, tmp_path):
    text, match = SCENES[scene]
    path = tmp_path / f"{scene}.xml"
    path.write_text(text)
    with pytest.raises(ArgumentError, match=f"scene: .*{match}"):
        backends.create(backend, path, 2, 0.01, device=SUITE_DEVICES[backend])


@pytest.mark.parametrize("backend", [b for b in CPU_BACKENDS if b != "genesis"])
@pytest.mark.parametrize("factor", [1e160, 1e200, 1e300])
def test_dr_values_whose_products_overflow_are_refused_on_every_backend(backend, factor):
    """Finite in float64, but beyond the square root of the backend's largest float."""
    sim = backends.create(backend, HOPPER, 2, 0.002, device=SUITE_DEVICES[backend], randomize=["body_mass"])
    sim.materialize()
    before = sim.get_dr_param("body_mass")
    values = before.clone()
    values[0, 1] = factor  # the torso, finite where float64 holds it
    with pytest.raises(
        ArgumentError, match=r"values: (body_mass beyond .*square root of float\d\d's|contains)"
    ):
        sim.set_dr_param("body_mass", torch.tensor([0]), values[:1])
    with pytest.raises(ArgumentError, match="body_mass beyond|contains NaN or inf"):
        sim.check_dr_param("body_mass", values[:1])
    assert torch.equal(sim.get_dr_param("body_mass"), before)
    sim.close()
