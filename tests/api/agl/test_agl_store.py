"""The rollout store's REST API at Agent Lightning 0.3.0's paths and shapes: queue, attempts, status
propagation, retries, the watchdog, spans (sequence ids, duplicates), resources, workers, tenants."""

from __future__ import annotations

import time

import pytest

import resonance_os.api.agl.store as store_module

RETRY = {"max_attempts": 2, "retry_condition": ["failed", "unresponsive", "timeout"]}


def _span(rollout_id: str, attempt_id: str, span_id: str, sequence_id: int = 0, name: str = "work") -> dict:
    return {
        "rollout_id": rollout_id,
        "attempt_id": attempt_id,
        "sequence_id": sequence_id,
        "trace_id": "ab" * 16,
        "span_id": span_id,
        "parent_id": None,
        "name": name,
        "status": {"status_code": "OK", "description": None},
        "attributes": {"prompt_token_ids": [1, 2], "custom.note": "kept"},
        "events": [],
        "links": [],
        "start_time": 1.0,
        "end_time": 2.0,
        "context": {"trace_id": "ab" * 16, "span_id": span_id, "is_remote": False, "trace_state": {}},
        "parent": None,
        "resource": {"attributes": {}, "schema_url": ""},
        "extra_field": {"kept": True},
    }


@pytest.fixture
def agl(client, make_tenant):
    tenant = make_tenant("agl")

    def call(method: str, path: str, expect: int = 200, **kwargs):
        response = client.request(method, f"/v1/agl{path}", headers=tenant.headers, **kwargs)
        assert response.status_code == expect, response.text
        return response.json()

    call.tenant = tenant
    return call


@pytest.fixture(autouse=True)
def scan_every_call(monkeypatch):
    monkeypatch.setattr(store_module, "SCAN_EVERY_S", 0.0)


def test_enqueued_rollouts_are_dequeued_once_each_in_order(agl):
    queued = agl(
        "POST", "/queues/rollouts/enqueue", 201, json={"rollouts": [{"input": {"i": i}} for i in range(3)]}
    )
    assert [r["status"] for r in queued] == ["queuing"] * 3
    first = agl("POST", "/queues/rollouts/dequeue", json={"limit": 2, "worker_id": "w1"})
    second = agl("POST", "/queues/rollouts/dequeue", json={"limit": 5, "worker_id": "w2"})
    assert [r["input"]["i"] for r in first] == [0, 1] and [r["input"]["i"] for r in second] == [2]
    assert agl("POST", "/queues/rollouts/dequeue", json={"worker_id": "w3"}) == []
    attempt = first[0]["attempt"]
    assert attempt["sequence_id"] == 1 and attempt["status"] == "preparing" and attempt["worker_id"] == "w1"
    assert attempt["attempt_id"].startswith("at-") and first[0]["rollout_id"].startswith("ro-")
    assert agl("GET", "/workers/w3")["status"] == "idle"
    assert agl("GET", "/workers/w2")["current_rollout_id"] == second[0]["rollout_id"]


def test_the_first_span_runs_the_attempt_and_success_ends_the_rollout(agl):
    ro = agl("POST", "/rollouts", 201, json={"input": "task", "mode": "train"})
    rid, aid = ro["rollout_id"], ro["attempt"]["attempt_id"]
    assert ro["status"] == "preparing"
    stored = agl("POST", "/spans", 201, json=_span(rid, aid, "1" * 16, sequence_id=5))
    assert stored["extra_field"] == {"kept": True}
    assert agl("GET", f"/rollouts/{rid}")["status"] == "running"
    attempt = agl("GET", f"/rollouts/{rid}/attempts/latest")
    assert attempt["status"] == "running" and attempt["last_heartbeat_time"] is not None
    done = agl("POST", f"/rollouts/{rid}/attempts/{aid}", json={"status": "succeeded"})
    assert done["status"] == "succeeded" and done["end_time"] is not None
    rollout = agl("GET", f"/rollouts/{rid}")
    assert rollout["status"] == "succeeded" and rollout["end_time"] is not None
    assert agl("POST", "/waits/rollouts", json={"rollout_ids": [rid], "timeout": 0.1})[0]["rollout_id"] == rid


