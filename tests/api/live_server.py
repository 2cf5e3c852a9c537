"""A real ``python -m resonance_os.api.hr_server`` in a subprocess on 127.0.0.1, for the tests that need
one (imported by ``tests/api/conftest.py`` and the Tinker tests' conftest)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LiveServer:
    """``python -m resonance_os.api.hr_server`` on 127.0.0.1 and a free (or given) port, healthy when
    ``health_path`` answers 200."""

    health_path = "/health"
    start_timeout = 60.0

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

    def start(self, timeout: float | None = None, port: int | None = None) -> LiveServer:
        self.port = port or free_port()
        self.log = tempfile.TemporaryFile()
        command = [sys.executable, "-m", "resonance_os.api.hr_server", "--port", str(self.port)]
        command += ["--db", self.db_url, "--workers", str(self.workers)]
        self.process = subprocess.Popen(
            command, env=self.env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + (timeout or self.start_timeout)
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited early:\n{self.output()}")
            try:
                if httpx.get(f"{self.url}{self.health_path}", timeout=1.0).status_code == 200:
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
