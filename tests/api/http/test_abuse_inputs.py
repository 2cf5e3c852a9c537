"""Hostile input gets a clear 4xx, never a 500 or a stall: NUL bytes (PostgreSQL cannot store them),
prompts that Unicode normalisation inflates, loose ratings, self-preferences, deep or huge JSON,
database errors that would quote tenant text, the database file's mode, what /metrics shows without a
key, and a request over its time budget. Runs on SQLite, and on PostgreSQL under make test-postgres."""

from __future__ import annotations

import logging
import os
import stat

import pytest
import sqlalchemy as sa

from resonance_os.api.hr_server import create_app
from resonance_os.api.persistence.db import Database, Item

TEXT = "The harbour was quiet at dawn. Boats rocked gently while the gulls argued over scraps."
NUL = "bad\x00value"


def _error(response, status: int, *fragments: str) -> str:
    assert response.status_code == status, response.text
    message = response.json()["error"]["message"]
    for fragment in fragments:
        assert fragment in message, message
    return message


def _item_count(app, tenant_name: str) -> int:
    from resonance_os.profiles.schema import Tenant

    with app.state.service.db.read() as session:
        return session.scalar(
            sa.select(sa.func.count())
            .select_from(Item)
            .join(Tenant, Tenant.id == Item.tenant_id)
            .where(Tenant.name == tenant_name)
        )


def test_nul_anywhere_in_a_request_is_a_422_that_names_the_field(client, make_tenant, app):
    tenant = make_tenant()
    h = tenant.headers
    item_id = client.post(
        "/v1/generate", json={"prompt": "tidal harbours", "paragraphs": 1}, headers=h
    ).json()["id"]
    probes = [
        ("post", "/v1/generate", {"prompt": NUL}, "prompt"),
        ("post", "/hr_generate", {"prompt": NUL}, "prompt"),
        ("post", "/v1/analyze", {"text": NUL}, "text"),
        ("post", "/v1/profiles", {"name": "p1", "hrv": [0.5] * 8, "description": NUL}, "description"),
        ("post", "/v1/profiles", {"name": NUL, "hrv": [0.5] * 8}, "name"),
        ("post", "/v1/feedback", {"kind": "rating", "item": {"text": NUL}, "rating": 4}, "item.text"),
        ("post", "/v1/feedback", {"kind": "rating", "item": {"id": NUL}, "rating": 4}, "item.id"),
        (
            "post",
            "/v1/feedback",
            {
                "kind": "preference",
                "item": {"id": item_id},
                "other": {"text": TEXT},
                "preferred": "a",
                "prompt": NUL,
            },
            "prompt",
        ),
        ("post", "/v1/train", {"profile": NUL}, "profile"),
        ("post", "/v1/generate", {"prompt": "ok", "policy": NUL}, "policy"),
    ]
    for method, path, body, field in probes:
        _error(getattr(client, method)(path, json=body, headers=h), 422, field, "NUL")
    for path in ("/v1/profiles/a%00b", "/v1/jobs/%00", "/v1/profiles/a%00b/history", "/v1/profiles?x=%00"):
        _error(client.get(path, headers=h), 422, "NUL")
    _error(client.delete("/v1/profiles/a%00b", headers=h), 422, "NUL")
    assert _item_count(app, tenant.name) == 1


def test_a_prompt_inflated_by_unicode_normalisation_is_refused_before_any_work(client, make_tenant):
    tenant = make_tenant()
    inflated = {"prompt": "\ufdf2" * 1001, "paragraphs": 12}  # 1,001 characters, 4,004 after NFKC
    _error(client.post("/v1/generate", json=inflated, headers=tenant.headers), 422, "NFKC", "4004")
    at_limit = client.post(
        "/v1/generate", json={"prompt": "\ufdf2" * 1000, "paragraphs": 1}, headers=tenant.headers
    )
    assert at_limit.status_code == 200, at_limit.text


def test_rating_is_a_whole_number_from_1_to_5(client, make_tenant):
    tenant = make_tenant()
    for bad in (True, "5", 5.0, 0, 6, None):
        body = {"kind": "rating", "item": {"text": TEXT}, "rating": bad}
        _error(client.post("/v1/feedback", json=body, headers=tenant.headers), 422, "rating")
    good = client.post(
        "/v1/feedback", json={"kind": "rating", "item": {"text": TEXT}, "rating": 5}, headers=tenant.headers
    )
    assert good.status_code == 201, good.text


