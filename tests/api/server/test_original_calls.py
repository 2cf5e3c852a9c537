"""The original ResonanceOS's API calls against a real server on 127.0.0.1: POST /hr_generate with its
documented body, and API_HOST/API_PORT naming the address."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx
import pytest
from live_server import free_port
from service_helpers import unique

from resonance_os.api.persistence.db import Database
from resonance_os.api.persistence.tenants import create_tenant
from resonance_os.core.env import LEGACY_ALIASES, getenv
from resonance_os.core.hrv_constants import HRV_DIMENSIONS

VOICE = [0.3, 0.6, 0.5, 0.7, 0.4, 0.2, 0.5, 0.8]


def test_hr_generate_with_only_a_prompt_returns_the_original_shape(db_url, live_server_factory):
    db = Database(db_url)
    db.migrate()
    tenant = unique("orig")
    headers = {"Authorization": f"Bearer {create_tenant(db, tenant)}"}
    db.dispose()
    server = live_server_factory(db_url)
    with httpx.Client(base_url=server.url, headers=headers, timeout=120) as api:
        plain = api.post("/hr_generate", json={"prompt": "Benefits of machine learning"})
        assert plain.status_code == 200, plain.text
        data = plain.json()
        assert "machine learning" in data["article"].lower()
        assert len(data["hrv_feedback"]) == 8 and all(0.0 <= v <= 1.0 for v in data["hrv_feedback"])
        assert data["hrv_feedback"] == [data["hrv"][name] for name in HRV_DIMENSIONS]
        default = api.post(
            "/v1/score",
            json={
                "text": data["article"],
                "profile": "professional",
                "prompt": "Benefits of machine learning",
            },
        )
        assert data["reward"]["reward"] == default.json()["reward"]  # toward the default profile

        assert api.post("/v1/profiles", json={"name": "brand_voice", "hrv": VOICE}).status_code == 201
        body = {"prompt": "Benefits of machine learning", "tenant": tenant, "profile_name": "brand_voice"}
        toward_voice = api.post("/hr_generate", json=body).json()
        scored = api.post(
            "/v1/score",
            json={"text": toward_voice["article"], "profile": "brand_voice", "prompt": body["prompt"]},
        ).json()
        assert toward_voice["reward"]["reward"] == scored["reward"]
        own_tenant = api.post("/hr_generate", json={**body, "tenant": None}).json()
        rescored = api.post(
            "/v1/score",
            json={"text": own_tenant["article"], "profile": "brand_voice", "prompt": body["prompt"]},
        ).json()
        assert own_tenant["reward"]["reward"] == rescored["reward"]  # written toward the key's brand_voice

        other = api.post("/hr_generate", json={**body, "tenant": "someone-else"})
        assert other.status_code == 404
        assert "omit tenant" in other.json()["error"]["message"]


def test_original_variable_names_are_aliases_ours_win(monkeypatch):
    for ours, original in LEGACY_ALIASES.items():
        monkeypatch.delenv(ours, raising=False)
        monkeypatch.setenv(original, "from-original")
        assert getenv(ours) == "from-original"
        monkeypatch.setenv(ours, "from-ours")
        assert getenv(ours) == "from-ours"
    assert set(LEGACY_ALIASES.values()) == {"API_HOST", "API_PORT", "HRV_TENANT_DIR"}


@pytest.mark.slow
def test_api_host_and_api_port_name_the_address(db_url, tmp_path):
    port = free_port()
    env = {**os.environ, "API_HOST": "127.0.0.1", "API_PORT": str(port), "RESONANCE_DB": db_url}
    env.pop("RESONANCE_HOST", None)
    env.pop("RESONANCE_PORT", None)
    with open(tmp_path / "server.log", "wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "resonance_os.api.hr_server"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            healthy = False
            for _ in range(600):
                assert server.poll() is None, (tmp_path / "server.log").read_text()
                try:
                    healthy = httpx.get(f"http://127.0.0.1:{port}/health", timeout=1.0).status_code == 200
                except httpx.HTTPError:
                    time.sleep(0.1)
                if healthy:
                    break
            assert healthy
        finally:
            os.killpg(server.pid, 15)
            server.wait(timeout=30)
