"""The OpenAI API of a real ``resonance serve`` (uvicorn on 127.0.0.1, the tiny model) through the
official ``openai`` SDK: sync, async and streamed calls, tenants' adapters, limits, errors."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import httpx
import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("peft", reason="LoRA adapters need the local extra")

sys.path.insert(0, str(Path(__file__).parents[2] / "llm"))
from live_server import LiveServer  # noqa: E402
from openai_servers import model_server, save_tiny_model  # noqa: E402
from service_helpers import new_tenant  # noqa: E402
from tiny_lm import make_tokenizer, one_step_lora  # noqa: E402

MODEL = "tiny"
USER = [{"role": "user", "content": "the cat sat on the mat"}]


PEPPER = "openai-api-tests"


def _tenant(db_url: str) -> tuple[str, str]:
    """A new tenant's (name, key), hashed with the live server's pepper."""
    tenant = new_tenant(db_url, "oai", PEPPER)
    return tenant.name, tenant.key


def _start(tmp: Path, **env: str) -> tuple[LiveServer, Path]:
    server, runs = model_server(
        tmp, PEPPER, save_tiny_model(tmp / MODEL), RESONANCE_OPENAI_MAX_TOKENS="32", **env
    )
    return server.start(), runs


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("openai")
    server, runs = _start(tmp)
    yield server, runs
    server.stop()
    assert "Traceback" not in server.output()  # no request, good or bad, hit a bug


@pytest.fixture
def tenant_key(live):
    server, _ = live
    return _tenant(server.db_url)


def client(server: LiveServer, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0, timeout=60)


def test_models_chat_and_completions_through_the_sdk(live, tenant_key):
    server, _ = live
    sdk = client(server, tenant_key[1])
    assert [m.id for m in sdk.models.list()] == [MODEL]
    chat = sdk.chat.completions.create(
        model=MODEL, messages=USER, max_tokens=8, seed=1, n=2, logprobs=True, top_logprobs=3
    )
    assert chat.object == "chat.completion" and len(chat.choices) == 2
    assert chat.usage.completion_tokens == sum(len(c.logprobs.content) for c in chat.choices)
    assert all(len(entry.top_logprobs) == 3 for c in chat.choices for entry in c.logprobs.content)
    assert chat.choices[0].finish_reason in ("stop", "length")
    text = sdk.completions.create(
        model=MODEL,
        prompt=[5, 6, 7, 8],
        max_tokens=6,
        temperature=0,
        logprobs=2,
        extra_body={"return_token_ids": True, "ignore_eos": True},
    )
    choice = text.choices[0].model_dump()
    assert choice["prompt_token_ids"] == [5, 6, 7, 8] and len(choice["token_ids"]) == 6
    assert len(choice["logprobs"]["token_logprobs"]) == 6 and text.usage.prompt_tokens == 4


def test_same_seed_same_text_and_streams_add_up(live, tenant_key):
    server, _ = live
    sdk = client(server, tenant_key[1])
    kwargs = {
        "model": MODEL,
        "messages": USER,
        "max_tokens": 20,
        "seed": 7,
        "extra_body": {"ignore_eos": True},
    }
    first = sdk.chat.completions.create(**kwargs).choices[0].message.content
    assert sdk.chat.completions.create(**kwargs).choices[0].message.content == first
    chunks = list(sdk.chat.completions.create(**kwargs, stream=True, stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == first
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 20

    async def streamed_completion() -> str:
        async with openai.AsyncOpenAI(
            base_url=f"{server.url}/v1", api_key=tenant_key[1], max_retries=0
        ) as aio:
            whole = await aio.completions.create(model=MODEL, prompt="the dog", max_tokens=12, seed=3)
            parts = [
                c.choices[0].text
                async for c in await aio.completions.create(
                    model=MODEL, prompt="the dog", max_tokens=12, seed=3, stream=True
                )
            ]
            return whole.choices[0].text, "".join(parts)

    whole, parts = asyncio.run(streamed_completion())
    assert whole == parts
    raw = httpx.post(f"{server.url}/v1/completions", headers={"Authorization": f"Bearer {tenant_key[1]}"},
                     json={"model": MODEL, "prompt": "a", "max_tokens": 3, "stream": True}, timeout=60)  # fmt: skip
    events = [line for line in raw.text.split("\n\n") if line]
    assert raw.headers["content-type"].startswith("text/event-stream")
    assert all(e.startswith("data: ") for e in events) and events[-1] == "data: [DONE]"
    assert json.loads(events[0][6:])["object"] == "text_completion"


def test_a_one_step_adapter_changes_the_output_and_stays_its_tenants(live):
    server, runs = live
    owner, owner_key = _tenant(server.db_url)
    other, other_key = _tenant(server.db_url)
    one_step_lora(make_tokenizer(), runs / owner / "run-1" / "policy")
    headers = {"Authorization": f"Bearer {owner_key}"}
    created = httpx.post(
        f"{server.url}/v1/adapters", headers=headers, json={"name": "voice", "path": "run-1"}, timeout=60
    )
    assert created.status_code == 201, created.text
    sdk = client(server, owner_key)
    assert [m.id for m in sdk.models.list()] == [MODEL, "voice"]
    greedy = {"messages": USER, "max_tokens": 12, "temperature": 0, "extra_body": {"ignore_eos": True}}
    base = sdk.chat.completions.create(model=MODEL, **greedy).choices[0].message.content
    tuned = sdk.chat.completions.create(model="voice", **greedy).choices[0].message.content
    assert tuned != base

    stranger = client(server, other_key)
    assert [m.id for m in stranger.models.list()] == [MODEL]
    with pytest.raises(openai.NotFoundError) as caught:
        stranger.chat.completions.create(model="voice", **greedy)
    assert caught.value.code == "model_not_found"
    theirs = httpx.post(f"{server.url}/v1/adapters", headers={"Authorization": f"Bearer {other_key}"},
                        json={"name": "mine", "path": f"../{owner}/run-1"}, timeout=60)  # fmt: skip
    assert theirs.status_code == 400 and theirs.json()["error"]["param"] == "path"
    gone = httpx.delete(f"{server.url}/v1/adapters/voice", headers=headers, timeout=60)
    assert gone.status_code == 200
    with pytest.raises(openai.NotFoundError):
        sdk.chat.completions.create(model="voice", **greedy)


BAD_BODIES = [
    ({"model": "nope", "messages": USER}, 404, "model"),
    ({"model": MODEL, "messages": USER, "n": 99}, 400, "n"),
    ({"model": MODEL, "messages": USER, "max_tokens": 500}, 400, "messages"),
    ({"model": MODEL, "messages": USER, "temperature": 5}, 400, "temperature"),
    ({"model": MODEL, "messages": USER, "top_p": 0}, 400, "top_p"),
    ({"model": MODEL, "messages": USER, "top_logprobs": 50, "logprobs": True}, 400, "top_logprobs"),
    ({"model": MODEL, "messages": USER, "presence_penalty": "high"}, 400, "presence_penalty"),
    ({"model": MODEL, "messages": USER, "stop": ["a", "b", "c", "d", "e"]}, 400, "stop"),
    ({"model": MODEL, "messages": USER, "tools": [{"type": "function"}]}, 400, "tools"),
    ({"model": MODEL, "messages": []}, 400, "messages"),
    ({"model": MODEL, "messages": [{"role": "robot", "content": "x"}]}, 400, "messages.0.role"),
    ({"messages": USER}, 400, "model"),
]


@pytest.mark.parametrize(("body", "status", "param"), BAD_BODIES)
def test_bad_input_is_a_clear_4xx_in_openais_shape(live, tenant_key, body, status, param):
    server, _ = live
    answer = httpx.post(
        f"{server.url}/v1/chat/completions",
        headers={"Authorization": f"Bearer {tenant_key[1]}"},
        json=body,
        timeout=60,
    )
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    assert error["param"] == param


def test_malformed_bodies_and_missing_keys_are_4xx(live, tenant_key):
    server, _ = live
    headers = {"Authorization": f"Bearer {tenant_key[1]}", "Content-Type": "application/json"}
    for raw in (
        b"{not json",
        b"[1, 2]",
        b'{"model": "tiny", "prompt": [[1, -4]]}',
        b'{"model": "tiny", "prompt": ""}',
    ):
        answer = httpx.post(f"{server.url}/v1/completions", headers=headers, content=raw, timeout=60)
        assert answer.status_code == 400, (raw, answer.text)
        assert answer.json()["error"]["type"] == "invalid_request_error"
    with pytest.raises(openai.AuthenticationError) as caught:
        client(server, "rsk_wrong").models.list()
    assert caught.value.code == "invalid_api_key"
    context = httpx.post(f"{server.url}/v1/completions", headers=headers,
                         json={"model": MODEL, "prompt": "the " * 120, "max_tokens": 20}, timeout=60)  # fmt: skip
    assert context.status_code == 400 and context.json()["error"]["code"] == "context_length_exceeded"


def test_a_short_request_finishes_while_a_long_one_streams(live, tenant_key):
    server, _ = live
    sdk = client(server, tenant_key[1])
    long = sdk.completions.create(
        model=MODEL, prompt="one two three", max_tokens=90, stream=True, extra_body={"ignore_eos": True}
    )
    received = [next(iter(long))]  # the long request is generating
    short = sdk.completions.create(model=MODEL, prompt="a dog", max_tokens=3, extra_body={"ignore_eos": True})
    assert short.usage.completion_tokens == 3
    rest = list(long)
    assert len(received) + len(rest) >= 60  # the long one was still streaming when the short one ended


def _metric(server: LiveServer, name: str) -> float:
    for line in httpx.get(f"{server.url}/metrics", timeout=60).text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


def test_n_samples_pay_the_prompt_once_and_metrics_show_it(live, tenant_key):
    server, _ = live
    sdk = client(server, tenant_key[1])
    prompt = "zero one two three four five six seven eight nine " * 3
    before = _metric(server, "resonance_llm_prefill_tokens_total")
    out = sdk.completions.create(model=MODEL, prompt=prompt, max_tokens=4, n=8, seed=2)
    assert len(out.choices) == 8
    assert _metric(server, "resonance_llm_prefill_tokens_total") - before == out.usage.prompt_tokens
    assert _metric(server, "resonance_llm_prefix_cache_hit_rate") > 0
    assert _metric(server, "resonance_llm_time_to_first_token_seconds_count") > 0
    for name in ("resonance_llm_queue_depth", "resonance_llm_batch_size", "resonance_llm_tokens_per_second"):
        _metric(server, name)


def test_tenant_limits_answer_429_and_400_naming_the_limit(tmp_path):
    server, _ = _start(tmp_path, RESONANCE_OPENAI_SEQUENCES="2", RESONANCE_OPENAI_TOKENS_PER_MINUTE="450")
    try:
        _, key = _tenant(server.db_url)
        sdk = client(server, key)
        with pytest.raises(openai.BadRequestError, match="sequences"):
            sdk.completions.create(model=MODEL, prompt="a", max_tokens=2, n=3)
        sdk.completions.create(model=MODEL, prompt="a", max_tokens=100, n=2, extra_body={"ignore_eos": True})
        with pytest.raises(
            openai.RateLimitError, match="tokens per minute"
        ) as caught:  # 201 used + 253 > 450
            sdk.completions.create(model=MODEL, prompt="a", max_tokens=126, n=2)
        assert int(caught.value.response.headers["retry-after"]) >= 1
        _, fresh = _tenant(server.db_url)  # another tenant is not held back by this one's limits
        assert client(server, fresh).completions.create(model=MODEL, prompt="a", max_tokens=2).choices
    finally:
        server.stop()
