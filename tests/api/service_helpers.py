"""Helpers the service tests import by name: unique tenant names, a tenant with its key (made in a
live server's database), the PYTHONPATH of the tests' trainers, reward-model training through its job. A module of its own name (not ``conftest``), so a test file imports it whatever
other ``conftest`` module pytest has loaded."""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from resonance_os.api.persistence.db import Database
from resonance_os.api.persistence.tenants import create_tenant

HERE = Path(__file__).parent
"""tests/api: put on PYTHONPATH of subprocesses that import the tests' trainers."""


def trainers_pythonpath() -> str:
    """``$PYTHONPATH`` for a job worker or server process that imports the tests' trainers (``HERE`` first)."""
    return str(HERE) + os.pathsep + os.environ.get("PYTHONPATH", "")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@dataclass
class Tenant:
    name: str
    key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


def new_tenant(db_url: str, prefix: str, pepper: str | None = None) -> Tenant:
    """A new tenant (a unique name from ``prefix``) and its key, in the database at ``db_url`` (migrated
    first), the key hashed with ``pepper``: the ``RESONANCE_KEY_PEPPER`` of the live server that will
    check it (None: this process's)."""
    with mock.patch.dict(os.environ, {} if pepper is None else {"RESONANCE_KEY_PEPPER": pepper}):
        db = Database(db_url)
        try:
            db.migrate()
            name = unique(prefix)
            return Tenant(name, create_tenant(db, name))
        finally:
            db.dispose()


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
