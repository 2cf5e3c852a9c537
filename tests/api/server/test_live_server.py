"""Against real uvicorn servers on 127.0.0.1: two workers writing at once lose nothing, and ``kill -9``
of the server during training jobs takes its text and job workers with it, leaves the database
consistent and loses no job (the next server resumes them)."""

from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import sqlalchemy as sa
from service_helpers import trainers_pythonpath, unique

from resonance_os.api.jobs.processes import pid_alive
from resonance_os.api.jobs.queue import JOB_STATES
from resonance_os.api.persistence.db import Database, Job
from resonance_os.api.persistence.tenants import create_tenant

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


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children, ...), from /proc."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def test_kill_9_of_the_server_takes_its_workers_with_it_and_loses_no_job(own_db_url, live_server_factory):
    """``kill -9`` of the server process alone (not its group): its text worker and both job workers
    exit within seconds (no orphan holding memory or training), each job is queued again by its
    worker, and the next server runs them to the end. Its own database: its server runs every queued
    job, and one another test left queued in a shared database would take the slots counted on."""
    db_url = own_db_url
    headers = _tenant(db_url)
    env = {
        "RESONANCE_TRAINERS": "ppo=trainers:count",
        "PYTHONPATH": trainers_pythonpath(),
        "TEST_TRAINER_DELAY": "0.05",
        "RESONANCE_MAX_RUNNING_JOBS_PER_TENANT": "2",
        "RESONANCE_TEXT_WORKERS": "1",
    }
    server = live_server_factory(db_url, env=env)
    with httpx.Client(base_url=server.url, headers=headers, timeout=120) as client:
        scored = client.post("/v1/score", json={"text": "A text for the text worker.", "target_hrv": HRV})
        assert scored.status_code == 200  # the text worker has started
        short = client.post("/v1/train", json={"target_hrv": HRV, "timesteps": 3200}).json()["id"]
        long = client.post("/v1/train", json={"target_hrv": HRV, "timesteps": 64000}).json()["id"]
    _wait_for(lambda: _job_state(db_url, short).progress > 0 and _job_state(db_url, long).progress > 0)
    workers = _descendants(server.process.pid)
    job_pids = {_job_state(db_url, short).pid, _job_state(db_url, long).pid}
    assert job_pids <= set(workers) and len(workers) >= 3  # and the text worker

    os.kill(server.process.pid, signal.SIGKILL)
    server.process.wait(timeout=30)
    _wait_for(lambda: not [pid for pid in workers if pid_alive(pid)], timeout=15)
    assert [_job_state(db_url, job).state for job in (short, long)] == ["queued", "queued"]
    _consistent(db_url)

    restarted = live_server_factory(db_url, env=env)
    with httpx.Client(base_url=restarted.url, headers=headers, timeout=60) as client:
        finished = _wait_for(
            lambda: (job := client.get(f"/v1/jobs/{short}").json())["state"] == "succeeded" and job
        )
        assert finished["progress"] == 1.0 and finished["attempts"] == 2
        assert _wait_for(
            lambda: (
                (job := client.get(f"/v1/jobs/{long}").json())["state"] == "running" and job["attempts"] == 2
            )
        )
        assert client.delete(f"/v1/jobs/{long}").json()["state"] == "cancelled"
        assert client.post("/v1/profiles", json={"name": "after", "hrv": HRV}).status_code == 201
    _consistent(db_url)


def test_kill_9_of_the_supervisor_of_several_server_processes_leaves_none_behind(db_url, live_server_factory):
    headers = _tenant(db_url)
    server = live_server_factory(db_url, workers=2, env={"RESONANCE_TEXT_WORKERS": "1"})
    with httpx.Client(base_url=server.url, headers=headers, timeout=120) as client:
        for _ in range(4):  # with luck both server processes start their text worker; one is enough
            assert client.post("/v1/score", json={"text": "Some text.", "target_hrv": HRV}).status_code == 200
    below = _descendants(server.process.pid)
    assert len(below) >= 3  # two server processes and at least one text worker
    os.kill(server.process.pid, signal.SIGKILL)
    server.process.wait(timeout=30)
    _wait_for(lambda: not [pid for pid in below if pid_alive(pid)], timeout=30)
