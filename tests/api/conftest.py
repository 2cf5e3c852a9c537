"""Fixtures for the service tests: a database (SQLite file, or $RESONANCE_TEST_DB_URL such as a PostgreSQL
URL), an app with a TestClient, tenants with keys, and a real uvicorn server on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from resonance_os.api.db import Database
from resonance_os.api.hr_server import create_app
from resonance_os.api.tenants import create_tenant

HERE = Path(__file__).parent


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


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@dataclass
class Tenant:
    name: str
    key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LiveServer:
    """``python -m resonance_os.api.hr_server`` in a subprocess on 127.0.0.1 and a free port."""

    def __init__(self, db_url: str, workers: int = 1, env: dict[str, str] | None = None) -> None:
        self.db_url = db_url
        self.workers = workers
        self.env = {
            **os.environ,
            "RESONANCE_RATE_LIMIT": "1000",
            "RESONANCE_RATE_BURST": "1000",
            **(env or {}),
        }
        self.process: subprocess.Popen | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> LiveServer:
        self.port = free_port()
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "resonance_os.api.hr_server",
                "--port",
                str(self.port),
                "--db",
                self.db_url,
                "--workers",
                str(self.workers),
            ],
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited early:\n{self.output()}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("server did not become healthy in time")

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def kill(self) -> None:
        """SIGKILL the server and its uvicorn workers (the process group), like a crash."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, 9)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


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


def train_reward_model(client, headers: dict[str, str], timeout: float = 300.0, **body) -> dict:
    """``POST /v1/reward-model/train`` (202, a job), wait for the job to succeed in its worker process,
    and return ``GET /v1/reward-model`` (the new version with its metrics)."""
    queued = client.post("/v1/reward-model/train", json=body, headers=headers)
    assert queued.status_code == 202, queued.text
    job = queued.json()
    assert job["kind"] == "reward_model"
    deadline = time.monotonic() + timeout
    while job["state"] in ("queued", "starting", "running"):
        assert time.monotonic() < deadline, f"reward model job still {job['state']}"
        time.sleep(0.2)
        job = client.get(f"/v1/jobs/{job['id']}", headers=headers).json()
    assert job["state"] == "succeeded", job
    model = client.get("/v1/reward-model", headers=headers).json()
    assert model["version"] == job["metrics"]["reward_model_version"]
    return model
