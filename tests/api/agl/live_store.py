"""One live server for a whole test module (starting one costs tens of seconds on a busy machine): import
``agl_server_fixture`` into a test module and ask for ``agl_server``."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("api_live_server", Path(__file__).parents[1] / "conftest.py")
_api = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _api  # its dataclasses look their module up
_spec.loader.exec_module(_api)
LiveServer = _api.LiveServer


@pytest.fixture(scope="module", name="agl_server")
def agl_server_fixture(tmp_path_factory):
    """``resonance serve`` on 127.0.0.1 with its own data home, for one module: on
    ``$RESONANCE_TEST_DB_URL`` (``make test-postgres``), else its own SQLite file."""
    home = tmp_path_factory.mktemp("home")
    env = {"RESONANCE_HOME": str(home)}
    db_url = os.environ.get("RESONANCE_TEST_DB_URL") or f"sqlite:///{home / 'service.db'}"
    server = LiveServer(db_url, env=env).start(timeout=180.0)
    server.home = home
    yield server
    server.stop()
