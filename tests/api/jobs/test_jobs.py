"""Training jobs run in a separate worker process, report progress, and are never silently lost."""

from __future__ import annotations

import os
import signal
import time

import pytest
from fastapi.testclient import TestClient
from service_helpers import trainers_pythonpath

from resonance_os.api.hr_server import create_app
from resonance_os.api.jobs import queue
from resonance_os.api.persistence.db import Job
from resonance_os.profiles.schema import Tenant, utcnow

HRV = [0.4, 0.6, 0.4, 0.6, 0.2, 0.1, 0.4, 0.9]


METRICS_TOKEN = "operator-scrape-token"


@pytest.fixture
def job_app(db_url, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", trainers_pythonpath())
    return create_app(
        db_url,
        trainers={"ppo": "trainers:count"},
        rate_limit_per_s=1000.0,
        rate_limit_burst=1000.0,
        metrics_token=METRICS_TOKEN,
    )


def _wait(client, job_id, headers, until, timeout=60.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get(f"/v1/jobs/{job_id}", headers=headers).json()
        if until(job):
            return job
        time.sleep(0.05)
    raise AssertionError(f"job never reached the expected state: {job}")


def test_job_runs_in_a_worker_process_with_progress_and_metrics(job_app, make_tenant_for, monkeypatch):
    monkeypatch.setenv("TEST_TRAINER_DELAY", "0.1")  # 1 s of progress reports: a busy machine's polls see one
    tenant = make_tenant_for(job_app)
    with TestClient(job_app) as client:
        started = client.post("/v1/train", json={"target_hrv": HRV, "timesteps": 640}, headers=tenant.headers)
        assert started.status_code == 202
        job = started.json()
        assert job["state"] == "starting" and job["params"]["target_hrv"] == HRV  # a slot was free
        running = _wait(
            client, job["id"], tenant.headers, lambda j: j["state"] == "running" and j["progress"] > 0
        )
        assert 0 < running["progress"] < 1
        done = _wait(client, job["id"], tenant.headers, lambda j: j["state"] in ("succeeded", "failed"))
        assert done["state"] == "succeeded", done
        assert done["progress"] == 1.0
        assert done["metrics"]["steps"] == 10
        assert done["metrics"]["pid"] != os.getpid()
        # training takes only the CPU that request handling leaves
        assert done["metrics"]["nice"] == 19
        operator = {"Authorization": f"Bearer {METRICS_TOKEN}"}
        assert 'resonance_jobs{state="succeeded"}' in client.get("/metrics", headers=operator).text


def test_trainer_errors_fail_the_job_with_the_message(job_app, make_tenant_for):
    tenant = make_tenant_for(job_app)
    with TestClient(job_app) as client:
        job = client.post(
            "/v1/train", json={"target_hrv": HRV, "timesteps": 64, "seed": 13}, headers=tenant.headers
        ).json()
        done = _wait(client, job["id"], tenant.headers, lambda j: j["state"] in ("succeeded", "failed"))
        assert done["state"] == "failed"
        assert "seed 13 is unlucky" in done["error"]


def test_killed_worker_is_replaced_until_attempts_run_out_never_lost(job_app, make_tenant_for, monkeypatch):
    monkeypatch.setenv("TEST_TRAINER_DELAY", "0.5")
    tenant = make_tenant_for(job_app)
    with TestClient(job_app) as client:
        job = client.post(
            "/v1/train", json={"target_hrv": HRV, "timesteps": 6400}, headers=tenant.headers
        ).json()
        for attempt in range(1, queue.MAX_ATTEMPTS + 1):
            running = _wait(
                client,
                job["id"],
                tenant.headers,
                lambda j, attempt=attempt: j["state"] == "running" and j["attempts"] == attempt,
            )
            with job_app.state.service.db.read() as session:
                pid = session.get(Job, job["id"]).pid
            os.kill(pid, signal.SIGKILL)
            assert running["state"] == "running"
        failed = _wait(client, job["id"], tenant.headers, lambda j: j["state"] == "failed")
        assert "stopped before the job finished" in failed["error"]
        assert f"each of {queue.MAX_ATTEMPTS} attempts" in failed["error"]


def test_restart_recovery_requeues_orphaned_running_jobs_and_starts_queued_ones(db_url, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", trainers_pythonpath())
    first = create_app(db_url, trainers={"ppo": "trainers:count"}, launch_workers=False)
    db = first.state.service.db
    with db.write() as session:
        tenant = Tenant(name=f"recover-{os.getpid()}-{time.monotonic_ns()}")
        session.add(tenant)
        session.flush()
        tenant_id = tenant.id
    orphan = queue.submit(db, tenant_id, "ppo", "trainers:count", {"timesteps": 64})
    queued = queue.submit(db, tenant_id, "ppo", "trainers:count", {"timesteps": 64})
    with db.write() as session:
        row = session.get(Job, orphan.id)
        row.state, row.pid, row.host, row.started_at, row.heartbeat_at, row.attempts = (
            "running",
            2**22 + 7,
            os.uname().nodename,
            utcnow(),
            utcnow(),
            1,
        )
    second = create_app(db_url, trainers={"ppo": "trainers:count"})
    with TestClient(second):  # start-up runs recovery, then the runner starts both, one at a time
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with db.read() as session:
                states = {session.get(Job, j.id).state for j in (orphan, queued)}
            if states == {"succeeded"}:
                break
            time.sleep(0.1)
        with db.read() as session:
            assert session.get(Job, orphan.id).state == "succeeded"
            assert session.get(Job, orphan.id).attempts == 2
            assert session.get(Job, queued.id).state == "succeeded"
