"""One tenant cannot flood the training workers: jobs run within limits and queue, a full queue answers
429, a tenant can cancel its own jobs, finished workers are reaped, work folders go, and a killed
worker's job resumes from its PPO checkpoint."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from service_helpers import Tenant, trainers_pythonpath, unique

from resonance_os.api.hr_server import create_app
from resonance_os.api.persistence.db import Database, Job
from resonance_os.api.persistence.tenants import create_tenant
from resonance_os.profiles.schema import Tenant as TenantRow

HRV = [0.4, 0.6, 0.4, 0.6, 0.2, 0.1, 0.4, 0.9]
FINAL = ("succeeded", "failed", "cancelled")


@pytest.fixture
def limited_app(db_url, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", trainers_pythonpath())
    return create_app(
        db_url,
        trainers={"ppo": "trainers:count"},
        rate_limit_per_s=1000.0,
        rate_limit_burst=1000.0,
        max_running_jobs=2,
        max_running_jobs_per_tenant=1,
        max_queued_jobs_per_tenant=3,
    )


def _tenant(app, prefix: str) -> Tenant:
    name = unique(prefix)
    return Tenant(name, create_tenant(app.state.service.db, name))


def _train(client, tenant: Tenant, timesteps: int = 640, seed: int = 0):
    return client.post(
        "/v1/train", json={"target_hrv": HRV, "timesteps": timesteps, "seed": seed}, headers=tenant.headers
    )


def _states(db: Database, tenant_ids: list[int]) -> list[tuple[int, str]]:
    """(tenant id, state) of these tenants' jobs (a shared test database holds other tests' jobs too)."""
    with db.read() as session:
        return [
            (row.tenant_id, row.state) for row in session.query(Job).filter(Job.tenant_id.in_(tenant_ids))
        ]


def _lingering(pids: list[int]) -> list[int]:
    """Those of ``pids`` that still exist: running, or exited but never reaped (zombies)."""
    return [pid for pid in pids if Path(f"/proc/{pid}").exists()]


def test_a_flood_of_jobs_queues_within_limits_and_a_full_queue_answers_429(limited_app, tmp_path):
    flooder, other = _tenant(limited_app, "flood"), _tenant(limited_app, "other")
    db = limited_app.state.service.db
    with db.write() as session:  # a shared test database keeps earlier tests' unfinished jobs: end them
        session.execute(
            sa.update(Job).where(Job.state.in_(("queued", "starting", "running"))).values(state="cancelled")
        )
    with TestClient(limited_app) as client:
        answers = [_train(client, flooder) for _ in range(6)]
        assert [a.status_code for a in answers] == [202, 202, 202, 202, 429, 429]
        assert [a.json()["state"] for a in answers[:4]] == ["starting", "queued", "queued", "queued"]
        refusal = answers[4].json()["error"]
        assert refusal["type"] == "JobQueueFullError"
        assert "3 training jobs waiting" in refusal["message"]
        assert "RESONANCE_MAX_QUEUED_JOBS_PER_TENANT" in refusal["message"]
        late = _train(client, other)  # another tenant is not stuck behind the flood
        assert late.status_code == 202 and late.json()["state"] == "starting"

        with db.read() as session:
            flooder_id = session.query(TenantRow).filter_by(name=flooder.name).one().id
            ids = [flooder_id, session.query(TenantRow).filter_by(name=other.name).one().id]
        most_active, most_active_flooder = 0, 0
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            states = _states(db, ids)
            active = [t for t, s in states if s in ("starting", "running")]
            most_active = max(most_active, len(active))
            most_active_flooder = max(most_active_flooder, active.count(flooder_id))
            if all(s in FINAL for _, s in states):
                break
            time.sleep(0.02)
        assert [s for _, s in _states(db, ids)] == ["succeeded"] * 5
        assert most_active == 2 and most_active_flooder == 1
        runner = limited_app.state.job_runner
        deadline = time.monotonic() + 30
        while runner.children:  # the last worker exits soon after writing its outcome
            assert time.monotonic() < deadline, "a worker process never exited"
            time.sleep(0.1)
            runner.tick()
        with db.read() as session:
            workers = [pid for pid in session.scalars(sa.select(Job.pid).where(Job.tenant_id.in_(ids)))]
        assert len(workers) == 5 and _lingering(workers) == []  # every worker exited and was reaped
        assert not any(p.is_dir() for p in (Path(os.environ["RESONANCE_HOME"]) / "jobs").iterdir())


def test_a_tenant_cancels_its_queued_and_running_jobs_but_not_anothers(limited_app, monkeypatch):
    monkeypatch.setenv("TEST_TRAINER_DELAY", "0.2")
    owner, other = _tenant(limited_app, "owner"), _tenant(limited_app, "other")
    db = limited_app.state.service.db
    with TestClient(limited_app) as client:
        running = _train(client, owner, timesteps=64 * 200).json()
        queued = _train(client, owner).json()
        assert queued["state"] == "queued"

        assert client.delete(f"/v1/jobs/{running['id']}", headers=other.headers).status_code == 404
        assert client.post(f"/v1/jobs/{queued['id']}/cancel", headers=other.headers).status_code == 404

        cancelled = client.post(f"/v1/jobs/{queued['id']}/cancel", headers=owner.headers)
        assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"

        deadline = time.monotonic() + 60
        while client.get(f"/v1/jobs/{running['id']}", headers=owner.headers).json()["progress"] == 0:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        with db.read() as session:
            pid = session.get(Job, running["id"]).pid
        stopped = client.delete(f"/v1/jobs/{running['id']}", headers=owner.headers)
        assert stopped.status_code == 200 and stopped.json()["state"] == "cancelled"
        deadline = time.monotonic() + 30
        while Path(f"/proc/{pid}").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z":
            assert time.monotonic() < deadline, "the cancelled job's worker is still running"
            time.sleep(0.05)
        time.sleep(1.5)  # a runner tick later the job is still cancelled, never restarted
        for job in (running, queued):
            after = client.get(f"/v1/jobs/{job['id']}", headers=owner.headers).json()
            assert after["state"] == "cancelled" and after["error"] == "cancelled by the tenant"
        assert client.get(f"/v1/jobs/{queued['id']}", headers=owner.headers).json()["attempts"] == 0
        assert client.delete(f"/v1/jobs/{running['id']}", headers=owner.headers).status_code == 200

        done = _train(client, owner, timesteps=64).json()
        deadline = time.monotonic() + 60
        while client.get(f"/v1/jobs/{done['id']}", headers=owner.headers).json()["state"] != "succeeded":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        finished = client.delete(f"/v1/jobs/{done['id']}", headers=owner.headers)
        assert finished.status_code == 409 and "already succeeded" in finished.json()["error"]["message"]


def test_a_killed_worker_resumes_from_its_ppo_checkpoint_after_a_restart(db_url, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", trainers_pythonpath())
    monkeypatch.setenv("TEST_STEP_DELAY", "0.003")
    settings = {"trainers": {"ppo": "trainers:cartpole_ppo"}, "checkpoint_every": 2}
    first = create_app(db_url, **settings)
    db = first.state.service.db
    tenant = _tenant(first, "resume")
    total = 64 * 12

    def row() -> Job:
        with db.read() as session:
            return session.get(Job, job["id"])

    with TestClient(first) as client:
        job = _train(client, tenant, timesteps=total, seed=3).json()
        deadline = time.monotonic() + 120
        while (row().checkpoint_timesteps or 0) < 64 * 4:
            assert time.monotonic() < deadline, row().state
            time.sleep(0.05)
        killed = row()
        os.kill(killed.pid, signal.SIGKILL)  # the worker dies mid-run; the service goes down with it
    saved = row().checkpoint_timesteps
    assert killed.state == "running" and 0 < saved < total

    second = create_app(db_url, **settings)
    with TestClient(second) as client:  # start-up queues the job again; the runner relaunches it
        deadline = time.monotonic() + 180
        while (done := client.get(f"/v1/jobs/{job['id']}", headers=tenant.headers).json())[
            "state"
        ] not in FINAL:
            assert time.monotonic() < deadline, done
            time.sleep(0.1)
    assert done["state"] == "succeeded", done
    assert done["attempts"] == 2
    assert done["resumed_from"] == saved  # the second worker started from the checkpoint, not from 0
    assert done["metrics"]["timesteps"] == total
    assert not (Path(os.environ["RESONANCE_HOME"]) / "jobs" / job["id"]).exists()
