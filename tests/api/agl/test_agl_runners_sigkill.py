"""Reliability: 8 runner processes share one tenant's queue on a live server; one is killed with SIGKILL
in the middle of a rollout. Its attempt goes unresponsive and the rollout is retried by another runner;
every rollout succeeds, and every span a runner had acknowledged is stored exactly once (counted)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import httpx
import pytest
from live_store import agl_server_fixture  # noqa: F401  (a fixture)

from resonance_os.api.persistence.db import Database
from resonance_os.api.persistence.tenants import create_tenant

RUNNER = Path(__file__).with_name("span_runner.py")
ROLLOUTS = int(os.environ.get("RESONANCE_AGL_RELIABILITY_ROLLOUTS", "48"))
SPANS = 6
CONFIG = {"unresponsive_seconds": 3.0, "max_attempts": 3, "retry_condition": ["unresponsive", "timeout"]}


@pytest.mark.slow
def test_a_runner_killed_mid_rollout_loses_no_span_and_its_rollout_is_retried(
    agl_server, monkeypatch, tmp_path
):
    monkeypatch.setenv("RESONANCE_HOME", str(agl_server.home))
    db = Database(agl_server.db_url)
    key = create_tenant(db, f"reliability-{uuid.uuid4().hex[:8]}")
    db.dispose()
    store = httpx.Client(
        base_url=f"{agl_server.url}/v1/agl", headers={"Authorization": f"Bearer {key}"}, timeout=60
    )
    queued = store.post(
        "/queues/rollouts/enqueue",
        json={"rollouts": [{"input": {"task": i}, "config": CONFIG} for i in range(ROLLOUTS)]},
    ).json()
    assert len(queued) == ROLLOUTS

    records = [tmp_path / f"runner-{i}.txt" for i in range(8)]
    runners = [
        subprocess.Popen(
            [
                sys.executable,
                str(RUNNER),
                agl_server.url,
                key,
                f"runner-{i}",
                "--spans",
                str(SPANS),
                "--record",
                str(records[i]),
            ]
            + (["--hang-after", "3"] if i == 0 else [])
        )
        for i in range(8)
    ]
    try:
        deadline = time.monotonic() + 180
        while not (records[0].exists() and "HANG" in records[0].read_text()):
            assert time.monotonic() < deadline, "runner-0 never reached the middle of its first rollout"
            assert runners[0].poll() is None, "runner-0 exited before it hung"
            time.sleep(0.1)
        runners[0].send_signal(signal.SIGKILL)
        runners[0].wait(timeout=30)
        for runner in runners[1:]:
            assert runner.wait(timeout=600) == 0
    finally:
        for runner in runners:
            if runner.poll() is None:
                runner.kill()

    acknowledged = [
        tuple(line.split()) for path in records for line in path.read_text().splitlines() if line != "HANG"
    ]
    killed_rollout, killed_attempt, _ = next(
        tuple(line.split()) for line in records[0].read_text().splitlines() if line != "HANG"
    )

    rollouts = store.post("/rollouts/search", json={}).json()
    assert rollouts["total"] == ROLLOUTS and {r["status"] for r in rollouts["items"]} == {"succeeded"}
    stored = []
    for rollout in rollouts["items"]:
        rid = rollout["rollout_id"]
        spans = store.post("/spans/search", json={"rollout_id": rid}).json()["items"]
        stored += [(rid, s["attempt_id"], s["span_id"]) for s in spans]
        assert sorted(s["sequence_id"] for s in spans) == list(range(1, len(spans) + 1))
        winner = rollout["attempt"]
        assert winner["status"] == "succeeded"
        assert sum(s["attempt_id"] == winner["attempt_id"] for s in spans) == SPANS

    assert len(stored) == len(set(stored)), "a span was stored twice"
    assert Counter(stored) == Counter(acknowledged), "stored spans differ from the acknowledged ones"
    assert len(stored) == ROLLOUTS * SPANS + 3

    attempts = store.post(f"/rollouts/{killed_rollout}/attempts/search", json={}).json()["items"]
    assert [a["status"] for a in attempts] == ["unresponsive", "succeeded"]
    assert attempts[0]["attempt_id"] == killed_attempt and attempts[1]["worker_id"] != "runner-0"
    assert store.get("/workers/runner-0").json()["status"] == "unknown"
