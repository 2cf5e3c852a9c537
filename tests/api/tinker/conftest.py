"""A real ``resonance serve`` on 127.0.0.1 with a tiny random Llama as its one base model, tenants with
keys, and the official tinker SDK's ServiceClient pointed at it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytest.importorskip("tinker", reason="the Tinker tests drive the server with the official tinker SDK")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "llm"))
from tiny_lm import make_model, make_tokenizer  # noqa: E402

from resonance_os.api.db import Database  # noqa: E402
from resonance_os.api.tenants import create_tenant  # noqa: E402

BASE = "tiny-llama"
os.environ["TINKER_TELEMETRY"] = "0"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class TinkerServer:
    """``python -m resonance_os.api.hr_server`` with the tiny model as base model ``tiny-llama``."""

    def __init__(self, home: Path, model_folder: Path, env: dict[str, str] | None = None) -> None:
        self.home = home
        self.db_url = f"sqlite:///{home / 'service.db'}"
        self.env = {
            **os.environ,
            "RESONANCE_HOME": str(home),
            "RESONANCE_RATE_LIMIT": "10000",
            "RESONANCE_RATE_BURST": "10000",
            "RESONANCE_TINKER_BASE_MODELS": f"{BASE}={model_folder}",
            "OMP_NUM_THREADS": "1",
            **(env or {}),
        }
        self.port = 0
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 120.0, port: int | None = None) -> TinkerServer:
        self.port = port or _free_port()
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
                if httpx.get(f"{self.url}/api/v1/healthz", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("server did not become healthy in time")

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

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

    def kill(self) -> None:
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


@pytest.fixture(scope="session")
def tiny_model_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tinker-model") / "tiny-llama"
    tokenizer = make_tokenizer()
    make_model(len(tokenizer), context=128).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tinker_server(tmp_path_factory, tiny_model_folder) -> Iterator[TinkerServer]:
    server = TinkerServer(tmp_path_factory.mktemp("tinker-home"), tiny_model_folder).start()
    yield server
    server.stop()


@pytest.fixture
def service_client(tinker_server):
    """A tinker.ServiceClient of a fresh tenant."""
    import tinker

    client = tinker.ServiceClient(base_url=tinker_server.url, api_key=tinker_server.tenant_key())
    yield client
