"""Fixtures of the Tinker tests: the tiny model's folder, a real ``resonance serve`` on 127.0.0.1 with it
as base model (tinker_server.py), and the official tinker SDK's ServiceClient pointed at it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("tinker", reason="the Tinker tests drive the server with the official tinker SDK")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "llm"))
from tinker_server import TinkerServer  # noqa: E402
from tiny_lm import make_model, make_tokenizer  # noqa: E402


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
    """A tinker.ServiceClient of a fresh tenant, its session closed after the test (so its heartbeat
    thread never outlives the server)."""
    import tinker

    with tinker.ServiceClient(base_url=tinker_server.url, api_key=tinker_server.tenant_key()) as client:
        yield client
