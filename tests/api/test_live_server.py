"""Against real uvicorn servers on 127.0.0.1: two workers writing at once lose nothing, and killing the
server during a training job leaves the database consistent (the job finishes or is marked failed)."""

from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import sqlalchemy as sa
from conftest import unique

from resonance_os.api.db import Database, Job
from resonance_os.api.jobs import JOB_STATES
from resonance_os.api.tenants import create_tenant

HERE = Path(__file__).parent
HRV = [0.4, 0.6, 0.4, 0.6, 0.2, 0.1, 0.4, 0.9]


def _tenant(db_url: str) -> dict[str, str]:
    db = Database(db_url)
    db.migrate()
    key = create_tenant(db, unique("live"))
    db.dispose()
    return {"Authorization": f"Bearer {key}"}


def test_two_workers_writing_at_once_lose_nothing_and_create_a_name_once(db_url, live_server_factory):
    headers = _tenant(db_url)
    server = live_server_factory(db_url, workers=2)
    with httpx.Client(base_url=server.url, headers=headers, timeout=60) as client:
        assert client.post("/v1/profiles", json={"name": "shared", "hrv": HRV}).status_code == 201

    local = threading.local()

    def write(i: int) -> tuple[int, int]:
        if not hasattr(local, "client"):
            local.client = httpx.Client(base_url=server.url, headers=headers, timeout=60)
        value = round((i % 100) / 100, 2)
        created = local.client.post("/v1/profiles", json={"name": f"p{i}", "hrv": [value] * 8}).status_code
        updated = local.client.put(
            "/v1/profiles/shared", json={"hrv": [value] * 8, "description": f"w{i}"}
        ).status_code
        return created, updated

    n = 40
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(write, range(n)))
    assert results == [(201, 200)] * n
    with httpx.Client(base_url=server.url, headers=headers, timeout=60) as client:
        names = {p["name"] for p in client.get("/v1/profiles").json()["profiles"]}
        history = client.get("/v1/profiles/shared/history").json()["versions"]
        metrics = client.get("/metrics").text
    assert names == {f"p{i}" for i in range(n)} | {"shared"}
    assert [v["version"] for v in history] == list(range(1, n + 2))
    assert sorted(v["description"] for v in history[1:]) == sorted(f"w{i}" for i in range(n))
    # both workers served requests, and the multiprocess metrics add them up
    served = sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("resonance_http_requests_total{")
        and 'route="/v1/profiles"' in line
        and 'method="POST"' in line
    )
    assert served == n + 1

    def create_race(_: int) -> int:
        if not hasattr(local, "client"):
            local.client = httpx.Client(base_url=server.url, headers=headers, timeout=60)
        return local.client.post("/v1/profiles", json={"name": "race", "hrv": HRV}).status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = sorted(pool.map(create_race, range(16)))
    assert statuses == [201] + [409] * 15
    with httpx.Client(base_url=server.url, headers=headers, timeout=60) as client:
        assert len(client.get("/v1/profiles/race/history").json()["versions"]) == 1


def _job_state(db_url: str, job_id: str) -> Job:
    db = Database(db_url)
    with db.read() as session:
        job = session.get(Job, job_id)
    db.dispose()
    return job


def _wait_for(predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("condition not reached in time")


def _consistent(db_url: str) -> None:
    db = Database(db_url)
    with db.engine.connect() as connection:
        if db.is_sqlite:
            assert connection.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
            assert connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall() == []
        states = connection.execute(sa.select(Job.state)).scalars().all()
    db.dispose()
    assert set(states) <= set(JOB_STATES)


def test_killing_the_server_during_a_job_leaves_the_database_consistent(db_url, live_server_factory):
    headers = _tenant(db_url)
    env = {
        "RESONANCE_TRAINERS": "ppo=trainers:count",
        "PYTHONPATH": str(HERE) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "TEST_TRAINER_DELAY": "0.05",
        "RESONANCE_MAX_RUNNING_JOBS_PER_TENANT": "2",
    }
    server = live_server_factory(db_url, env=env)
    with httpx.Client(base_url=server.url, headers=headers, timeout=60) as client:
        survivor = client.post("/v1/train", json={"target_hrv": HRV, "timesteps": 3200}).json()["id"]
        victim = client.post("/v1/train", json={"target_hrv": HRV, "timesteps": 64000}).json()["id"]
    _wait_for(lambda: _job_state(db_url, survivor).progress > 0 and _job_state(db_url, victim).progress > 0)

    server.kill()  # the server dies mid-job; the workers run in their own sessions
    os.kill(_job_state(db_url, victim).pid, signal.SIGKILL)  # and one worker dies with it (a crash)
    _wait_for(lambda: _job_state(db_url, survivor).state == "succeeded")
    _consistent(db_url)

    restarted = live_server_factory(db_url, env=env)
    with httpx.Client(base_url=restarted.url, headers=headers, timeout=60) as client:
        finished = client.get(f"/v1/jobs/{survivor}").json()
        assert finished["state"] == "succeeded" and finished["progress"] == 1.0
        resumed = _wait_for(  # the lost job is queued again at start-up and a new worker takes it
            lambda: (
                (job := client.get(f"/v1/jobs/{victim}").json())["state"] == "running"
                and job["attempts"] == 2
            )
        )
        assert resumed
        assert client.delete(f"/v1/jobs/{victim}").json()["state"] == "cancelled"
        assert client.post("/v1/profiles", json={"name": "after", "hrv": HRV}).status_code == 201
    _consistent(db_url)