def test_an_item_cannot_be_preferred_to_itself(client, make_tenant):
    tenant = make_tenant()
    item_id = client.post(
        "/v1/feedback", json={"kind": "rating", "item": {"text": TEXT}, "rating": 3}, headers=tenant.headers
    ).json()["item_ids"][0]
    for item, other in (({"id": item_id}, {"id": item_id}), ({"text": TEXT}, {"text": TEXT})):
        body = {"kind": "preference", "item": item, "other": other, "preferred": "a"}
        _error(client.post("/v1/feedback", json=body, headers=tenant.headers), 422, "two different items")


def test_a_refused_feedback_request_stores_nothing(client, make_tenant, app):
    tenant = make_tenant()
    body = {"kind": "preference", "item": {"text": TEXT}, "other": {"id": "f" * 32}, "preferred": "a"}
    _error(client.post("/v1/feedback", json=body, headers=tenant.headers), 404, "f" * 32)
    assert _item_count(app, tenant.name) == 0
    body["other"] = {"text": TEXT + " Then the tide turned."}
    stored = client.post("/v1/feedback", json=body, headers=tenant.headers)
    assert stored.status_code == 201, stored.text
    assert _item_count(app, tenant.name) == 2


def test_deep_nesting_and_huge_numbers_get_their_own_message(client, make_tenant):
    headers = {**make_tenant().headers, "content-type": "application/json"}
    deep = b'{"text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    _error(client.post("/v1/analyze", content=deep, headers=headers), 422, "nested too deeply")
    huge = b'{"kind": "rating", "item": {"text": "x"}, "rating": ' + b"9" * 5000 + b"}"
    _error(client.post("/v1/feedback", content=huge, headers=headers), 422, "more than", "digits")
    _error(client.post("/v1/analyze", content=b'{"text": "\xff"}', headers=headers), 422, "not UTF-8")


def test_database_errors_are_500_and_never_log_tenant_text(app, client, caplog):
    secret = "tenant-secret-sentence"

    def broken():
        with app.state.service.db.write() as session:
            session.execute(sa.text("INSERT INTO no_such_table (text) VALUES (:text)"), {"text": secret})

    app.add_api_route("/test/broken", broken, methods=["POST"])
    with caplog.at_level(logging.ERROR, logger="resonance_os.api"):
        from fastapi.testclient import TestClient

        with TestClient(app, raise_server_exceptions=False) as raw:
            response = raw.post("/test/broken")
    _error(response, 500, "server log")
    assert "database error on POST /test/broken" in caplog.text
    assert "ProgrammingError" in caplog.text or "OperationalError" in caplog.text
    assert secret not in caplog.text and secret not in response.text


def test_sqlite_database_file_is_private(tmp_path, db_url):
    if not db_url.startswith("sqlite"):
        pytest.skip("file mode is a SQLite matter")
    path = tmp_path / "private" / "service.db"
    path.parent.mkdir()  # a .db path names a file: its folder must exist (core.home)
    database = Database(path)
    database.migrate()
    database.dispose()
    for file in [path, *path.parent.glob("service.db-*")]:
        assert stat.S_IMODE(os.stat(file).st_mode) == 0o600, file


def test_metrics_without_the_operator_token_show_no_jobs(db_url, make_tenant_for):
    app = create_app(db_url, metrics_token="scrape-secret")
    from fastapi.testclient import TestClient

    with TestClient(app) as client:
        tenant = make_tenant_for(app)
        client.post("/v1/analyze", json={"text": TEXT}, headers=tenant.headers)
        for headers in ({}, tenant.headers, {"Authorization": "Bearer wrong"}):
            text = client.get("/metrics", headers=headers).text
            assert "resonance_http_requests_total" in text
            assert "resonance_jobs" not in text and tenant.name not in text
        operator = client.get("/metrics", headers={"Authorization": "Bearer scrape-secret"}).text
    assert 'resonance_jobs{state="running"}' in operator


def test_a_generation_over_its_time_budget_is_a_503_and_the_next_one_runs(db_url, make_tenant_for):
    app = create_app(db_url, generate_budget_s=1e-9, rate_limit_per_s=1000.0, rate_limit_burst=1000.0)
    from fastapi.testclient import TestClient

    with TestClient(app) as client:
        tenant = make_tenant_for(app)
        over = client.post("/v1/generate", json={"prompt": "tides", "paragraphs": 3}, headers=tenant.headers)
        assert over.json()["error"]["type"] == "BusyError"
        _error(over, 503, "time budget", "fewer paragraphs")
        one = client.post("/v1/generate", json={"prompt": "tides", "paragraphs": 1}, headers=tenant.headers)
        assert one.status_code == 200, one.text
