"""api/jobs/trainers.py: API jobs name their trainer; the worker finds it in a plain registry."""

from __future__ import annotations

import os.path

import pytest

from resonance_os.api.jobs import hr_ppo
from resonance_os.api.jobs.hr_ppo import TrainingUnavailableError
from resonance_os.api.jobs.trainers import TRAINERS, check_available, lookup
from resonance_os.api.persistence import feedback
from resonance_os.api.settings import Settings
from resonance_os.core.errors import ValidationError


def test_the_built_in_trainers_are_found_by_name_and_by_the_spec_older_jobs_stored():
    assert lookup("hr_ppo") is hr_ppo.train_profile_policy
    assert lookup("reward_model") is feedback.fit_reward_model
    assert lookup("resonance_os.api.training:train_profile_policy") is hr_ppo.train_profile_policy
    assert lookup("resonance_os.api.feedback:fit_reward_model") is feedback.fit_reward_model
    assert Settings().trainers == {"ppo": "hr_ppo"} and Settings().trainers["ppo"] in TRAINERS
    check_available("hr_ppo")  # the training stack is installed here


def test_unknown_trainers_are_503s_naming_what_there_is():
    with pytest.raises(
        TrainingUnavailableError, match="no trainer named 'dqn'; this server has hr_ppo, reward_model"
    ):
        lookup("dqn")
    assert TrainingUnavailableError.http_status == 503
    with pytest.raises(TrainingUnavailableError, match="cannot be imported"):
        check_available("no_such_package.trainers:train")
    with pytest.raises(TrainingUnavailableError, match="'os.path:nope' does not exist"):
        lookup("os.path:nope")
    assert lookup("os.path:join") is os.path.join  # a trainer from outside the package


def test_resonance_trainers_names_a_trainer_per_kind(monkeypatch):
    monkeypatch.setenv("RESONANCE_TRAINERS", "ppo=hr_ppo, reward_model=trainers:count")
    assert Settings.from_env().trainers == {"ppo": "hr_ppo", "reward_model": "trainers:count"}
    monkeypatch.setenv("RESONANCE_TRAINERS", "ppo=")
    with pytest.raises(ValidationError, match="must look like kind=trainer"):
        Settings.from_env()


def test_a_job_trains_in_its_run_folder_and_an_older_work_folder_resumes_in_place(db_url, tmp_path):
    import gymnasium as gym

    from resonance_os.api.jobs.report import JobReport
    from resonance_os.api.persistence.db import Database
    from resonance_os.rl.algorithms.ppo import PPO
    from resonance_os.rl.run import open_run

    config = {"n_steps": 64, "batch_size": 32, "n_epochs": 1, "seed": 0}
    db = Database(db_url)
    db.migrate()
    try:
        fresh = JobReport(db, "no-such-job", 1, work_dir=tmp_path / "new")
        hr_ppo.learn_resumable(gym.make("CartPole-v1"), config, 64, fresh, pause=lambda *a: None)
        run = open_run(tmp_path / "new" / "run")
        assert (run.kind, run.layout, run.config["ppo"]) == ("ppo", "run", config)
        assert [row["timesteps"] for row in run.metrics()] == [64]

        work = tmp_path / "old"  # as the job worker left a killed job's folder before the run seam
        PPO("MlpPolicy", gym.make("CartPole-v1"), log_dir=work / "logs", **config).learn(64).save(
            work / "checkpoint"
        )
        resumed: list[int] = []
        report = JobReport(db, "no-such-job", 1, work_dir=work)
        report.resumed = resumed.append
        model = hr_ppo.learn_resumable(gym.make("CartPole-v1"), config, 128, report, pause=lambda *a: None)
    finally:
        db.dispose()
    assert resumed == [64] and model.num_timesteps == 128 and not (work / "run").exists()
    assert [row["timesteps"] for row in open_run(work).metrics()] == [64, 128]


def test_a_train_request_is_queued_as_the_whole_ppo_updates_it_trains(db_url):
    """No "5,000 asked, 6,144 trained" behind the user's back: the job says what it will train."""
    from fastapi.testclient import TestClient

    from resonance_os.api.hr_server import create_app
    from resonance_os.api.jobs.trainers import whole_updates
    from resonance_os.api.persistence.tenants import create_tenant

    assert hr_ppo.PPO_UPDATE_STEPS == 2048
    assert [whole_updates("hr_ppo", t) for t in (64, 2048, 5000, 6144)] == [2048, 2048, 6144, 6144]
    assert whole_updates("os.path:join", 5000) == 5000  # a trainer that declares no update size
    app = create_app(db_url, launch_workers=False)
    key = create_tenant(app.state.service.db, f"rounding-{os.getpid()}")
    with TestClient(app) as client:
        body = {"target_hrv": [0.5] * 8, "timesteps": 5000, "seed": 1}
        job = client.post("/v1/train", json=body, headers={"Authorization": f"Bearer {key}"})
    assert job.status_code == 202, job.text
    assert job.json()["params"]["timesteps"] == 6144
