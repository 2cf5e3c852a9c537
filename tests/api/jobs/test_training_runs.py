"""The writing-policy trainer's run folder (api/jobs/hr_ppo.py): what a job records, what a resumed
attempt reads back from it, and the reward a /v1/train request chooses."""

from __future__ import annotations

import os

import pytest
from fastapi.testclient import TestClient

from resonance_os.api.hr_server import create_app
from resonance_os.api.http.schemas import TrainRequest
from resonance_os.api.jobs import hr_ppo
from resonance_os.api.jobs.report import JobReport
from resonance_os.api.jobs.serving_gate import GATE_ENV
from resonance_os.api.persistence.db import Database
from resonance_os.api.persistence.tenants import create_tenant
from resonance_os.evolution.hr_policy import KIND, load_run
from resonance_os.evolution.hr_rl_trainer import HRWritingEnv, hr_ppo_config
from resonance_os.quality.reward import REWARDS
from resonance_os.rl.algorithms.ppo import PPO
from resonance_os.rl.run import open_run

HRV = [0.4, 0.6, 0.4, 0.6, 0.2, 0.1, 0.4, 0.9]
SMALL = {"n_steps": 64, "batch_size": 32, "n_epochs": 1}
PARAMS = {"target_hrv": HRV, "timesteps": 128, "seed": 0, "reward_model_version": None}


@pytest.fixture
def db(db_url):
    database = Database(db_url)
    database.migrate()
    yield database
    database.dispose()


def full_observation_model(log_dir) -> PPO:
    """64 steps of PPO on the 17-float observation, the default before the signed gap."""
    env = HRWritingEnv(target_hrv=HRV, seed=0, observation="full")
    return PPO("MlpPolicy", env, log_dir=log_dir, **hr_ppo_config(SMALL, seed=0)).learn(64)


def resume(db, work, monkeypatch) -> tuple[list[int], hr_ppo.TrainingResult]:
    monkeypatch.delenv(GATE_ENV, raising=False)
    resumed: list[int] = []
    report = JobReport(db, "no-such-job", 1, work_dir=work)
    report.resumed = resumed.append
    return resumed, hr_ppo.train_profile_policy(dict(PARAMS), report)


def test_an_older_jobs_checkpoint_on_the_full_observation_resumes_under_the_gap_default(
    db, tmp_path, monkeypatch
):
    """A work folder the build before the run seam left (checkpoint/ + logs/), trained on 17 floats:
    the attempt that continues it observes 17 floats too, and the finished run says so."""
    work = tmp_path / "job"
    full_observation_model(work / "logs").save(work / "checkpoint")
    assert HRWritingEnv().observation == "gap"  # today's default
    resumed, result = resume(db, work, monkeypatch)
    assert resumed == [64] and result.metrics["timesteps"] == 128
    assert [row["timesteps"] for row in open_run(work).metrics()] == [64, 128]
    run = open_run(work / "run")
    assert (run.kind, run.task["observation"], run.task["reward"]) == (KIND, "full", "fast")
    model, env = load_run(run.path)
    assert model.observation_space.shape == env.observation_space.shape == (17,)
    assert model.num_timesteps == 128


def test_a_finished_job_run_keeps_its_settings_and_its_observation(db, tmp_path, monkeypatch):
    """A job run of this layout, killed after its first checkpoint on 17 floats: the next attempt
    continues it, and save_run leaves the config the trainer began it with (plus the reward)."""
    work = tmp_path / "job"
    env = HRWritingEnv(target_hrv=HRV, seed=0, observation="full")
    began = {"algorithm": "PPO", "ppo": hr_ppo_config(SMALL, seed=0)}
    run = hr_ppo.job_run(work, KIND, config=began, task=env.settings())
    run.save_checkpoint(full_observation_model(run.path).save)
    resumed, result = resume(db, work, monkeypatch)
    assert resumed == [64] and result.metrics["timesteps"] == 128
    finished = open_run(work / "run")
    assert finished.config["algorithm"] == "PPO" and finished.config["reward"] == "fast"
    assert {k: finished.config["ppo"][k] for k in SMALL} == SMALL
    assert finished.config["ppo"]["policy_kwargs"] == began["ppo"]["policy_kwargs"]
    assert finished.task == env.settings() and finished.task["observation"] == "full"
    assert [row["timesteps"] for row in finished.metrics()] == [64, 128]


def test_a_train_request_chooses_the_writing_reward_by_name(db_url):
    assert TrainRequest.model_fields["reward"].annotation.__args__ == REWARDS
    app = create_app(db_url, launch_workers=False)
    key = create_tenant(app.state.service.db, f"reward-{os.getpid()}")
    headers = {"Authorization": f"Bearer {key}"}
    with TestClient(app) as client:
        default = client.post("/v1/train", json={"target_hrv": HRV}, headers=headers)
        lm = client.post("/v1/train", json={"target_hrv": HRV, "reward": "lm"}, headers=headers)
        bad = client.post("/v1/train", json={"target_hrv": HRV, "reward": "gpt"}, headers=headers)
    assert default.status_code == lm.status_code == 202, (default.text, lm.text)
    assert default.json()["params"]["reward"] == "fast" and lm.json()["params"]["reward"] == "lm"
    assert bad.status_code == 422 and "'fast' or 'lm'" in bad.text
