"""GET /v1/jobs (the tenant's own jobs, newest first, by state) and GET /v1/jobs/{id}/metrics (the learning
curve, one point per PPO update) against a real uvicorn server running real PPO jobs."""

from __future__ import annotations

import time

import httpx
import pytest
from service_helpers import trainers_pythonpath, unique

from resonance_os.api.jobs.report import curve_points
from resonance_os.api.persistence.db import Database
from resonance_os.api.persistence.tenants import create_tenant


def _keys(db_url: str, *prefixes: str) -> list[str]:
    db = Database(db_url)
    db.migrate()
    keys = [create_tenant(db, unique(prefix)) for prefix in prefixes]
    db.dispose()
    return keys


def _wait(client: httpx.Client, job_id: str, headers: dict, timeout: float = 180.0) -> dict:
    deadline = time.monotonic() + timeout
    while (job := client.get(f"/v1/jobs/{job_id}", headers=headers).json())["state"] in (
        "queued",
        "starting",
        "running",
    ):
        assert time.monotonic() < deadline, job
        time.sleep(0.2)
    return job


@pytest.fixture
def server(db_url, live_server_factory):
    env = {
        "PYTHONPATH": trainers_pythonpath(),
        "RESONANCE_TRAINERS": "ppo=trainers:cartpole_ppo",
        "TEST_STEP_DELAY": "0",
    }
    return live_server_factory(db_url, env=env)


def test_jobs_list_their_state_and_learning_curve_per_tenant(server, db_url):
    owner_key, other_key = _keys(db_url, "owner", "other")
    owner, other = ({"Authorization": f"Bearer {key}"} for key in (owner_key, other_key))
    body = {"target_hrv": [0.5] * 8, "timesteps": 64 * 3, "seed": 1}
    with httpx.Client(base_url=server.url, timeout=30) as client:
        trained = client.post("/v1/train", json=body, headers=owner).json()
        done = _wait(client, trained["id"], owner)
        assert done["state"] == "succeeded", done
        cancelled = client.post("/v1/train", json={**body, "timesteps": 64 * 1000}, headers=owner).json()
        assert client.delete(f"/v1/jobs/{cancelled['id']}", headers=owner).status_code == 200

        listed = client.get("/v1/jobs", headers=owner).json()["jobs"]
        assert [(j["id"], j["state"]) for j in listed] == [
            (cancelled["id"], "cancelled"),
            (trained["id"], "succeeded"),
        ]
        only = client.get("/v1/jobs", params={"state": "succeeded"}, headers=owner).json()["jobs"]
        assert [j["id"] for j in only] == [trained["id"]]
        both = client.get("/v1/jobs", params=[("state", "succeeded"), ("state", "cancelled")], headers=owner)
        assert len(both.json()["jobs"]) == 2
        assert [j["id"] for j in client.get("/v1/jobs?limit=1", headers=owner).json()["jobs"]] == [
            cancelled["id"]
        ]

        curve = client.get(f"/v1/jobs/{trained['id']}/metrics", headers=owner).json()
        assert (curve["id"], curve["state"], curve["progress"]) == (trained["id"], "succeeded", 1.0)
        assert [p["timesteps"] for p in curve["points"]] == [64.0, 128.0, 192.0]  # one point per update
        assert all({"episode_reward_mean", "loss", "approx_kl"} <= set(p) for p in curve["points"])
        assert done["metrics"]["timesteps"] == curve["points"][-1]["timesteps"]

        assert client.get("/v1/jobs", headers=other).json() == {"jobs": []}  # tenants see only theirs
        assert client.get(f"/v1/jobs/{trained['id']}/metrics", headers=other).status_code == 404
        bad = client.get("/v1/jobs", params={"state": "done"}, headers=owner)
        assert bad.status_code == 422 and "state" in bad.json()["error"]["message"]
        assert client.get("/v1/jobs?limit=0", headers=owner).status_code == 422
        assert client.get("/v1/jobs").status_code == 401
        assert client.get(f"/v1/jobs/{trained['id']}/metrics").status_code == 401
        paths = client.get("/openapi.json").json()["paths"]
        assert "get" in paths["/v1/jobs"] and "get" in paths["/v1/jobs/{job_id}/metrics"]


def test_a_long_curve_is_thinned_evenly_keeping_both_ends():
    rows = [
        {"timesteps": 64 * (i + 1), "episode_reward_mean": i / 2, "note": "x", "done": True}
        for i in range(1200)
    ]
    points = curve_points(rows, limit=500)
    assert len(points) == 500
    assert points[0] == {"timesteps": 64.0, "episode_reward_mean": 0.0}  # numbers only
    assert points[-1]["timesteps"] == 64.0 * 1200
    steps = [p["timesteps"] for p in points]
    assert steps == sorted(steps) and max(b - a for a, b in zip(steps, steps[1:])) <= 64 * 3
    assert curve_points(rows[:10]) == curve_points(rows[:10], limit=500)