def test_sequence_ids_increase_and_a_span_sent_twice_is_stored_once(agl):
    ro = agl("POST", "/rollouts", 201, json={"input": None})
    rid, aid = ro["rollout_id"], ro["attempt"]["attempt_id"]
    assert agl("POST", "/spans/next", json={"rollout_id": rid, "attempt_id": aid}) == {"sequence_id": 1}
    agl("POST", "/spans", 201, json=_span(rid, aid, "a" * 16, sequence_id=7))
    assert agl("POST", "/spans/next", json={"rollout_id": rid, "attempt_id": aid}) == {"sequence_id": 8}
    assert agl("POST", "/spans", 201, json=_span(rid, aid, "a" * 16, sequence_id=9)) is None  # duplicate
    page = agl("POST", "/spans/search", json={"rollout_id": rid})
    assert page["total"] == 1 and page["items"][0]["sequence_id"] == 7
    assert page["items"][0]["attributes"] == {"prompt_token_ids": [1, 2], "custom.note": "kept"}
    assert agl("GET", "/spans", params={"rollout_id": rid, "attempt_id": "latest"})["total"] == 1


def test_span_search_filters_sorts_and_pages(agl):
    ro = agl("POST", "/rollouts", 201, json={"input": None})
    rid, aid = ro["rollout_id"], ro["attempt"]["attempt_id"]
    for i, name in enumerate(
        ["openai.chat.completion", "agentlightning.annotation", "openai.chat.completion"]
    ):
        agl("POST", "/spans", 201, json=_span(rid, aid, f"{i:016x}", sequence_id=i + 1, name=name))
    calls = agl("POST", "/spans/search", json={"rollout_id": rid, "name_contains": "openai"})
    assert [s["sequence_id"] for s in calls["items"]] == [1, 3] and calls["total"] == 2
    desc = agl(
        "POST", "/spans/search", json={"rollout_id": rid, "sort_order": "desc", "limit": 2, "offset": 1}
    )
    assert [s["sequence_id"] for s in desc["items"]] == [2, 1] and desc["total"] == 3
    either = agl(
        "POST",
        "/spans/search",
        json={
            "rollout_id": rid,
            "span_id": "0" * 16,
            "name": "agentlightning.annotation",
            "filter_logic": "or",
        },
    )
    assert either["total"] == 2
    bad = agl("POST", "/spans/search", 400, json={"rollout_id": rid, "sort_by": "attributes"})
    assert "allowed fields" in bad["error"]["message"]
    agl("POST", "/spans/search", 400, json={"rollout_id": rid, "limit": 0})


def test_a_failed_attempt_is_retried_then_the_rollout_fails(agl):
    rid = agl("POST", "/queues/rollouts/enqueue", 201, json={"rollouts": [{"input": 1, "config": RETRY}]})[0][
        "rollout_id"
    ]
    first = agl("POST", "/queues/rollouts/dequeue", json={"worker_id": "w"})[0]["attempt"]
    agl("POST", f"/rollouts/{rid}/attempts/{first['attempt_id']}", json={"status": "failed"})
    assert agl("GET", f"/rollouts/{rid}")["status"] == "requeuing"
    second = agl("POST", "/queues/rollouts/dequeue", json={"worker_id": "w"})[0]
    assert second["rollout_id"] == rid and second["attempt"]["sequence_id"] == 2
    agl("POST", f"/rollouts/{rid}/attempts/latest", json={"status": "failed"})
    assert agl("GET", f"/rollouts/{rid}")["status"] == "failed"
    assert agl("POST", "/queues/rollouts/dequeue", json={}) == []
    attempts = agl("POST", f"/rollouts/{rid}/attempts/search", json={})
    assert [a["status"] for a in attempts["items"]] == ["failed", "failed"]


def test_a_silent_attempt_becomes_unresponsive_and_is_requeued(agl):
    config = {**RETRY, "unresponsive_seconds": 0.2}
    rid = agl("POST", "/queues/rollouts/enqueue", 201, json={"rollouts": [{"input": 1, "config": config}]})[
        0
    ]["rollout_id"]
    stale = agl("POST", "/queues/rollouts/dequeue", json={"worker_id": "dead"})[0]["attempt"]
    time.sleep(0.3)
    retry = agl("POST", "/queues/rollouts/dequeue", json={"worker_id": "alive"})
    assert [r["rollout_id"] for r in retry] == [rid] and retry[0]["attempt"]["sequence_id"] == 2
    old = agl("POST", f"/rollouts/{rid}/attempts/search", json={})["items"][0]
    assert old["attempt_id"] == stale["attempt_id"] and old["status"] == "unresponsive"
    assert agl("GET", "/workers/dead")["status"] == "unknown"


