"""A real PPO training job through the API (HRWritingEnv + train_hr_ppo in a worker process), and
generation steered by its policy."""

from __future__ import annotations

import os
import signal
import time

import pytest
from fastapi.testclient import TestClient

from resonance_os.api.hr_server import create_app
from resonance_os.api.persistence.db import Job

HRV = [0.4, 0.6, 0.4, 0.6, 0.2, 0.1, 0.4, 0.9]


@pytest.mark.slow
def test_train_job_produces_a_policy_that_generate_can_use(client, make_tenant):
    owner, other = make_tenant("owner"), make_tenant("other")
    job = client.post(
        "/v1/train", json={"target_hrv": HRV, "timesteps": 64, "seed": 1}, headers=owner.headers
    )
    assert job.status_code == 202
    job_id = job.json()["id"]
    early = client.post("/v1/generate", json={"prompt": "tea", "policy": job_id}, headers=owner.headers)
    assert early.status_code in (200, 409)  # 409 while the job is still queued or running
    deadline = time.monotonic() + 300
    state = job.json()
    while state["state"] in ("queued", "starting", "running") and time.monotonic() < deadline:
        time.sleep(0.5)
        state = client.get(f"/v1/jobs/{job_id}", headers=owner.headers).json()
    assert state["state"] == "succeeded", state
    assert state["progress"] == 1.0
    assert {"episode_reward_mean", "loss", "explained_variance", "timesteps"} <= set(state["metrics"])

    body = {"prompt": "city gardens", "policy": job_id, "paragraphs": 2, "seed": 3}
    steered = client.post("/v1/generate", json=body, headers=owner.headers)
    assert steered.status_code == 200, steered.text
    data = steered.json()
    assert data["policy"] == job_id and len(data["paragraphs"]) == 2
    assert [data["target_hrv"][k] for k in data["target_hrv"]] == HRV
    assert client.post("/v1/generate", json=body, headers=owner.headers).json()["article"] == data["article"]
    assert client.post("/v1/generate", json=body, headers=other.headers).status_code == 404


@pytest.mark.slow
def test_a_killed_hr_training_job_resumes_from_its_checkpoint(db_url, make_tenant_for):
    settings = {"rate_limit_per_s": 1000.0, "rate_limit_burst": 1000.0, "checkpoint_every": 1}
    first = create_app(db_url, **settings)
    owner = make_tenant_for(first, "owner")
    db = first.state.service.db
    total = 3 * 2048  # three PPO updates of the spec's n_steps
    with TestClient(first) as client:
        job = client.post(
            "/v1/train", json={"target_hrv": HRV, "timesteps": total, "seed": 2}, headers=owner.headers
        ).json()
        deadline = time.monotonic() + 600
        while (row := _row(db, job["id"])).checkpoint_timesteps is None:
            assert time.monotonic() < deadline and row.state in ("starting", "running"), row.error
            time.sleep(0.2)
        os.kill(row.pid, signal.SIGKILL)
    saved = _row(db, job["id"]).checkpoint_timesteps
    assert saved == 2048

    with TestClient(create_app(db_url, **settings)) as client:
        deadline = time.monotonic() + 600
        while (state := client.get(f"/v1/jobs/{job['id']}", headers=owner.headers).json())["state"] in (
            "queued",
            "starting",
            "running",
        ):
            assert time.monotonic() < deadline
            time.sleep(0.5)
    assert state["state"] == "succeeded", state
    assert state["attempts"] == 2 and state["resumed_from"] == saved
    assert state["metrics"]["timesteps"] == total


def _row(db, job_id: str) -> Job:
    with db.read() as session:
        return session.get(Job, job_id)
