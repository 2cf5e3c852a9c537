"""Limits and hostile input: 413 for big bodies, 422 naming the field, malformed JSON 422, 429 with
Retry-After, and injection- or traversal-shaped names that stay harmless."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from service_helpers import unique

from resonance_os.api.hr_server import create_app
from resonance_os.api.persistence.tenants import create_tenant
from resonance_os.api.settings import MAX_PROMPT_CHARS, MAX_TEXT_CHARS


def test_body_over_one_megabyte_is_413_by_length_and_when_chunked(client, make_tenant):
    tenant = make_tenant()
    big = b'{"text": "' + b"a" * 1_100_000 + b'"}'
    response = client.post(
        "/v1/analyze", content=big, headers={**tenant.headers, "Content-Type": "application/json"}
    )
    assert response.status_code == 413
    assert response.json()["error"]["type"] == "PayloadTooLarge"

    def chunks():
        for _ in range(12):
            yield b"a" * 100_000

    response = client.post(
        "/v1/analyze", content=chunks(), headers={**tenant.headers, "Content-Type": "application/json"}
    )
    assert response.status_code == 413


@pytest.mark.parametrize(
    "path,body,field",
    [
        ("/v1/analyze", {"text": "a" * (MAX_TEXT_CHARS + 1)}, "text"),
        ("/v1/analyze", {"text": ""}, "text"),
        ("/v1/generate", {"prompt": "p" * (MAX_PROMPT_CHARS + 1)}, "prompt"),
        ("/hr_generate", {"prompt": "", "tenant": "t", "profile_name": "p"}, "prompt"),
        ("/v1/score", {"text": "Hello there.", "target_hrv": [0.5] * 7}, "target_hrv"),
        ("/v1/score", {"text": "Hello there.", "target_hrv": [0.5] * 7 + [1.5]}, "active_voice_ratio"),
        ("/v1/profiles", {"name": "blog", "hrv": [0.5] * 8, "colour": "red"}, "colour"),
        ("/v1/generate", {"prompt": "ok", "paragraphs": 0}, "paragraphs"),
    ],
)
def test_length_and_value_limits_are_422_naming_the_field(client, make_tenant, path, body, field):
    tenant = make_tenant()
    response = client.post(path, json=body, headers=tenant.headers)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["type"] == "RequestValidationError"
    assert field in error["message"]


@pytest.mark.parametrize(
    "raw", [b"{not json", b"", b"[1, 2", b'{"text": "unterminated', b"\xff\xfe\x00", b"null", b"42"]
)
def test_malformed_json_is_422_never_500(client, make_tenant, raw):
    tenant = make_tenant()
    response = client.post(
        "/v1/analyze", content=raw, headers={**tenant.headers, "Content-Type": "application/json"}
    )
    assert response.status_code == 422
    assert set(response.json()["error"]) == {"type", "message"}


def test_rate_limit_is_429_with_retry_after_per_key(db_url):
    # throttle_max_s 0: refusals answered at once, so the bucket cannot refill between these requests
    app = create_app(db_url, rate_limit_per_s=0.5, rate_limit_burst=3, throttle_max_s=0.0)
    a = create_tenant(app.state.service.db, unique("rate-a"))
    b = create_tenant(app.state.service.db, unique("rate-b"))
    with TestClient(app) as client:
        statuses = [
            client.get("/v1/profiles", headers={"Authorization": f"Bearer {a}"}).status_code for _ in range(5)
        ]
        assert statuses[:3] == [200, 200, 200]
        limited = client.get("/v1/profiles", headers={"Authorization": f"Bearer {a}"})
        assert limited.status_code == 429
        assert int(limited.headers["retry-after"]) >= 1
        assert limited.json()["error"]["type"] == "RateLimited"
        assert client.get("/v1/profiles", headers={"Authorization": f"Bearer {b}"}).status_code == 200


def test_broken_json_takes_the_same_allowance_as_any_request(db_url):
    """FastAPI parses the body before the key is checked; broken JSON must not bypass the limits: with
    a good key it counts against the key's rate, without one it is a failed login (then 429)."""
    app = create_app(
        db_url, rate_limit_per_s=0.5, rate_limit_burst=3, failed_auth_per_s=0.01, failed_auth_burst=2
    )
    key = create_tenant(app.state.service.db, unique("broken-json"))
    json_type = {"Content-Type": "application/json"}
    with TestClient(app) as client:
        keyed = [
            client.post(
                "/v1/analyze", content=b"{not json", headers={**json_type, "Authorization": f"Bearer {key}"}
            )
            for _ in range(4)
        ]
        assert [r.status_code for r in keyed] == [422, 422, 422, 429]
        assert "not valid JSON" in keyed[0].json()["error"]["message"]
        assert keyed[3].json()["error"]["type"] == "RateLimited"
        anonymous = [
            client.post("/v1/analyze", content=b"{not", headers=json_type).status_code for _ in range(3)
        ]
        assert anonymous == [401, 401, 429]


HOSTILE_NAMES = [
    "x'; DROP TABLE api_tenants; --",
    "' OR '1'='1",
    "../../etc/passwd",
    "..",
    "a/b",
    "%2e%2e%2fsecret",
    "name\x00null",
    "; rm -rf /",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_injection_and_traversal_shaped_names_are_rejected_harmlessly(
    client, make_tenant, app, name, tmp_path
):
    tenant = make_tenant()
    response = client.post("/v1/profiles", json={"name": name, "hrv": [0.5] * 8}, headers=tenant.headers)
    assert response.status_code == 422
    assert "name" in response.json()["error"]["message"]
    response = client.post(
        "/v1/score", json={"text": "Hello there.", "profile": name}, headers=tenant.headers
    )
    assert response.status_code in (404, 422)
    # the tables are intact and the tenant still works
    assert client.get("/v1/profiles", headers=tenant.headers).status_code == 200
    listed = set(app.state.service.profiles.list_profiles(tenant.name))
    assert listed == set()
    assert not any(tmp_path.parent.glob("**/passwd"))


@pytest.mark.parametrize(
    "path", ["/v1/profiles/..%2F..%2Fetc%2Fpasswd", "/v1/profiles/%27%20OR%201%3D1", "/v1/jobs/..%2Fx"]
)
def test_hostile_path_parameters_are_404_or_422(client, make_tenant, path):
    tenant = make_tenant()
    response = client.get(path, headers=tenant.headers)
    assert response.status_code in (404, 422)
    assert "error" in response.json()
