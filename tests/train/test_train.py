"""train.py end to end: cartpole balance learns to the maximum, play.py replays it; torchrun on 2 CPUs.

Budget (cfg/train/ppo_cartpole.yaml): 256 envs x 32 steps x 50 PPO iterations = 409,600 env steps.
Measured on the 2-core CI machine: ~30 s of training, ~45 s for train.py in all, ~90 s for this test.
"""

import os
import re
import subprocess
import sys

import imageio.v2 as imageio
import pytest

import unienv
from unienv.training.rollout import make_policy, rollout

pytest.importorskip("rsl_rl")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAX_RETURN = 500.0  # cartpole balance: +1 per upright step, 500 steps


def run(command, cwd, timeout=600):
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
def test_cartpole_trains_to_the_maximum_and_play_replays_it(tmp_path):
    policy = tmp_path / "policy.safetensors"
    out = run(
        [
            sys.executable,
            os.path.join(ROOT, "train.py"),
            f"train.policy_path={policy}",
            f"hydra.run.dir={tmp_path}/run",
        ],
        cwd=tmp_path,
    )
    trained = re.search(
        r"trained cartpole on mujoco x256 envs x1 processes: (\d+) env steps in ([\d.]+) s", out
    )
    assert trained and int(trained[1]) == 409_600, out[-2000:]
    print(trained[0])
    evaluated = re.search(r"eval: (\d+) episodes, return ([\d.]+)", out)
    assert evaluated and float(evaluated[2]) > 0.95 * MAX_RETURN, out[-2000:]
    assert list((tmp_path / "run").glob("events.out.tfevents.*"))  # TensorBoard in the Hydra run dir
    assert_learning_curve(tmp_path / "run")

    # the saved policy, replayed deterministically on fresh seeds, keeps every pole up for a whole episode
    env = unienv.make("cartpole", num_envs=16, seed=123)
    stats = rollout(env, make_policy(str(policy), env), steps=500, progress=False)
    env.close()
    assert len(stats.lengths) == 16 and set(stats.lengths) == {500} and not any(stats.terminated)
    assert sum(stats.returns) / 16 > 0.95 * MAX_RETURN

    # play.py loads it, rolls a whole episode out and records it
    video = tmp_path / "cartpole.mp4"
    out = run(
        [
            sys.executable,
            os.path.join(ROOT, "play.py"),
            f"policy={policy}",
            "steps=500",
            "num_envs=1",
            "video.envs=1",
            "video.width=160",
            "video.height=120",
            f"video.path={video}",
        ],
        cwd=tmp_path,
    )
    assert "1 episodes finished; return 500.00" in out and "length 500.0, termination rate 0.00" in out, out
    assert len(list(imageio.get_reader(str(video)).iter_data())) == 251  # the reset, then every 2nd step


def test_torchrun_trains_with_two_cpu_processes(tmp_path):
    policy = tmp_path / "policy.safetensors"
    out = run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node=2",
            os.path.join(ROOT, "train.py"),
            "num_envs=16",
            "train.iterations=2",
            "train.eval_steps=0",
            f"train.policy_path={policy}",
            f"hydra.run.dir={tmp_path}/run",
        ],
        cwd=tmp_path,
    )
    ranks = dict(re.findall(r"rank (\d)/2: envs seeded (\d+\.\.\d+) on cpu", out))
    assert ranks == {"0": "0..15", "1": "16..31"}, out  # one backend per process, its own env seeds
    digests = set(re.findall(r"policy digest (\S+)", out))
    assert len(digests) == 1, out  # gradients averaged over both processes: one policy
    assert "x16 envs x2 processes: 2048 env steps" in out  # 2 iterations x 32 steps x 16 envs x 2
    assert policy.exists() and out.count("policy: ") == 1  # written once, by rank 0
    assert len(list((tmp_path / "run").glob("events.out.tfevents.*"))) == 1  # TensorBoard, rank 0's
    assert_learning_curve(tmp_path / "run")


