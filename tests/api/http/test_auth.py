"""Bearer auth: 401 for missing, malformed, unknown and revoked keys; keys stored only as keyed hashes."""

from __future__ import annotations

import logging
import time

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from service_helpers import Tenant, unique

from resonance_os.api.hr_server import create_app
from resonance_os.api.persistence.db import ApiKey
from resonance_os.api.persistence.keys import hash_key
from resonance_os.api.persistence.tenants import create_tenant, revoke_keys, rotate_key
from resonance_os.api.settings import Settings
from resonance_os.core.errors import ValidationError

TEXT = {"text": "We shipped the new release on Monday. Customers loved it!"}


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        "Basic dXNlcjpwYXNz",
        "Token rsk_abc",
        "Bearer two words",
        "Bearer rsk_" + "x" * 43,
        "Bearer ' OR 1=1 --",
    ],
)
def test_missing_malformed_or_unknown_key_is_401(client, make_tenant, header):
    make_tenant()
    headers = {} if header is None else {"Authorization": header}
    response = client.post("/v1/analyze", json=TEXT, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json()["error"]["type"] == "Unauthorized"


def test_health_needs_no_key_and_everything_else_does(client):
    assert client.get("/health").json()["status"] == "ready"
    for method, path in [
        ("POST", "/hr_generate"),
        ("POST", "/v1/generate"),
        ("POST", "/v1/analyze"),
        ("POST", "/v1/score"),
        ("GET", "/v1/profiles"),
        ("POST", "/v1/profiles"),
        ("POST", "/v1/profiles/from-text"),
        ("GET", "/v1/profiles/x"),
        ("PUT", "/v1/profiles/x"),
        ("DELETE", "/v1/profiles/x"),
        ("GET", "/v1/profiles/x/history"),
        ("POST", "/v1/feedback"),
        ("POST", "/v1/reward-model/train"),
        ("GET", "/v1/reward-model"),
        ("POST", "/v1/train"),
        ("GET", "/v1/jobs/abc"),
    ]:
        assert client.request(method, path, json={}).status_code == 401, (method, path)


@pytest.mark.parametrize("auth_cache_s", [0.0, 0.3])
def test_revoked_and_rotated_keys_stop_working_within_the_auth_cache_time(db_url, auth_cache_s):
    app = create_app(db_url, auth_cache_s=auth_cache_s)
    db = app.state.service.db
    name = unique("revoked")
    key = create_tenant(db, name)
    with TestClient(app) as client:
        assert client.post("/v1/analyze", json=TEXT, headers=Tenant(name, key).headers).status_code == 200
        new_key = rotate_key(db, name)
        time.sleep(auth_cache_s)
        assert client.post("/v1/analyze", json=TEXT, headers=Tenant(name, key).headers).status_code == 401
        assert client.post("/v1/analyze", json=TEXT, headers=Tenant(name, new_key).headers).status_code == 200
        assert revoke_keys(db, name) == 1
        time.sleep(auth_cache_s)
        assert client.post("/v1/analyze", json=TEXT, headers=Tenant(name, new_key).headers).status_code == 401


def test_a_cached_key_is_still_refused_for_another_tenants_objects(client, make_tenant):
    owner, other = make_tenant("owner"), make_tenant("other")
    created = client.post("/v1/profiles", json={"name": "house", "hrv": [0.5] * 8}, headers=owner.headers)
    assert created.status_code == 201, created.text
    for _ in range(3):  # the second and third calls authenticate from the cache
        assert client.get("/v1/profiles/house", headers=other.headers).status_code == 404
        assert client.get("/v1/profiles/house", headers=owner.headers).status_code == 200


def test_only_a_keyed_hash_is_stored_and_keys_are_never_logged(client, make_tenant, app, caplog):
    caplog.set_level(logging.DEBUG)
    tenant = make_tenant()
    client.post("/v1/analyze", json=TEXT, headers=tenant.headers)
    client.post("/v1/analyze", json={"text": ""}, headers=tenant.headers)
    db = app.state.service.db
    with db.read() as session:
        rows = session.execute(sa.select(ApiKey.key_hash, ApiKey.prefix)).all()
    stored = " ".join(f"{h} {p}" for h, p in rows)
    assert tenant.key not in stored
    assert hash_key(tenant.key) in stored
    assert tenant.key[12:] not in caplog.text
    if db.is_sqlite:
        raw = db.url.removeprefix("sqlite:///")
        for suffix in ("", "-wal"):
            try:
                data = open(raw + suffix, "rb").read()
            except FileNotFoundError:
                continue
            assert tenant.key.encode() not in data


def test_metrics_count_requests_by_route_template_without_auth(client, make_tenant):
    tenant = make_tenant()
    client.post("/v1/analyze", json=TEXT, headers=tenant.headers)
    client.get("/v1/jobs/" + "f" * 32, headers=tenant.headers)
    text = client.get("/metrics").text
    assert 'resonance_http_requests_total{method="POST",route="/v1/analyze",status="200"}' in text
    assert 'route="/v1/jobs/{job_id}",status="404"' in text
    assert "f" * 32 not in text
    assert (
        'resonance_http_request_duration_seconds_bucket{le="0.05",method="POST",route="/v1/analyze"}' in text
    )
    assert "resonance_jobs" not in text  # job series are the operator's (test_abuse_inputs)


@pytest.mark.parametrize("raw,ok", [("0", True), ("2.5", True), ("-1", False), ("soon", False)])
def test_auth_cache_time_from_the_environment_is_checked(monkeypatch, raw, ok):
    monkeypatch.setenv("RESONANCE_AUTH_CACHE_S", raw)
    if ok:
        assert Settings.from_env().auth_cache_s == float(raw)
    else:
        with pytest.raises(ValidationError, match="RESONANCE_AUTH_CACHE_S"):
            Settings.from_env()
