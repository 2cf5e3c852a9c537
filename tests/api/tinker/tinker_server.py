"""The Tinker tests' server: a real ``resonance serve`` on 127.0.0.1 with a tiny random Llama as its one
base model ``tiny-llama`` (of the Tinker API and of the OpenAI API), and tenants with ``tml-`` keys (a module of its own name, so test files import it
whatever other ``conftest`` module is loaded)."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/api, for live_server
from live_server import LiveServer  # noqa: E402  (tests/api/live_server.py)

from resonance_os.api.persistence.db import Database  # noqa: E402
from resonance_os.api.persistence.tenants import create_tenant  # noqa: E402

BASE = "tiny-llama"
os.environ["TINKER_TELEMETRY"] = "0"


class TinkerServer(LiveServer):
    """``python -m resonance_os.api.hr_server`` with the tiny model as base model ``tiny-llama``."""

    health_path = "/api/v1/healthz"
    start_timeout = 120.0

    def __init__(self, home: Path, model_folder: Path, env: dict[str, str] | None = None) -> None:
        self.home = home
        env = {
            "RESONANCE_HOME": str(home),
            "RESONANCE_RATE_LIMIT": "10000",
            "RESONANCE_RATE_BURST": "10000",
            "RESONANCE_TINKER_BASE_MODELS": f"{BASE}={model_folder}",
            "RESONANCE_OPENAI_MODEL": str(model_folder),  # the OpenAI API serves the same base model
            "RESONANCE_OPENAI_MODEL_NAME": BASE,
            "OMP_NUM_THREADS": "1",
            **(env or {}),
        }
        super().__init__(f"sqlite:///{home / 'service.db'}", env=env)
        self.clients: list = []

    def service_client(self, key: str | None = None):
        """A tinker ``ServiceClient`` with ``key`` (a new tenant's by default); :meth:`stop` closes its
        session first, so no SDK heartbeat thread outlives the server."""
        import tinker

        client = tinker.ServiceClient(base_url=self.url, api_key=key or self.tenant_key())
        self.clients.append(client)
        return client

    def stop(self) -> None:
        while self.clients:
            self.clients.pop().close("success").result(timeout=60)
        super().stop()

    def tenant_key(self, prefix: str = "lab") -> str:
        """A new tenant's key, as the SDK's api_key (``tml-`` + our key)."""
        previous = os.environ.get("RESONANCE_HOME")
        os.environ["RESONANCE_HOME"] = str(self.home)  # the key pepper lives in the server's home
        db = Database(self.db_url)
        try:
            db.migrate()
            self.last_key = "tml-" + create_tenant(db, f"{prefix}-{uuid.uuid4().hex[:8]}")
            return self.last_key
        finally:
            db.dispose()
            if previous is None:
                os.environ.pop("RESONANCE_HOME", None)
            else:
                os.environ["RESONANCE_HOME"] = previous
