"""One tenant cannot fill the database: stored rows and text bytes are capped per tenant (507 naming the
limit and the setting that raises it), exactly under a concurrent flood, and the counter agrees with
what is stored."""

from __future__ import annotations

import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from service_helpers import Tenant, unique

from resonance_os.api.hr_server import create_app
from resonance_os.api.persistence.db import Database, Feedback, Item, Usage
from resonance_os.api.persistence.quotas import StorageQuota, StorageQuotaError, check_room, stored
from resonance_os.api.persistence.tenants import create_tenant

HRV = [0.4, 0.6, 0.4, 0.6, 0.2, 0.1, 0.4, 0.9]
TEXT = "The rain kept falling on the quiet harbour. Boats rocked, and the gulls waited for the fishermen."


def _tenant(db: Database, prefix: str) -> Tenant:
    name = unique(prefix)
    return Tenant(name, create_tenant(db, name))


def _tenant_id(db: Database, tenant: Tenant) -> int:
    with db.read() as session:
        return session.execute(
            sa.text("SELECT id FROM tenants WHERE name = :n"), {"n": tenant.name}
        ).scalar_one()


def test_a_concurrent_profile_flood_stops_exactly_at_the_row_quota(db_url, live_server_factory):
    server = live_server_factory(db_url, env={"RESONANCE_QUOTA_ROWS": "12"})
    db = Database(db_url)
    flooder, other = _tenant(db, "flood"), _tenant(db, "other")

    def create(i: int) -> httpx.Response:
        body = {"name": f"p{i}", "hrv": HRV, "description": "x" * 100}
        return httpx.post(f"{server.url}/v1/profiles", json=body, headers=flooder.headers, timeout=60)

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(create, range(30)))
    codes = sorted(a.status_code for a in answers)
    assert codes == [201] * 12 + [507] * 18
    refusal = next(a.json()["error"] for a in answers if a.status_code == 507)
    assert refusal["type"] == "StorageQuotaError"
    assert "12 of at most 12 rows" in refusal["message"] and "RESONANCE_QUOTA_ROWS" in refusal["message"]
    listed = httpx.get(f"{server.url}/v1/profiles", headers=flooder.headers, timeout=30).json()["profiles"]
    assert len(listed) == 12

    body = {"name": "mine", "hrv": HRV}
    assert (
        httpx.post(f"{server.url}/v1/profiles", json=body, headers=other.headers, timeout=30).status_code
        == 201
    )
    victim = listed[0]["name"]
    assert (
        httpx.delete(f"{server.url}/v1/profiles/{victim}", headers=flooder.headers, timeout=30).status_code
        == 204
    )
    again = httpx.post(
        f"{server.url}/v1/profiles", json={"name": "again", "hrv": HRV}, headers=flooder.headers, timeout=30
    )
    assert again.status_code == 201  # deleting a profile frees its rows
    with db.read() as session:
        tenant_id = _tenant_id(db, flooder)
        assert session.get(Usage, tenant_id).rows == stored(session, tenant_id)[0] == 12
    db.dispose()


@pytest.fixture
def byte_app(db_url):
    return create_app(db_url, rate_limit_per_s=1000.0, rate_limit_burst=1000.0, quota_bytes=1000)


def test_feedback_past_the_byte_quota_is_refused_and_leaves_nothing_behind(byte_app):
    db = byte_app.state.service.db
    tenant = _tenant(db, "bytes")
    tenant_id = _tenant_id(db, tenant)
    body = {"kind": "rating", "item": {"text": TEXT}, "rating": 4}
    with TestClient(byte_app) as client:
        accepted = 0
        while (answer := client.post("/v1/feedback", json=body, headers=tenant.headers)).status_code == 201:
            accepted += 1
        assert answer.status_code == 507, answer.text
        message = answer.json()["error"]["message"]
        assert "over your limit of 1,000" in message and "RESONANCE_QUOTA_BYTES" in message
    # each rating stores the submitted text as an item and a copy in the feedback row
    assert accepted == 1000 // (2 * len(TEXT.encode()))
    with db.read() as session:
        assert session.scalar(sa.select(sa.func.count()).where(Item.tenant_id == tenant_id)) == accepted
        assert session.scalar(sa.select(sa.func.count()).where(Feedback.tenant_id == tenant_id)) == accepted
        usage = session.get(Usage, tenant_id)
        assert (
            (usage.rows, usage.bytes)
            == stored(session, tenant_id)
            == (2 * accepted, accepted * 2 * len(TEXT))
        )


