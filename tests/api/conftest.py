"""Fixtures for the service tests: a database (SQLite file, or $RESONANCE_TEST_DB_URL such as a PostgreSQL
URL), an app with a TestClient, tenants with keys, and a real uvicorn server on 127.0.0.1."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from live_server import LiveServer
from service_helpers import Tenant, unique

from resonance_os.api.hr_server import create_app
from resonance_os.api.persistence.db import Database
from resonance_os.api.persistence.tenants import create_tenant


@pytest.fixture(autouse=True)
def resonance_home(tmp_path, monkeypatch) -> Path:
    """Keep the pepper, job logs and default database of every test in its own folder."""
    home = tmp_path / "home"
    monkeypatch.setenv("RESONANCE_HOME", str(home))
    monkeypatch.delenv("RESONANCE_DB", raising=False)
    monkeypatch.delenv("RESONANCE_KEY_PEPPER", raising=False)
    return home


@pytest.fixture
def db_url(tmp_path) -> str:
    """$RESONANCE_TEST_DB_URL (shared: tests use unique tenant names) or a fresh SQLite file."""
    return os.environ.get("RESONANCE_TEST_DB_URL") or f"sqlite:///{tmp_path / 'service.db'}"


@pytest.fixture
def own_db_url(tmp_path) -> Iterator[str]:
    """A database of this test's alone, for tests whose server runs every queued job (a job another
    test left queued in the shared PostgreSQL database would take the slots they count on): a fresh
    SQLite file, or with $RESONANCE_TEST_DB_URL a new database on that server, dropped after."""
    shared = os.environ.get("RESONANCE_TEST_DB_URL")
    if not shared or shared.startswith("sqlite"):
        yield f"sqlite:///{tmp_path / 'service.db'}"
        return
    url = sa.engine.make_url(shared)
    name = f"resonance_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


@pytest.fixture
def app(db_url):
    return create_app(db_url, rate_limit_per_s=1000.0, rate_limit_burst=1000.0)


@pytest.fixture
def client(app) -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture
def make_tenant(app):
    def make(prefix: str = "acme") -> Tenant:
        name = unique(prefix)
        return Tenant(name, create_tenant(app.state.service.db, name))

    return make


@pytest.fixture
def db(db_url) -> Iterator[Database]:
    database = Database(db_url)
    database.migrate()
    yield database
    database.dispose()


@pytest.fixture
def live_server_factory():
    servers: list[LiveServer] = []

    def start(db_url: str, workers: int = 1, env: dict[str, str] | None = None) -> LiveServer:
        server = LiveServer(db_url, workers, env).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def make_tenant_for():
    """A tenant with a key in a given app's database."""

    def make(app, prefix: str = "acme") -> Tenant:
        name = unique(prefix)
        return Tenant(name, create_tenant(app.state.service.db, name))

    return make
