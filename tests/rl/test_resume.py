"""rl/resume.py: a trainer checkpointed into its run as it learns, and continued by the next attempt
after the first one died, in the run folder of today and in an API job's work folder of before."""

from __future__ import annotations

import gymnasium as gym
import pytest

from resonance_os.rl.algorithms.ppo import PPO
from resonance_os.rl.errors import ConfigError
from resonance_os.rl.resume import ResumeHooks, learn_resumable
from resonance_os.rl.run import Run, open_run

CONFIG = {"n_steps": 32, "batch_size": 16, "n_epochs": 1, "seed": 0}


class Killed(Exception):
    """Stands for the worker being killed mid-run."""


class DiesAfter(gym.Wrapper):
    """CartPole whose ``die_after``-th step raises: the worker killed mid-rollout."""

    def __init__(self, env: gym.Env, die_after: int | None) -> None:
        super().__init__(env)
        self.steps, self.die_after = 0, die_after

    def step(self, action):
        self.steps += 1
        if self.die_after is not None and self.steps >= self.die_after:
            raise Killed
        return self.env.step(action)


def attempt(run: Run, total: int, hooks: ResumeHooks, die_after: int | None = None) -> PPO:
    env = DiesAfter(gym.make("CartPole-v1"), die_after)
    log_dir = run.metrics_path.parent
    return learn_resumable(
        run,
        total,
        build=lambda: PPO("MlpPolicy", env, log_dir=log_dir, **CONFIG),
        load=lambda path: PPO.load(path, env=env, log_dir=log_dir),
        hooks=hooks,
    )


def test_a_killed_attempt_is_continued_from_its_last_checkpoint(tmp_path):
    run = Run.create(tmp_path / "run", "cartpole", config={"ppo": CONFIG})
    events: list[tuple[str, int]] = []
    progress: list[tuple[float, int, bool]] = []
    hooks = ResumeHooks(
        checkpoint_every=2,
        resumed=lambda t: events.append(("resumed", t)),
        checkpointed=lambda t: events.append(("checkpointed", t)),
        progress=lambda fraction, rows, final: progress.append((fraction, len(rows), final)),
        poll_s=0.01,
    )
    with pytest.raises(Killed):
        attempt(run, 256, hooks, die_after=160)
    assert events == [("checkpointed", 64), ("checkpointed", 128)]
    model = attempt(open_run(run.path), 256, hooks)
    assert model.num_timesteps == 256
    assert events[2:] == [("resumed", 128), ("checkpointed", 192)]  # every 2 updates again, none at the end
    assert progress[-1] == (1.0, len(open_run(run.path).metrics()), True)
    timesteps = [row["timesteps"] for row in open_run(run.path).metrics()]
    assert timesteps[-4:] == [160, 192, 224, 256]  # the new attempt appends to the run's log


def test_an_api_job_work_folder_of_before_is_continued_in_place(tmp_path):
    old = PPO("MlpPolicy", gym.make("CartPole-v1"), log_dir=tmp_path / "logs", **CONFIG).learn(64)
    old.save(tmp_path / "checkpoint")  # as api/jobs/hr_ppo.py left a killed job's work folder
    run = open_run(tmp_path)
    assert run.layout == "job"
    resumed: list[int] = []
    model = attempt(run, 128, ResumeHooks(resumed=resumed.append))
    assert resumed == [64] and model.num_timesteps == 128
    assert [row["timesteps"] for row in run.metrics()] == [32, 64, 96, 128]


def test_a_total_that_is_not_a_positive_whole_number_is_refused(tmp_path):
    run = Run.create(tmp_path / "run", "cartpole")
    with pytest.raises(ConfigError, match="total=0"):
        learn_resumable(run, 0, build=lambda: None, load=lambda path: None)
