"""A ``resonance serve`` process for the benchmarks that time it: a fresh SQLite database with one
tenant, the server started on a free port of 127.0.0.1 and waited for, stopped with its process group."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(url: str, process: subprocess.Popen, timeout: float = 300.0) -> None:
    """Until ``url`` answers below 500; ``RuntimeError`` when the process exits or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{url}: the server exited with {process.returncode}")
        try:
            if httpx.get(url, timeout=2.0).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{url} did not answer within {timeout:.0f} s")


def start_serve(
    home: Path, pepper: str, env: dict[str, str], db_name: str = "bench.db"
) -> tuple[subprocess.Popen, str, str]:
    """``resonance serve`` with ``RESONANCE_HOME=home`` on a new database ``home/db_name`` holding one
    tenant ``bench``, ``env`` added to this process's environment (``pepper`` is the key pepper of both);
    returns the process (its own session), its URL and the tenant's key. No rate limit gets in the way."""
    from resonance_os.api.persistence.db import Database
    from resonance_os.api.persistence.tenants import create_tenant

    os.environ["RESONANCE_KEY_PEPPER"] = pepper
    db_url = f"sqlite:///{home / db_name}"
    db = Database(db_url)
    db.migrate()
    key = create_tenant(db, "bench")
    db.dispose()
    port = free_port()
    full_env = {
        **os.environ, "RESONANCE_HOME": str(home), "RESONANCE_KEY_PEPPER": pepper,
        "RESONANCE_RATE_LIMIT": "10000", "RESONANCE_RATE_BURST": "10000", **env,
    }  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "resonance_os.api.hr_server", "--port", str(port), "--db", db_url],
        env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    wait_healthy(f"{url}/health", process)
    return process, url, key


def stop(process: subprocess.Popen | None) -> None:
    """Stop a server started in its own session (and its workers): TERM, then KILL after 30 s."""
    if process is not None and process.poll() is None:
        os.killpg(process.pid, 15)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