def test_an_attempt_past_its_timeout_times_out(agl):
    config = {"timeout_seconds": 0.2, "max_attempts": 1, "retry_condition": ["timeout"]}
    ro = agl("POST", "/rollouts", 201, json={"input": 1, "config": config})
    time.sleep(0.3)
    rollout = agl("GET", f"/rollouts/{ro['rollout_id']}")
    assert rollout["status"] == "failed" and rollout["attempt"]["status"] == "timeout"


def test_rollouts_search_and_update(agl):
    ids = [
        r["rollout_id"]
        for r in agl(
            "POST", "/queues/rollouts/enqueue", 201, json={"rollouts": [{"input": i} for i in range(4)]}
        )
    ]
    agl("POST", f"/rollouts/{ids[0]}", json={"status": "cancelled", "metadata": {"why": "test"}})
    cancelled = agl("POST", "/rollouts/search", json={"status_in": ["cancelled"]})
    assert [r["rollout_id"] for r in cancelled["items"]] == [ids[0]] and cancelled["items"][0][
        "metadata"
    ] == {"why": "test"}
    page = agl("GET", "/rollouts", params={"limit": 2, "offset": 1, "sort_by": "start_time"})
    assert page["total"] == 4 and [r["rollout_id"] for r in page["items"]] == ids[1:3]
    assert [r["input"] for r in agl("POST", "/queues/rollouts/dequeue", json={"limit": 10})] == [1, 2, 3]
    agl("POST", f"/rollouts/{ids[1]}", 400, json={"status": None})
    assert agl("GET", "/rollouts/ro-missing") is None


def test_resources_are_versioned_and_the_latest_is_served(agl):
    llm = {
        "main_llm": {
            "resource_type": "llm",
            "endpoint": "http://127.0.0.1:1/v1",
            "model": "m",
            "sampling_parameters": {},
        }
    }
    first = agl("POST", "/resources", 201, json=llm)
    assert first["version"] == 1 and first["resources_id"].startswith("rs-")
    updated = agl(
        "POST",
        f"/resources/{first['resources_id']}",
        json={**llm, "prompt": {"resource_type": "prompt_template", "template": "{q}", "engine": "f-string"}},
    )
    assert updated["version"] == 2
    assert agl("GET", "/resources/latest")["resources"]["prompt"]["template"] == "{q}"
    assert agl("GET", "/resources")["total"] == 1
    rollout = agl("POST", "/queues/rollouts/enqueue", 201, json={"rollouts": [{"input": 1}]})[0]
    assert rollout["resources_id"] == first["resources_id"]
    agl("POST", "/resources", 422, json={"x": {"resource_type": "gpu"}})


def test_worker_heartbeats_are_kept(agl):
    worker = agl("POST", "/workers/runner-1", json={"heartbeat_stats": {"cpu": 0.5}})
    assert worker["heartbeat_stats"] == {"cpu": 0.5} and worker["last_heartbeat_time"] is not None
    assert agl("POST", "/workers/search", json={"worker_id_contains": "runner"})["total"] == 1
    assert agl("GET", "/workers/nobody") is None


def test_one_tenant_cannot_see_or_touch_anothers_store(client, agl, make_tenant):
    ro = agl("POST", "/rollouts", 201, json={"input": "secret"})
    rid, aid = ro["rollout_id"], ro["attempt"]["attempt_id"]
    agl("POST", "/spans", 201, json=_span(rid, aid, "c" * 16, 1))
    other = make_tenant("intruder").headers
    assert client.get(f"/v1/agl/rollouts/{rid}", headers=other).json() is None
    assert client.post("/v1/agl/spans/search", json={"rollout_id": rid}, headers=other).json()["total"] == 0
    assert (
        client.post(
            f"/v1/agl/rollouts/{rid}/attempts/{aid}", json={"status": "failed"}, headers=other
        ).status_code
        == 404
    )
    assert client.post("/v1/agl/spans", json=_span(rid, aid, "d" * 16, 2), headers=other).status_code == 404
    assert client.post("/v1/agl/queues/rollouts/dequeue", json={}, headers=other).json() == []
    assert client.get("/v1/agl/statistics", headers=other).json()["total_spans"] == 0
    assert client.get("/v1/agl/health").status_code == 401


