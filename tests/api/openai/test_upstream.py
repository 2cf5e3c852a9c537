"""One model handed on to an upstream vLLM-compatible server (``RESONANCE_OPENAI_UPSTREAM``): two real
``resonance serve`` processes on 127.0.0.1, the front one forwarding model ``tiny`` to the other, through
the official ``openai`` SDK."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

openai = pytest.importorskip("openai")

sys.path.insert(0, str(Path(__file__).parents[2] / "llm"))
from live_server import LiveServer  # noqa: E402
from openai_servers import model_server, save_tiny_model  # noqa: E402
from service_helpers import new_tenant  # noqa: E402

PEPPER = "upstream-tests"
UPSTREAM_MODEL = "tiny"


def _server(tmp: Path, name: str, model_folder: Path, **env: str) -> LiveServer:
    return model_server(tmp, PEPPER, model_folder, name, RESONANCE_ENGINE_DTYPE="float32", **env)[0].start()


def test_a_model_is_answered_by_the_upstream_server(tmp_path):
    folder = save_tiny_model(tmp_path / UPSTREAM_MODEL)
    upstream = _server(tmp_path, "upstream", folder)
    try:
        upstream_key = new_tenant(upstream.db_url, "gpu", PEPPER).key
        front = _server(
            tmp_path, "front", folder, RESONANCE_OPENAI_MODEL_NAME="local", RESONANCE_OPENAI_MAX_N="4",
            RESONANCE_OPENAI_UPSTREAM=f"{upstream.url}/v1", RESONANCE_OPENAI_UPSTREAM_MODEL=UPSTREAM_MODEL,
            RESONANCE_OPENAI_UPSTREAM_KEY=upstream_key,
        )  # fmt: skip
    except BaseException:
        upstream.stop()
        raise
    try:
        key = new_tenant(front.db_url, "user", PEPPER).key
        sdk = openai.OpenAI(base_url=f"{front.url}/v1", api_key=key, max_retries=0, timeout=60)
        direct = openai.OpenAI(base_url=f"{upstream.url}/v1", api_key=upstream_key, max_retries=0, timeout=60)
        assert [m.id for m in sdk.models.list()] == ["local", UPSTREAM_MODEL]

        ask = {"prompt": [5, 6, 7], "max_tokens": 6, "temperature": 0, "logprobs": 0,
               "extra_body": {"return_token_ids": True, "ignore_eos": True}}  # fmt: skip
        through = sdk.completions.create(model=UPSTREAM_MODEL, **ask).choices[0].model_dump()
        there = direct.completions.create(model=UPSTREAM_MODEL, **ask).choices[0].model_dump()
        assert through["token_ids"] == there["token_ids"] and len(through["token_ids"]) == 6
        assert through["logprobs"]["token_logprobs"] == there["logprobs"]["token_logprobs"]
        local = sdk.completions.create(model="local", **ask).choices[0].model_dump()
        assert local["token_ids"] == there["token_ids"]  # the same weights here, answered by this engine

        chat = {"messages": [{"role": "user", "content": "the cat"}], "max_tokens": 8, "seed": 3,
                "extra_body": {"ignore_eos": True}}  # fmt: skip
        whole = sdk.chat.completions.create(model=UPSTREAM_MODEL, **chat).choices[0].message.content
        parts = sdk.chat.completions.create(model=UPSTREAM_MODEL, stream=True, **chat)
        assert "".join(c.choices[0].delta.content or "" for c in parts if c.choices) == whole

        with pytest.raises(openai.BadRequestError) as caught:  # the front's own limit, before forwarding
            sdk.completions.create(model=UPSTREAM_MODEL, prompt="a", n=9)
        assert caught.value.body["param"] == "n"
        with pytest.raises(openai.BadRequestError) as caught:  # the upstream's 400, passed on
            sdk.completions.create(model=UPSTREAM_MODEL, prompt="the " * 120, max_tokens=20)
        assert "context" in caught.value.message
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=f"{front.url}/v1", api_key="rsk_wrong", max_retries=0).completions.create(
                model=UPSTREAM_MODEL, prompt="a"
            )

        upstream.stop()
        gone = httpx.post(f"{front.url}/v1/completions", headers={"Authorization": f"Bearer {key}"},
                          json={"model": UPSTREAM_MODEL, "prompt": "a", "max_tokens": 2}, timeout=60)  # fmt: skip
        assert gone.status_code == 502 and gone.json()["error"]["code"] == "upstream_unavailable"
        assert sdk.completions.create(model="local", prompt="a", max_tokens=2).usage.completion_tokens >= 1
    finally:
        front.stop()
        upstream.stop()
    assert "Traceback" not in front.output()
