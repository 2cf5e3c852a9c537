"""Fixtures for the browser tests: ``resonance serve`` on 127.0.0.1 with a fresh SQLite database and a
tenant made by ``resonance tenants create``, and Debian's Chromium driven headless by Playwright.

Skips (with the reason) when Playwright or a Chromium binary is missing: ``pip install -e '.[e2e]'``
and ``apt-get install chromium``. Playwright's own browser download is never used."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from studio_pages import VIEWPORT

RESONANCE = str(Path(sys.executable).with_name("resonance"))


def chromium_path() -> str | None:
    """``$RESONANCE_CHROMIUM``, else the first Chromium on PATH (Debian installs /usr/bin/chromium)."""
    for candidate in (os.environ.get("RESONANCE_CHROMIUM"), "chromium", "chromium-browser"):
        if candidate and (found := shutil.which(candidate)):
            return found
    return None


@dataclass
class Studio:
    url: str
    key: str
    db_url: str
    pid: int = 0
    """The server's process id."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def served_studio(home: Path, ready: bool = True, **env_vars: str) -> Iterator[Studio]:
    """``resonance serve`` with its database and data home in ``home`` (and ``env_vars`` in its
    environment) and a tenant key made with the CLI, once ``/health`` answers (and, with ``ready``,
    once ``/health/ready`` does: its text workers have loaded)."""
    db_url = f"sqlite:///{home / 'studio.db'}"
    env = {**os.environ, "RESONANCE_HOME": str(home), "RESONANCE_BACKEND": "builtin", **env_vars}
    env.pop("RESONANCE_DB", None)
    created = subprocess.run(
        [RESONANCE, "tenants", "create", "studio-team", "--db", db_url],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    key = created.stdout.strip().splitlines()[-1]
    port = _free_port()
    log = (home / "server.log").open("wb")
    process = subprocess.Popen(
        [RESONANCE, "serve", "--port", str(port), "--db", db_url],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        path = "/health/ready" if ready else "/health"
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"resonance serve exited: {(home / 'server.log').read_text()}")
            try:
                if httpx.get(f"{url}{path}", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"resonance serve did not answer 200 on {path} in 120 s")
            time.sleep(0.1)
        yield Studio(url, key, db_url, process.pid)
    finally:
        os.killpg(process.pid, 15)
        process.wait(timeout=30)
        log.close()


@pytest.fixture(scope="session")
def studio(tmp_path_factory) -> Iterator[Studio]:
    """A real server (``resonance serve``), ready, and a tenant key made with the CLI."""
    with served_studio(tmp_path_factory.mktemp("studio-home")) as served:
        yield served


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium from the system, or a skip saying what is missing. One per test module: the
    sync Playwright API holds an asyncio loop as running in this thread while it is open, so a
    session-wide browser made every later test's ``asyncio.run`` fail (tests/llm/test_engine.py)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright is not installed: pip install -e '.[e2e]'")
    executable = chromium_path()
    if executable is None:
        pytest.skip("no Chromium found: apt-get install chromium (or set RESONANCE_CHROMIUM)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def page(browser, studio):
    """A fresh browser tab (its own session storage) on the studio, with the page's console kept."""
    context = browser.new_context(viewport=VIEWPORT)
    tab = context.new_page()
    tab.console_lines = []
    tab.request_urls = []
    tab.on("console", lambda message: tab.console_lines.append(message.text))
    tab.on("request", lambda request: tab.request_urls.append(request.url))
    tab.goto(studio.url + "/")
    tab.wait_for_selector("body[data-ready=true]")
    yield tab
    context.close()