def test_store_urls_are_created_used_and_revoked(client, agl):
    tenant = agl.tenant
    made = client.post("/v1/agl-store-urls", headers=tenant.headers)
    assert made.status_code == 201
    path = made.json()["url"].removeprefix("http://testserver")
    ro = client.post(f"{path}/v1/agl/rollouts", json={"input": 1})
    assert ro.status_code == 201
    assert agl("GET", f"/rollouts/{ro.json()['rollout_id']}")["input"] == 1  # the same tenant's store
    listed = client.get("/v1/agl-store-urls", headers=tenant.headers).json()["store_urls"]
    assert [u["prefix"] for u in listed] == [made.json()["prefix"]] and listed[0]["revoked_at"] is None
    assert client.delete(f"/v1/agl-store-urls/{made.json()['prefix']}", headers=tenant.headers).json() == {
        "revoked": 1
    }
    time.sleep(1.1)  # the auth cache's lifetime
    refused = client.get(f"{path}/v1/agl/health")
    assert refused.status_code == 401 and "revoked" in refused.json()["error"]["message"]


def test_storage_quota_refuses_with_507_and_stores_nothing(db_url):
    from fastapi.testclient import TestClient

    from resonance_os.api.hr_server import create_app
    from resonance_os.api.persistence.tenants import create_tenant

    app = create_app(db_url, quota_rows=5, rate_limit_per_s=1000.0, rate_limit_burst=1000.0)
    key = create_tenant(app.state.service.db, "quota-agl")
    headers = {"Authorization": f"Bearer {key}"}
    with TestClient(app) as client:
        ro = client.post("/v1/agl/rollouts", json={"input": 1}, headers=headers).json()  # 2 rows
        rid, aid = ro["rollout_id"], ro["attempt"]["attempt_id"]
        for i in range(3):
            assert (
                client.post(
                    "/v1/agl/spans", json=_span(rid, aid, f"{i:016x}", i + 1), headers=headers
                ).status_code
                == 201
            )
        refused = client.post("/v1/agl/spans", json=_span(rid, aid, "f" * 16, 9), headers=headers)
        assert refused.status_code == 507 and "quota" in refused.json()["error"]["message"]
        many = client.post(
            "/v1/agl/queues/rollouts/enqueue", json={"rollouts": [{"input": 1}]}, headers=headers
        )
        assert many.status_code == 507
        assert (
            client.post("/v1/agl/spans/search", json={"rollout_id": rid}, headers=headers).json()["total"]
            == 3
        )


def test_bad_query_strings_are_400s_naming_the_field(agl):
    ro = agl("POST", "/rollouts", 201, json={"input": 1})
    assert "sort_order" in agl("GET", "/rollouts", 400, params={"sort_order": "sideways"})["error"]["message"]
    agl("GET", f"/rollouts/{ro['rollout_id']}/attempts", 400, params={"sort_order": "up"})
    agl("GET", "/workers", 400, params={"filter_logic": "xor"})
    agl("GET", "/spans", 400, params={"rollout_id": ro["rollout_id"], "limit": -5})
    agl("GET", "/rollouts", 422, params={"status_in": "flying"})


def test_a_recount_of_the_tenants_storage_counts_the_store_rows(client, agl):
    import sqlalchemy as sa

    from resonance_os.api.persistence.db import Usage
    from resonance_os.api.persistence.quotas import StorageQuota, usage
    from resonance_os.profiles.schema import Tenant

    ro = agl("POST", "/rollouts", 201, json={"input": {"q": "x" * 500}, "worker_id": "w"})
    for i in range(3):
        agl(
            "POST",
            "/spans",
            201,
            json=_span(ro["rollout_id"], ro["attempt"]["attempt_id"], f"{i:016x}", i + 1),
        )
    agl(
        "POST",
        "/resources",
        201,
        json={"p": {"resource_type": "prompt_template", "template": "{q}", "engine": "f-string"}},
    )
    db = client.app.state.service.db
    with db.read() as session:
        tenant_id = session.scalar(sa.select(Tenant.id).where(Tenant.name == agl.tenant.name))
    charged = usage(db, tenant_id, StorageQuota())
    with db.write() as session:  # as in a database made before the usage row existed
        session.execute(sa.delete(Usage).where(Usage.tenant_id == tenant_id))
    recounted = usage(db, tenant_id, StorageQuota())
    assert charged["rows"] == recounted["rows"] == 7  # rollout, attempt, 3 spans, resources, worker
    assert recounted["bytes"] == pytest.approx(charged["bytes"], rel=0.1) and recounted["bytes"] > 500
