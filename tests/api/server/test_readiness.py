"""Cold start: ``resonance serve`` starts loading its text workers at start-up, says so on ``/health``
(200, ``status: starting``) and ``/health/ready`` (503 with ``Retry-After`` until ready), and remembers
how long a start and a paragraph took, for the next start's estimate and the writing progress."""

from __future__ import annotations

import json
import time

import httpx
from service_helpers import new_tenant

HRV = [0.4, 0.6, 0.4, 0.6, 0.2, 0.1, 0.4, 0.9]


def _until_ready(client: httpx.Client, timeout: float = 120.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = client.get("/health/ready")
        if answer.status_code == 200:
            return answer.json()
        assert answer.status_code == 503 and answer.headers["Retry-After"] == "5"
        assert answer.json()["status"] == "starting"
        time.sleep(0.2)
    raise AssertionError("the text workers did not become ready")


def test_workers_load_at_start_up_and_health_reports_readiness(
    db_url, live_server_factory, tmp_path, monkeypatch
):
    monkeypatch.setenv("RESONANCE_HOME", str(tmp_path))  # the key's pepper and the timings record
    headers = new_tenant(db_url, "ready").headers
    env = {"RESONANCE_TEXT_WORKERS": "1"}
    server = live_server_factory(db_url, env=env)
    with httpx.Client(base_url=server.url, headers=headers, timeout=120) as client:
        first = client.get("/health")
        assert first.status_code == 200  # liveness: the server is up, whatever the workers do
        body = first.json()
        assert body["workers"]["processes"] == 1
        if body["status"] == "starting":  # the worker imports for seconds: nearly always seen
            assert body["workers"]["ready"] is False and body["workers"]["starting_s"] >= 0
            assert body["workers"]["expected_start_s"] is None  # first start here: nothing measured yet
        ready = _until_ready(client)  # no request ever asked for a worker: they started with the server
        assert ready["status"] == "ready" and ready["workers"]["ready_processes"] == 1
        assert ready["workers"]["starting_s"] is None
        start_s = ready["workers"]["expected_start_s"]
        assert start_s > 0 and ready["workers"]["paragraph_s"] >= 0  # from the worker's warm-up

        with client.stream(
            "POST",
            "/v1/generate/stream",
            json={"prompt": "harbour mornings", "target_hrv": HRV, "paragraphs": 2},
        ) as stream:
            assert stream.status_code == 200, stream.read()
            events = [json.loads(line[6:]) for line in stream.iter_lines() if line.startswith("data: ")]
        assert [e["paragraph"] for e in events[:-1]] == [1, 2]
        assert all(e["expected_s"] is not None and e["expected_s"] >= 0 for e in events[:-1])
        assert events[-1]["article"]
    server.stop()

    record = json.loads((tmp_path / "text-workers.json").read_text())
    assert record["start_s"] == start_s or abs(record["start_s"] - start_s) < 0.1

    again = live_server_factory(db_url, env=env)  # the next start estimates from the last one
    with httpx.Client(base_url=again.url, timeout=120) as client:
        assert client.get("/health").json()["workers"]["expected_start_s"] is not None
        _until_ready(client)


def test_without_worker_processes_health_is_ready_at_once(client):
    body = client.get("/health/ready")
    assert body.status_code == 200
    assert body.json()["status"] == "ready" and body.json()["workers"]["processes"] == 0
