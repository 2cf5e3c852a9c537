"""The OpenAI endpoint recorded per rollout: an agent that knows nothing of traces calls
``/rollout/{rollout_id}/attempt/{attempt_id}/v1/chat/completions`` with the official ``openai`` SDK, and
each call is stored as a span of that attempt with the exact token ids and log-probabilities, which
become transitions (a real server on 127.0.0.1 serving the tiny model)."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import httpx
import pytest

openai = pytest.importorskip("openai")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "llm"))
from live_store import LiveServer  # noqa: E402
from tiny_lm import make_model, make_tokenizer  # noqa: E402

from resonance_os.api.persistence.db import Database  # noqa: E402
from resonance_os.api.persistence.tenants import create_tenant  # noqa: E402
from resonance_os.traces import (  # noqa: E402
    Span,
    TransitionConfig,
    assign_credit,
    spans_to_transitions,
)

MODEL = "tiny"
QUESTION = [{"role": "user", "content": "the cat sat on the mat"}]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("recording")
    tokenizer = make_tokenizer()
    make_model(len(tokenizer), context=128).save_pretrained(tmp / MODEL)
    tokenizer.save_pretrained(tmp / MODEL)
    env = {
        "RESONANCE_HOME": str(tmp / "home"),
        "RESONANCE_OPENAI_MODEL": str(tmp / MODEL),
        "RESONANCE_OPENAI_RUNS": str(tmp / "runs"),
        "RESONANCE_OPENAI_MAX_TOKENS": "16",
    }
    server = LiveServer(f"sqlite:///{tmp / 'service.db'}", env=env).start(timeout=180.0)
    server.home = tmp / "home"
    yield server
    server.stop()
    assert "Traceback" not in server.output()


@pytest.fixture
def tenant(served, monkeypatch):
    monkeypatch.setenv("RESONANCE_HOME", str(served.home))
    db = Database(served.db_url)
    key = create_tenant(db, f"recorded-{uuid.uuid4().hex[:8]}")
    db.dispose()
    return key


def test_calls_under_a_rollout_are_recorded_with_their_token_ids(served, tenant):
    auth = {"Authorization": f"Bearer {tenant}"}
    store = httpx.Client(base_url=f"{served.url}/v1/agl", headers=auth, timeout=60)
    ro = store.post("/rollouts", json={"input": QUESTION}).json()
    rid, aid = ro["rollout_id"], ro["attempt"]["attempt_id"]
    agent = openai.OpenAI(
        base_url=f"{served.url}/rollout/{rid}/attempt/{aid}/v1", api_key=tenant, max_retries=0
    )

    first = agent.chat.completions.create(model=MODEL, messages=QUESTION, max_tokens=6, logprobs=True, seed=1)
    assert "token_ids" not in first.choices[0].model_dump() and first.usage.completion_tokens >= 1
    follow_up = [
        *QUESTION,
        {"role": "assistant", "content": first.choices[0].message.content},
        {"role": "user", "content": "why?"},
    ]
    parent = "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"
    second = agent.chat.completions.create(
        model=MODEL,
        messages=follow_up,
        max_tokens=4,
        extra_headers={"traceparent": parent},
        extra_body={"return_token_ids": True},
    )
    assert len(second.choices[0].model_dump()["token_ids"]) == second.usage.completion_tokens
    store.post("/spans", json=_reward_span(rid, aid, 1.0)).raise_for_status()

    plain = httpx.post(
        f"{served.url}/v1/chat/completions", headers=auth, timeout=60,
        json={"model": MODEL, "messages": QUESTION, "max_tokens": 1, "return_token_ids": True},
    ).json()  # fmt: skip
    spans = store.post("/spans/search", json={"rollout_id": rid}).json()["items"]
    calls = [s for s in spans if s["name"] == "openai.chat.completion"]
    assert len(calls) == 2 and {s["attempt_id"] for s in calls} == {aid}
    assert calls[0]["attributes"]["prompt_token_ids"] == plain["prompt_token_ids"]
    assert len(calls[0]["attributes"]["response_token_ids"]) == first.usage.completion_tokens
    logprobs = [e.logprob for e in first.choices[0].logprobs.content]
    assert (
        calls[0]["attributes"]["logprobs.content"]
        and calls[0]["attributes"]["gen_ai.response.id"] == first.id
    )
    assert calls[1]["attributes"]["response_token_ids"] == second.choices[0].model_dump()["token_ids"]
    assert calls[1]["trace_id"] == "ab" * 16 and calls[1]["parent_id"] == "cd" * 8
    assert calls[1]["attributes"]["gen_ai.prompt.2.content"] == "why?"
    assert store.get(f"/rollouts/{rid}").json()["status"] == "running"

    transitions = spans_to_transitions([Span.from_dict(s) for s in spans])
    assert [len(t.response_token_ids) for t in transitions] == [
        first.usage.completion_tokens,
        second.usage.completion_tokens,
    ]
    assert [e["logprob"] for e in transitions[0].logprobs] == pytest.approx(logprobs)
    assert (
        transitions[1].prompt_token_ids[: len(transitions[0].prompt_token_ids)]
        == transitions[0].prompt_token_ids
    )
    assert assign_credit(transitions) == [1.0, 1.0]


def test_a_store_url_serves_the_recorded_endpoint_and_errors_are_openais(served, tenant):
    auth = {"Authorization": f"Bearer {tenant}"}
    url = httpx.post(f"{served.url}/v1/agl-store-urls", headers=auth).json()["url"]
    ro = httpx.post(f"{served.url}/v1/agl/rollouts", headers=auth, json={"input": 1}).json()
    rid, aid = ro["rollout_id"], ro["attempt"]["attempt_id"]
    agent = openai.OpenAI(base_url=f"{url}/rollout/{rid}/attempt/{aid}/v1", api_key="unused", max_retries=0)
    agent.chat.completions.create(model=MODEL, messages=QUESTION, max_tokens=2)
    page = httpx.post(f"{served.url}/v1/agl/spans/search", headers=auth, json={"rollout_id": rid}).json()
    assert [s["name"] for s in page["items"]] == ["openai.chat.completion"]

    lost = openai.OpenAI(
        base_url=f"{url}/rollout/{rid}/attempt/at-missing/v1", api_key="unused", max_retries=0
    )
    with pytest.raises(openai.NotFoundError, match="at-missing"):
        lost.chat.completions.create(model=MODEL, messages=QUESTION, max_tokens=2)
    stranger = openai.OpenAI(
        base_url=f"{served.url}/rollout/{rid}/attempt/{aid}/v1", api_key="rsk_" + "x" * 43, max_retries=0
    )
    with pytest.raises(openai.AuthenticationError):
        stranger.chat.completions.create(model=MODEL, messages=QUESTION, max_tokens=2)


def _recorded(served, auth, rid):
    page = httpx.post(f"{served.url}/v1/agl/spans/search", headers=auth, json={"rollout_id": rid}).json()
    return page["items"]


def test_streamed_chat_calls_are_recorded_with_the_tokens_the_client_saw(served, tenant):
    auth = {"Authorization": f"Bearer {tenant}"}
    ro = httpx.post(f"{served.url}/v1/agl/rollouts", headers=auth, json={"input": 1}).json()
    rid, aid = ro["rollout_id"], ro["attempt"]["attempt_id"]
    agent = openai.OpenAI(
        base_url=f"{served.url}/rollout/{rid}/attempt/{aid}/v1", api_key=tenant, max_retries=0
    )
    whole = agent.chat.completions.create(
        model=MODEL, messages=QUESTION, max_tokens=8, temperature=0, extra_body={"return_token_ids": True}
    )
    chunks = list(
        agent.chat.completions.create(
            model=MODEL, messages=QUESTION, max_tokens=8, temperature=0, stream=True, logprobs=True
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    assert all("token_ids" not in c.choices[0].model_dump() for c in chunks if c.choices)  # not asked for
    calls = [s for s in _recorded(served, auth, rid) if s["name"] == "openai.chat.completion"]
    assert len(calls) == 2
    streamed = calls[1]["attributes"]
    assert streamed["gen_ai.request.stream"] is True and streamed["gen_ai.completion.0.content"] == text
    assert streamed["response_token_ids"] == whole.choices[0].model_dump()["token_ids"]
    assert streamed["prompt_token_ids"] == calls[0]["attributes"]["prompt_token_ids"]
    assert len(json.loads(streamed["logprobs.content"])) == len(streamed["response_token_ids"])


def test_text_completions_are_recorded_streamed_or_not(served, tenant):
    auth = {"Authorization": f"Bearer {tenant}"}
    ro = httpx.post(f"{served.url}/v1/agl/rollouts", headers=auth, json={"input": 2}).json()
    rid, aid = ro["rollout_id"], ro["attempt"]["attempt_id"]
    agent = openai.OpenAI(
        base_url=f"{served.url}/rollout/{rid}/attempt/{aid}/v1", api_key=tenant, max_retries=0
    )
    whole = agent.completions.create(
        model=MODEL, prompt="the cat sat", max_tokens=6, temperature=0, logprobs=1
    )
    streamed = list(
        agent.completions.create(
            model=MODEL, prompt="the cat sat", max_tokens=6, temperature=0, stream=True,
            extra_body={"return_token_ids": True},
        )
    )  # fmt: skip
    assert "".join(c.choices[0].text for c in streamed) == whole.choices[0].text
    ids_seen = [t for c in streamed for t in c.choices[0].model_dump().get("token_ids") or []]
    spans = _recorded(served, auth, rid)
    assert [s["name"] for s in spans] == ["openai.completion", "openai.completion"]
    first, second = (s["attributes"] for s in spans)
    assert first["response_token_ids"] == second["response_token_ids"] == ids_seen
    assert first["prompt_token_ids"] == second["prompt_token_ids"] and len(first["prompt_token_ids"]) >= 1
    assert first["gen_ai.prompt.0.content"] == "the cat sat"
    transitions = spans_to_transitions(
        [Span.from_dict(s) for s in spans], TransitionConfig(llm_call_match=r"openai\.(chat\.)?completion")
    )
    assert [e["logprob"] for e in transitions[0].logprobs] == pytest.approx(
        whole.choices[0].logprobs.token_logprobs
    )


def _reward_span(rollout_id: str, attempt_id: str, value: float) -> dict:
    return {
        "rollout_id": rollout_id, "attempt_id": attempt_id, "sequence_id": 100,
        "trace_id": "ef" * 16, "span_id": "12" * 8, "parent_id": None, "name": "agentlightning.annotation",
        "status": {"status_code": "OK", "description": None},
        "attributes": {"agentlightning.reward.0.name": "primary", "agentlightning.reward.0.value": value},
        "events": [], "links": [], "start_time": 4e9, "end_time": 4e9, "context": None, "parent": None,
        "resource": {"attributes": {}, "schema_url": ""},
    }  # fmt: skip
