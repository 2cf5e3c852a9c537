"""Tenant isolation: every route scopes to the key's tenant; another tenant's objects are 404."""

from __future__ import annotations

import pytest

from resonance_os.api.jobs import queue

HRV = [0.4, 0.6, 0.4, 0.6, 0.2, 0.1, 0.4, 0.9]
TEXT = "The team shipped the release on Monday. Why did customers love it? It felt like a gift."


@pytest.fixture
def two_tenants(client, make_tenant):
    a, b = make_tenant("alpha"), make_tenant("beta")
    assert (
        client.post("/v1/profiles", json={"name": "voice", "hrv": HRV}, headers=a.headers).status_code == 201
    )
    return a, b


def test_profiles_are_invisible_across_tenants(client, two_tenants):
    a, b = two_tenants
    assert [p["name"] for p in client.get("/v1/profiles", headers=a.headers).json()["profiles"]] == ["voice"]
    assert client.get("/v1/profiles", headers=b.headers).json()["profiles"] == []
    for method, path, body in [
        ("GET", "/v1/profiles/voice", None),
        ("GET", "/v1/profiles/voice/history", None),
        ("PUT", "/v1/profiles/voice", {"hrv": HRV}),
        ("DELETE", "/v1/profiles/voice", None),
    ]:
        response = client.request(method, path, json=body, headers=b.headers)
        assert response.status_code == 404, (method, path)
        assert a.name not in response.text
    assert (
        client.post("/v1/score", json={"text": TEXT, "profile": "voice"}, headers=b.headers).status_code
        == 404
    )
    body = {"prompt": "coffee", "tenant": a.name, "profile_name": "voice"}
    assert client.post("/hr_generate", json=body, headers=b.headers).status_code == 404
    assert client.post("/v1/train", json={"profile": "voice"}, headers=b.headers).status_code == 404
    # B creating its own "voice" does not touch A's
    assert (
        client.post("/v1/profiles", json={"name": "voice", "hrv": [0.5] * 8}, headers=b.headers).status_code
        == 201
    )
    assert client.get("/v1/profiles/voice", headers=a.headers).json()["hrv"]["curiosity_index"] == 0.2


def test_items_feedback_and_reward_models_are_invisible_across_tenants(client, two_tenants):
    a, b = two_tenants
    rated = client.post(
        "/v1/feedback",
        json={"kind": "rating", "item": {"text": TEXT}, "rating": 4, "profile": "voice"},
        headers=a.headers,
    )
    assert rated.status_code == 201
    item_id = rated.json()["item_ids"][0]
    response = client.post(
        "/v1/feedback", json={"kind": "rating", "item": {"id": item_id}, "rating": 1}, headers=b.headers
    )
    assert response.status_code == 404
    response = client.post(
        "/v1/feedback",
        json={"kind": "preference", "item": {"text": TEXT}, "other": {"id": item_id}, "preferred": "a"},
        headers=b.headers,
    )
    assert response.status_code == 404
    assert client.get("/v1/reward-model", headers=b.headers).status_code == 404
    assert (
        client.post("/v1/reward-model/train", json={}, headers=b.headers).status_code == 422
    )  # B has no feedback


def test_jobs_are_invisible_across_tenants(client, two_tenants, app):
    a, b = two_tenants
    tenant_a = app.state.service.db
    with tenant_a.read() as session:
        from resonance_os.profiles.schema import Tenant

        a_id = session.query(Tenant.id).filter(Tenant.name == a.name).scalar()
    job = queue.submit(tenant_a, a_id, "ppo", "trainers:count", {"timesteps": 64})
    assert client.get(f"/v1/jobs/{job.id}", headers=a.headers).status_code == 200
    response = client.get(f"/v1/jobs/{job.id}", headers=b.headers)
    assert response.status_code == 404
    assert (
        client.post(
            "/v1/generate", json={"prompt": "coffee", "policy": job.id}, headers=b.headers
        ).status_code
        == 404
    )
