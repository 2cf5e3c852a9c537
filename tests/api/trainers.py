"""Trainers for job-machinery tests (imported by the worker process through PYTHONPATH): a stand-in
that counts slowly, reporting progress, and real PPO on CartPole that checkpoints and resumes."""

from __future__ import annotations

import os
import time

import gymnasium as gym

from resonance_os.api.jobs.report import JobReport, TrainingResult
from resonance_os.core.errors import ValidationError


def count(params: dict, report: JobReport) -> TrainingResult:
    steps = int(params["timesteps"]) // 64
    delay = float(os.environ.get("TEST_TRAINER_DELAY", "0.02"))
    for step in range(1, steps + 1):
        time.sleep(delay)
        report.progress(step / steps, {"steps": step}, force=True)
    if params.get("seed") == 13:
        raise ValidationError("seed 13 is unlucky; pick another seed")
    return TrainingResult(
        metrics={"steps": steps, "pid": os.getpid(), "nice": os.nice(0)}, artifact=b"weights"
    )


class _Slow(gym.Wrapper):
    """Sleeps ``TEST_STEP_DELAY`` seconds per step, so a test can kill the worker mid-run."""

    def step(self, action):
        time.sleep(float(os.environ.get("TEST_STEP_DELAY", "0.002")))
        return self.env.step(action)


def cartpole_ppo(params: dict, report: JobReport) -> TrainingResult:
    """Real PPO on CartPole through the service's checkpoint/resume path (``learn_resumable``)."""
    from resonance_os.api.jobs.hr_ppo import learn_resumable

    env = _Slow(gym.make("CartPole-v1"))
    config = {"n_steps": 64, "batch_size": 32, "n_epochs": 2, "seed": int(params["seed"])}
    model = learn_resumable(env, config, int(params["timesteps"]), report)
    return TrainingResult(metrics={"timesteps": model.num_timesteps}, artifact=b"weights")
