"""unienv.robots: the search order and its errors, on search places made in temp dirs
(a checkout folder, a fake asset package on sys.path), never the network."""

import pytest

from unienv import robots
from unienv.errors import ArgumentError, UnknownNameError


def _robot(root, name, files=("scene.xml",)):
    folder = root / name
    folder.mkdir(parents=True)
    for f in files:
        (folder / f).write_text("<mujoco/>")
    return folder


@pytest.fixture
def nowhere(monkeypatch):
    """No place set up: no environment variable, no mujoco-menagerie, no asset package."""
    monkeypatch.delenv(robots.ENV_VAR, raising=False)
    monkeypatch.setattr(robots, "MENAGERIE_PACKAGE", "unienv_no_such_menagerie")
    monkeypatch.setattr(robots, "ASSET_PACKAGES", ())


def test_no_package_and_no_folder_names_robot_places_and_install(nowhere):
    with pytest.raises(robots.RobotNotFoundError) as e:
        robots.model_dir("unitree_g1")
    message = str(e.value)
    assert "'unitree_g1'" in message and "no place" in message
    assert "[robots]" in message and robots.ENV_VAR in message and "\n" not in message


def test_wrong_folder_is_refused_naming_the_argument(nowhere, tmp_path, monkeypatch):
    with pytest.raises(ArgumentError, match="^folder: expected a MuJoCo Menagerie checkout"):
        robots.model_dir("unitree_g1", tmp_path / "missing")
    (tmp_path / "a_file").write_text("")
    monkeypatch.setenv(robots.ENV_VAR, str(tmp_path / "a_file"))
    with pytest.raises(ArgumentError, match=f"^\\${robots.ENV_VAR}: expected"):
        robots.model_dir("unitree_g1")


def test_folder_without_the_robot_lists_it_among_the_places(nowhere, tmp_path):
    _robot(tmp_path, "franka_emika_panda")
    with pytest.raises(robots.RobotNotFoundError, match=f"folder argument \\({tmp_path}\\)"):
        robots.model_dir("unitree_go1", tmp_path)


def test_typo_gets_did_you_mean(nowhere, tmp_path):
    _robot(tmp_path, "unitree_go1")
    _robot(tmp_path, "boston_dynamics_spot")
    with pytest.raises(UnknownNameError, match="did you mean 'unitree_go1'") as e:
        robots.model_dir("unitre_go1", tmp_path)
    assert "\n" not in str(e.value)


def test_order_argument_then_environment_then_packages(nowhere, tmp_path, monkeypatch):
    pkg = tmp_path / "site" / "unienv_fake_assets"
    (pkg / "__init__.py").parent.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    in_pkg = _robot(pkg.joinpath(*robots.ASSET_SUBDIR), "unitree_h1", ("scene.xml", "h1.xml"))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(robots, "ASSET_PACKAGES", ("unienv_fake_assets",))
    assert robots.model_dir("unitree_h1") == in_pkg
    in_env = _robot(tmp_path / "env_checkout", "unitree_h1")
    monkeypatch.setenv(robots.ENV_VAR, str(tmp_path / "env_checkout"))
    assert robots.model_dir("unitree_h1") == in_env
    in_arg = _robot(tmp_path / "arg_checkout", "unitree_h1")
    assert robots.model_dir("unitree_h1", tmp_path / "arg_checkout") == in_arg
    assert robots.model_file("unitree_h1") == str(in_env / "scene.xml")
    with pytest.raises(UnknownNameError, match="did you mean 'scene.xml'"):
        robots.model_file("unitree_h1", "scen.xml", tmp_path / "arg_checkout")


def test_installed_packages_ship_the_g1_and_go1():
    """The robots extra (installed in CI): both models found, with their LICENSE files."""
    for name in ("unitree_g1", "unitree_go1"):
        folder = robots.model_dir(name)
        assert (folder / "scene.xml").is_file() and (folder / "LICENSE").is_file()


def test_unienv_imports_and_registers_without_the_robots_extra(nowhere, monkeypatch):
    """Without any robot model installed, registering the gym ids works (the base install's
    `import unienv`) and gives the specs that `import unienv` gave with the models (registering
    reads the task classes, it builds no scene), and making a robot task is the resolver's
    one-line refusal."""
    import gymnasium as gym

    from unienv.make import register_envs

    robot_ids = [
        f"unienv/{name}-v0"
        for name in ("Go1Velocity", "G1Velocity", "G1Tracking", "PandaLift", "LeapCubeRotate")
    ]
    specs = {env_id: gym.registry[env_id] for env_id in (*robot_ids, "unienv/Cartpole-v0")}
    for env_id in specs:
        monkeypatch.delitem(gym.registry, env_id)  # put back after the test
    register_envs()
    assert {env_id: gym.registry[env_id] for env_id in specs} == specs
    assert gym.registry["unienv/Cartpole-v0"].max_episode_steps == 500
    with pytest.raises(robots.RobotNotFoundError, match="'unitree_go1' not found"):
        gym.make("unienv/Go1Velocity-v0")


def test_list_without_robot_models_lists_the_rest_and_names_the_extra(nowhere, monkeypatch):
    """`python -m unienv list` on the core install: every task that needs no Menagerie model in
    its row, and one line naming the robot tasks and the extra that brings them."""
    import io

    from unienv import __main__ as command
    from unienv.errors import install_command

    monkeypatch.setattr(command, "backend_features", lambda: {"mujoco": {}})
    out = io.StringIO()
    command.list_tasks(out)
    rows = {line.split()[0] for line in out.getvalue().splitlines()[1:]}
    assert {"cartpole", "hopper", "quadruped"} <= rows
    assert not rows & {"go1_velocity", "g1_velocity", "panda_lift", "leap_cube_rotate", "g1_tracking"}
    (line,) = [line for line in out.getvalue().splitlines() if "Menagerie" in line]
    assert line.endswith(f"available with {install_command('robots')}")
    for name in (
        "go1_velocity",
        "g1_velocity",
        "h1_velocity",
        "panda_lift",
        "leap_cube_rotate",
        "g1_tracking",
    ):
        assert name in line