def test_a_tenants_usage_is_counted_from_what_it_stored_before_quotas_existed(db_url):
    app = create_app(db_url, rate_limit_per_s=1000.0, rate_limit_burst=1000.0, quota_rows=5)
    db = app.state.service.db
    tenant = _tenant(db, "older")
    tenant_id = _tenant_id(db, tenant)
    with TestClient(app) as client:
        for i in range(3):
            assert (
                client.post(
                    "/v1/profiles", json={"name": f"p{i}", "hrv": HRV}, headers=tenant.headers
                ).status_code
                == 201
            )
        with db.write() as session:  # as a database upgraded to revision 0004 has no usage rows
            session.execute(sa.delete(Usage).where(Usage.tenant_id == tenant_id))
        codes = [
            client.post(
                "/v1/profiles", json={"name": f"q{i}", "hrv": HRV}, headers=tenant.headers
            ).status_code
            for i in range(4)
        ]
    assert codes == [201, 201, 507, 507]


def test_a_text_that_cannot_fit_is_refused_before_it_is_measured(byte_app):
    """Over the quota, a submitted text is refused with 507 before any work on it: a text the extractor
    would reject ("no words") gets the quota's answer, not the extractor's, and a text that would
    fit is still measured and named when it is wrong."""
    db = byte_app.state.service.db
    tenant = _tenant(db, "early")
    wordless = {"kind": "rating", "item": {"text": "\u202e" * 10}, "rating": 4}
    big = {"kind": "rating", "item": {"text": "\u202e" * 400}, "rating": 4}  # 1,200 bytes
    with TestClient(byte_app) as client:
        small = client.post("/v1/feedback", json=wordless, headers=tenant.headers)
        assert small.status_code == 422 and "no words" in small.json()["error"]["message"]
        refused = client.post("/v1/feedback", json=big, headers=tenant.headers)
        assert refused.status_code == 507, refused.text
        assert "RESONANCE_QUOTA_BYTES" in refused.json()["error"]["message"]


def test_a_refusal_of_a_text_that_cannot_fit_waits_for_no_writer(tmp_path):
    """A tenant refused again and again (a storage flood) takes no write lock: the refusal comes while
    another writer holds SQLite's lock, which every tenant's writes wait for."""
    db = Database(f"sqlite:///{tmp_path / 'q.db'}")
    db.migrate()
    tenant = _tenant(db, "refused")
    tenant_id = _tenant_id(db, tenant)
    quota = StorageQuota(rows=10, bytes=1_000)
    check_room(db, tenant_id, quota, 1, 10)  # fits; creates the usage row
    writer = sqlite3.connect(tmp_path / "q.db", isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another request's write in progress
    outcome: list[BaseException | None] = []

    def refuse() -> None:
        try:
            check_room(db, tenant_id, quota, 1, 5_000)
            outcome.append(None)
        except BaseException as error:  # noqa: BLE001 (recorded for the assertion below)
            outcome.append(error)

    checker = threading.Thread(target=refuse, daemon=True)
    try:
        checker.start()
        checker.join(timeout=10)  # waiting on the lock would take the 30 s busy timeout
        assert not checker.is_alive(), "the refusal waited for another tenant's write lock"
    finally:
        writer.execute("ROLLBACK")
        writer.close()
        checker.join()
        db.dispose()
    assert isinstance(outcome[0], StorageQuotaError), outcome
