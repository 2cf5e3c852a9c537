"""``POST /v1/reward-model/train`` is a job (kind ``reward_model``): the fit runs in a job worker process,
never in the request, within the job limits of each tenant; each stored version counts against the
tenant's storage quota; what cannot be trained or stored is refused before a job is queued, or fails
the job naming the quota, with nothing stored."""

from __future__ import annotations

import os
import subprocess
import sys

import sqlalchemy as sa
from fastapi.testclient import TestClient
from service_helpers import Tenant, train_reward_model, unique

from resonance_os.api.hr_server import create_app
from resonance_os.api.persistence.db import Job, RewardModelVersion
from resonance_os.api.persistence.feedback import version_bytes
from resonance_os.api.persistence.quotas import usage
from resonance_os.api.persistence.tenants import create_tenant
from resonance_os.profiles.schema import Tenant as TenantRow

TEXTS = [
    "The harbour was quiet at dawn and the boats rocked on grey water.",
    "Our quarterly revenue grew by twelve percent across all regions.",
    "I can't believe it! We actually won the final, after all those years!",
    "Install the package, then run the tests with a single command.",
    "She remembered the smell of her grandmother's kitchen in winter.",
    "The committee will review every proposal before the deadline.",
    "Wow, what a view from the top of the hill this morning.",
    "Memory safety bugs account for most severe vulnerabilities.",
    "He laughed, dropped the keys, and ran back into the rain.",
    "Please submit your expense reports by Friday afternoon.",
    "Tiny lanterns floated down the river as the music began.",
    "The algorithm runs in linear time on sorted input.",
]


def _tenant(app, prefix: str = "rm") -> tuple[Tenant, int]:
    name = unique(prefix)
    key = create_tenant(app.state.service.db, name)
    with app.state.service.db.read() as session:
        tenant_id = session.scalar(sa.select(TenantRow.id).where(TenantRow.name == name))
    return Tenant(name, key), tenant_id


def _rate(client, tenant: Tenant, n: int) -> None:
    for i in range(n):
        body = {"kind": "rating", "item": {"text": TEXTS[i % len(TEXTS)]}, "rating": 1 + i % 5}
        assert client.post("/v1/feedback", json=body, headers=tenant.headers).status_code == 201


def _jobs(app, tenant_id: int) -> list[Job]:
    with app.state.service.db.read() as session:
        return session.scalars(sa.select(Job).where(Job.tenant_id == tenant_id)).all()


def test_the_fit_runs_as_a_job_in_a_worker_and_its_version_is_counted_in_storage(client, app):
    tenant, tenant_id = _tenant(app)
    _rate(client, tenant, 12)
    db, quota = app.state.service.db, app.state.service.quota
    before = usage(db, tenant_id, quota)

    model = train_reward_model(client, tenant.headers, seed=0, holdout_fraction=0.25)
    assert model["version"] == 1 and model["metrics"]["ratings"] == 12

    [job] = _jobs(app, tenant_id)
    assert job.kind == "reward_model" and job.state == "succeeded"
    assert job.pid is not None and job.pid != os.getpid()  # a worker process fitted it, not the server
    assert job.params == {"holdout_fraction": 0.25, "seed": 0}
    with db.read() as session:
        stored = session.scalar(
            sa.select(RewardModelVersion).where(RewardModelVersion.tenant_id == tenant_id)
        )
    after = usage(db, tenant_id, quota)
    assert after["rows"] == before["rows"] + 1
    assert after["bytes"] == before["bytes"] + version_bytes(stored.params, stored.weights)

    listed = client.get("/v1/jobs?kind=reward_model", headers=tenant.headers).json()["jobs"]
    assert [j["id"] for j in listed] == [job.id]
    assert client.get("/v1/jobs?kind=ppo", headers=tenant.headers).json()["jobs"] == []
    # a reward-model job is no policy to write with
    refused = client.post("/v1/generate", json={"prompt": "tea", "policy": job.id}, headers=tenant.headers)
    assert refused.status_code == 422 and "not a policy" in refused.json()["error"]["message"]


def test_too_little_feedback_or_no_room_to_store_a_version_is_refused_before_a_job_is_queued(db_url):
    app = create_app(db_url, quota_rows=20, launch_workers=False)
    with TestClient(app) as client:
        tenant, tenant_id = _tenant(app)
        _rate(client, tenant, 9)
        few = client.post("/v1/reward-model/train", json={}, headers=tenant.headers)
        assert few.status_code == 422 and "at least 10" in few.json()["error"]["message"]
        _rate(client, tenant, 1)  # 10 ratings: 20 rows with their items, the whole quota
        full = client.post("/v1/reward-model/train", json={}, headers=tenant.headers)
        assert full.status_code == 507 and "RESONANCE_QUOTA_ROWS" in full.json()["error"]["message"]
        assert _jobs(app, tenant_id) == []


def test_a_tenants_reward_model_jobs_wait_in_its_job_queue_and_a_full_queue_is_429(db_url):
    app = create_app(db_url, max_queued_jobs_per_tenant=2, launch_workers=False)
    with TestClient(app) as client:
        tenant, _ = _tenant(app)
        _rate(client, tenant, 10)
        answers = [client.post("/v1/reward-model/train", json={}, headers=tenant.headers) for _ in range(3)]
        assert [a.status_code for a in answers] == [202, 202, 429]
        assert answers[2].json()["error"]["type"] == "JobQueueFullError"
        other, _ = _tenant(app, "other")  # another tenant's queue is its own
        _rate(client, other, 10)
        assert client.post("/v1/reward-model/train", json={}, headers=other.headers).status_code == 202


def test_a_version_that_no_longer_fits_the_quota_fails_its_job_and_stores_nothing(db_url, resonance_home):
    app = create_app(db_url, quota_rows=21, launch_workers=False)
    with TestClient(app) as client:
        tenant, tenant_id = _tenant(app)
        _rate(client, tenant, 10)  # 20 rows: room for one more at submission
        job_id = client.post("/v1/reward-model/train", json={}, headers=tenant.headers).json()["id"]
        hrv = [0.5] * 8
        assert (
            client.post("/v1/profiles", json={"name": "last", "hrv": hrv}, headers=tenant.headers).status_code
            == 201
        )
        with app.state.service.db.write() as session:  # what the job runner does before it launches
            session.execute(sa.update(Job).where(Job.id == job_id).values(state="starting"))
        env = {**os.environ, "RESONANCE_DB": db_url, "RESONANCE_QUOTA_ROWS": "21"}
        worker = subprocess.run(
            [sys.executable, "-m", "resonance_os.api.jobs.worker", job_id],
            env=env,
            capture_output=True,
            timeout=300,
        )
        assert worker.returncode == 1, worker.stderr.decode()
        job = client.get(f"/v1/jobs/{job_id}", headers=tenant.headers).json()
        assert job["state"] == "failed" and "StorageQuotaError" in job["error"]
        assert "RESONANCE_QUOTA_ROWS" in job["error"]
        assert client.get("/v1/reward-model", headers=tenant.headers).status_code == 404
        assert usage(app.state.service.db, tenant_id, app.state.service.quota)["rows"] == 21