def assert_learning_curve(run_dir):
    """train.py draws its curve beside metrics.json: a valid PNG of two panels, not a blank image."""
    figure = imageio.imread(run_dir / "learning_curve.png")
    assert figure.ndim == 3 and figure.shape[1] > 2 * figure.shape[0] > 600 and figure.std() > 10


def test_learning_curve_draws_the_terrain_level_of_a_curriculum_run(tmp_path):
    """A run whose episodes log rsl_rl's Curriculum/terrain_level gets a third panel for it."""
    from unienv.utils import plots

    rows = [
        {"env_steps": 100 * i, "mean_return": i, "mean_episode_length": 10 + i, "episode": {}}
        for i in range(20)
    ]
    widths = []
    for name, level in (("plain", None), ("terrain", lambda i: i / 4)):
        if level is not None:
            rows = [{**r, "episode": {plots.TERRAIN_LEVEL: level(i)}} for i, r in enumerate(rows)]
        path = plots.learning_curve(rows, str(tmp_path / f"{name}.png"), name)
        widths.append(imageio.imread(path).shape[1])
    assert widths[1] == widths[0] * 3 // 2  # three panels of the same width as the two


def test_the_curriculum_preset_trains_quadruped_rough_on_its_cpu_settings(tmp_path):
    """train=ppo_quadruped_rough composes (the ppo_quadruped runner, quadruped_rough's task and
    terrain groups, its own overrides) and trains; two tiny iterations here, ten minutes in the README."""
    out = run(
        [
            sys.executable,
            os.path.join(ROOT, "train.py"),
            "train=ppo_quadruped_rough",
            "num_envs=8",
            "train.iterations=2",
            "train.runner.num_steps_per_env=8",
            "train.eval_steps=8",
            f"hydra.run.dir={tmp_path}/run",
        ],
        cwd=tmp_path,
    )
    assert "trained quadruped_rough on mujoco x8 envs x1 processes: 128 env steps" in out, out[-2000:]
    config = (tmp_path / "run" / ".hydra" / "config.yaml").read_text()
    assert "tile_size: 2.0" in config and "scan_resolution: 0.2" in config and "- 0.5" in config


PRESETS = sorted(
    name[:-5] for name in os.listdir(os.path.join(ROOT, "cfg", "train")) if name.endswith(".yaml")
)


@pytest.mark.slow
@pytest.mark.parametrize("preset", PRESETS)
def test_every_documented_preset_trains_through_its_evaluation(preset, tmp_path):
    """Each cfg/train/ preset on the CPU: one tiny iteration (PPO) or a few env steps and updates
    (the off-policy learner), the policy file, then the evaluation of that file (the quadruped's
    prints its velocity-tracking error)."""
    with open(os.path.join(ROOT, "cfg", "train", f"{preset}.yaml")) as f:
        text = f.read()
    offpolicy = "\n  learner:" in text or "\n  - crossq_" in text  # its own learner, or a crossq preset's
    tiny = (
        ["train.loop.env_steps=16", "train.loop.learning_starts=8", "train.loop.batch_size=8"]
        if offpolicy
        else ["train.iterations=1", "train.runner.num_steps_per_env=4"]
    )
    out = run(
        [
            sys.executable,
            os.path.join(ROOT, "train.py"),
            f"train={preset}",
            "num_envs=4",
            "device=null",
            "backend=mujoco",
            *tiny,
            "train.eval_steps=4",
            f"hydra.run.dir={tmp_path}/run",
        ],
        cwd=tmp_path,
    )
    assert "eval: " in out and (tmp_path / "run" / "policy.safetensors").exists(), out[-2000:]
    if preset == "ppo_quadruped":
        assert "eval: tracking error" in out and "duty factor" in out, out[-2000:]
        assert (tmp_path / "run" / "footfalls.png").stat().st_size > 1000  # the gait, plotted
