"""Agent Lightning 0.3.0's own client (``LightningStoreClient``, its ``OtelTracer`` exporting OTLP,
``emit_reward``) runs unmodified against ``resonance serve`` through a tenant's store URL, from its own
virtual environment; we then read what it stored with the tenant's Bearer key."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "traces"))
from agl_venv import require_agentlightning, run_agl  # noqa: E402
from live_store import agl_server_fixture  # noqa: E402, F401  (a fixture)

from resonance_os.api.persistence.db import Database  # noqa: E402
from resonance_os.api.persistence.tenants import create_tenant  # noqa: E402
from resonance_os.traces import Span, assign_credit, spans_to_transitions  # noqa: E402

RUNNER = r"""
import asyncio, json, sys
import agentlightning as agl
from opentelemetry import trace
from agentlightning import LightningStoreClient, TracerTraceToTriplet, emit_reward
from agentlightning.types import RolloutConfig, Span

async def main(url):
    store = LightningStoreClient(url)
    out = {}
    resources = await store.add_resources({"main_llm": agl.LLM(endpoint="http://127.0.0.1:9/v1", model="policy")})
    queued = await store.enqueue_rollout(input={"question": "2+2"}, mode="train",
                                         config=RolloutConfig(max_attempts=2, retry_condition=["failed"]))
    out["queued_resources"] = queued.resources_id == resources.resources_id
    ro = await store.dequeue_rollout(worker_id="runner-0")
    rid, aid = ro.rollout_id, ro.attempt.attempt_id
    out["dequeued"] = [rid == queued.rollout_id, ro.attempt.sequence_id, ro.status]
    await store.update_worker("runner-0", {"cpu": 0.5})
    tracer = agl.OtelTracer()
    with tracer.lifespan(store):
        async with tracer.trace_context("rollout", rollout_id=rid, attempt_id=aid):
            otel = trace.get_tracer("agent")
            with otel.start_as_current_span("openai.chat.completion", attributes={
                    "prompt_token_ids": [1, 2, 3], "response_token_ids": [4, 5], "gen_ai.response.id": "r1"}):
                pass
            emit_reward(0.25)
            with otel.start_as_current_span("openai.chat.completion", attributes={
                    "prompt_token_ids": [1, 2, 3, 4, 5, 6], "response_token_ids": [7], "gen_ai.response.id": "r2"}):
                pass
    seq = await store.get_next_span_sequence_id(rid, aid)
    final = Span.from_core_fields(emit_reward(1.0, propagate=False), rollout_id=rid, attempt_id=aid, sequence_id=seq)
    await store.add_span(final)
    attempt = await store.update_attempt(rid, aid, status="succeeded")
    out["attempt_status"] = attempt.status
    spans = await store.query_spans(rid, attempt_id="latest")
    out["span_names"] = sorted(s.name for s in spans)
    out["triplets"] = [[t.prompt["token_ids"], t.response["token_ids"], t.reward] for t in TracerTraceToTriplet().adapt(list(spans))]
    done = await store.wait_for_rollouts(rollout_ids=[rid], timeout=0.1)
    out["finished"] = [r.status for r in done]
    out["rollout"] = (await store.get_rollout_by_id(rid)).status
    out["attempts"] = [a.status for a in await store.query_attempts(rid)]
    out["latest_attempt"] = (await store.get_latest_attempt(rid)).attempt_id == aid
    out["latest_resources"] = (await store.get_latest_resources()).resources_id == resources.resources_id
    out["workers"] = [(w.worker_id, w.status) for w in await store.query_workers()]
    out["rollouts_total"] = (await store.query_rollouts(status_in=["succeeded"])).total
    out["statistics"] = (await store.statistics())["total_spans"]
    out["empty_dequeue"] = await store.dequeue_rollout(worker_id="runner-0") is None
    out["rid"] = rid
    await store.close()
    print(json.dumps(out))

asyncio.run(main(sys.argv[1]))
"""


@pytest.mark.slow
def test_agentlightning_runner_works_unmodified_through_a_store_url(agl_server, monkeypatch):
    require_agentlightning()
    monkeypatch.setenv("RESONANCE_HOME", str(agl_server.home))
    db = Database(agl_server.db_url)
    key = create_tenant(db, f"agl-client-{uuid.uuid4().hex[:8]}")
    db.dispose()
    headers = {"Authorization": f"Bearer {key}"}
    url = httpx.post(f"{agl_server.url}/v1/agl-store-urls", headers=headers).json()["url"]

    out = json.loads(run_agl(RUNNER, url).stdout.strip().splitlines()[-1])

    assert out["queued_resources"] and out["dequeued"] == [True, 1, "preparing"]
    assert (
        out["attempt_status"] == "succeeded"
        and out["rollout"] == "succeeded"
        and out["finished"] == ["succeeded"]
    )
    assert out["span_names"] == sorted(["openai.chat.completion"] * 2 + ["agentlightning.annotation"] * 2)
    assert out["triplets"] == [[[1, 2, 3], [4, 5], 0.25], [[1, 2, 3, 4, 5, 6], [7], 1.0]]
    assert out["attempts"] == ["succeeded"] and out["latest_attempt"] and out["latest_resources"]
    assert out["workers"] == [["runner-0", "idle"]] and out["rollouts_total"] == 1 and out["statistics"] == 4
    assert out["empty_dequeue"]

    page = httpx.post(
        f"{agl_server.url}/v1/agl/spans/search", json={"rollout_id": out["rid"]}, headers=headers
    ).json()
    transitions = spans_to_transitions([Span.from_dict(s) for s in page["items"]])
    assert [[t.prompt_token_ids, t.response_token_ids, t.reward] for t in transitions] == out["triplets"]
    assert assign_credit(transitions) == [1.0, 1.0]
