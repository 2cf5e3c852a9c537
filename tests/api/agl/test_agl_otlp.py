"""POST /v1/traces on a real server: the OpenTelemetry SDK's own OTLP/HTTP exporter (protobuf, gzip)
sends spans that are stored under their rollout and attempt; spans without ids are counted and reported
in the reply, malformed bodies get OTLP's 400 google.rpc.Status, tenants stay apart, the quota is 507."""

from __future__ import annotations

import gzip
import uuid

import httpx
import pytest
from fastapi.testclient import TestClient
from google.rpc.status_pb2 import Status
from live_store import agl_server_fixture  # noqa: F401  (a fixture)
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from resonance_os.api.hr_server import create_app
from resonance_os.api.persistence.db import Database
from resonance_os.api.persistence.tenants import create_tenant
from resonance_os.traces import Span, assign_credit, spans_to_transitions

PB = {"Content-Type": "application/x-protobuf"}


class Store:
    """One tenant's view of a live server."""

    def __init__(self, url: str, key: str) -> None:
        self.url = url
        self.headers = {"Authorization": f"Bearer {key}"}

    def call(self, method: str, path: str, **kwargs):
        response = httpx.request(
            method, f"{self.url}/v1/agl{path}", headers=self.headers, timeout=30, **kwargs
        )
        response.raise_for_status()
        return response.json()

    def rollout(self) -> tuple[str, str]:
        ro = self.call("POST", "/rollouts", json={"input": {"question": "2+2"}, "mode": "train"})
        return ro["rollout_id"], ro["attempt"]["attempt_id"]

    def spans(self, rollout_id: str) -> list[dict]:
        return self.call("POST", "/spans/search", json={"rollout_id": rollout_id})["items"]


@pytest.fixture
def server(agl_server, monkeypatch):
    monkeypatch.setenv("RESONANCE_HOME", str(agl_server.home))  # the server's key pepper
    return agl_server


def _tenant(server, prefix: str) -> Store:
    db = Database(server.db_url)
    key = create_tenant(db, f"{prefix}-{uuid.uuid4().hex[:8]}")
    db.dispose()
    return Store(server.url, key)


@pytest.fixture
def store(server):
    return _tenant(server, "otlp")


def _counter(server, outcome: str) -> float:
    for line in httpx.get(f"{server.url}/metrics").text.splitlines():
        if line.startswith(f'resonance_agl_spans_total{{outcome="{outcome}"}}'):
            return float(line.split()[-1])
    return 0.0


def _agent_spans(rollout_id: str | None, attempt_id: str | None, n_calls: int = 2) -> list:
    """Finished spans of an agent run (LLM calls with token ids, rewards), made by the SDK."""
    exporter = InMemorySpanExporter()
    ids = (
        {"agentlightning.rollout_id": rollout_id, "agentlightning.attempt_id": attempt_id}
        if rollout_id
        else {}
    )
    provider = TracerProvider(resource=Resource.create({"service.name": "agent", **ids}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent")
    with tracer.start_as_current_span("rollout.session"):
        for i in range(n_calls):
            with tracer.start_as_current_span(
                "openai.chat.completion",
                attributes={
                    "prompt_token_ids": [1, 2, i],
                    "response_token_ids": [7, i],
                    "gen_ai.response.id": f"r{i}",
                },
            ):
                pass
            with tracer.start_as_current_span(
                "agentlightning.annotation",
                attributes={
                    "agentlightning.reward.0.name": "primary",
                    "agentlightning.reward.0.value": float(i),
                },
            ):
                pass
    return list(exporter.get_finished_spans())


def _export(
    endpoint: str, spans: list, headers: dict | None = None, gzip_body: bool = False
) -> SpanExportResult:
    exporter = OTLPSpanExporter(
        endpoint=endpoint,
        headers=headers or {},
        compression=Compression.Gzip if gzip_body else Compression.NoCompression,
    )
    try:
        return exporter.export(spans)
    finally:
        exporter.shutdown()


@pytest.mark.parametrize("gzip_body", [False, True], ids=["plain", "gzip"])
def test_sdk_exporter_spans_are_stored_under_their_rollout_and_attempt(store, gzip_body):
    rollout_id, attempt_id = store.rollout()
    spans = _agent_spans(rollout_id, attempt_id, n_calls=3)
    assert _export(f"{store.url}/v1/traces", spans, store.headers, gzip_body) == SpanExportResult.SUCCESS
    stored = store.spans(rollout_id)
    assert len(stored) == 7
    assert {s["attempt_id"] for s in stored} == {attempt_id}
    assert sorted(s["sequence_id"] for s in stored) == list(range(1, 8))
    assert {s["span_id"] for s in stored} == {format(s.context.span_id, "016x") for s in spans}
    llm = [s for s in stored if s["name"] == "openai.chat.completion"]
    assert (
        llm[0]["attributes"]["prompt_token_ids"] == [1, 2, 0]
        and llm[0]["resource"]["attributes"]["service.name"] == "agent"
    )
    assert store.call("GET", f"/rollouts/{rollout_id}")["status"] == "running"
    transitions = spans_to_transitions([Span.from_dict(s) for s in stored])
    assert [t.reward for t in transitions] == [0.0, 1.0, 2.0] and assign_credit(transitions) == [2.0] * 3


def test_batches_sent_again_are_not_stored_twice(store):
    rollout_id, attempt_id = store.rollout()
    body = encode_spans(_agent_spans(rollout_id, attempt_id)).SerializeToString()
    for _ in range(3):  # an exporter's retries after a lost reply
        reply = httpx.post(f"{store.url}/v1/traces", content=body, headers={**PB, **store.headers})
        assert reply.status_code == 200
    assert len(store.spans(rollout_id)) == 5


def test_spans_without_ids_are_counted_and_reported(store, server):
    rollout_id, attempt_id = store.rollout()
    before = {outcome: _counter(server, outcome) for outcome in ("no_ids", "stored")}
    body = encode_spans(_agent_spans(rollout_id, attempt_id) + _agent_spans(None, None, n_calls=1))
    reply = httpx.post(
        f"{store.url}/v1/traces", content=body.SerializeToString(), headers={**PB, **store.headers}
    )
    assert reply.status_code == 200 and reply.headers["content-type"] == "application/x-protobuf"
    parsed = ExportTraceServiceResponse.FromString(reply.content)
    assert parsed.partial_success.rejected_spans == 3
    assert "agentlightning.rollout_id" in parsed.partial_success.error_message
    assert len(store.spans(rollout_id)) == 5
    assert _counter(server, "no_ids") - before["no_ids"] == 3
    assert _counter(server, "stored") - before["stored"] == 5


@pytest.mark.parametrize(
    "content, headers, fragment",
    [
        (b"\xff\xff\xff not protobuf", PB, "not an OTLP ExportTraceServiceRequest"),
        (b"{}", {"Content-Type": "application/json"}, "unsupported Content-Type"),
        (b"not gzip", {**PB, "Content-Encoding": "gzip"}, "cannot be decompressed"),
        (gzip.compress(b"\x00" * 64)[:20], {**PB, "Content-Encoding": "gzip"}, "truncated"),
        (b"", {**PB, "Content-Encoding": "br"}, "unsupported Content-Encoding"),
    ],
)
def test_malformed_bodies_get_a_400_status(store, content, headers, fragment):
    reply = httpx.post(f"{store.url}/v1/traces", content=content, headers={**headers, **store.headers})
    assert reply.status_code == 400 and reply.headers["content-type"] == "application/x-protobuf"
    status = Status.FromString(reply.content)
    assert status.code == 3 and fragment in status.message


def test_a_gzip_bomb_is_refused_without_inflating_it(store):
    bomb = gzip.compress(b"\x00" * (40 * 1024 * 1024))  # 40 MiB of zeros in ~40 KB
    reply = httpx.post(
        f"{store.url}/v1/traces", content=bomb, headers={**PB, "Content-Encoding": "gzip", **store.headers}
    )
    assert reply.status_code == 400 and "larger than" in Status.FromString(reply.content).message


def test_a_tenant_cannot_write_into_anothers_rollout(store, server):
    rollout_id, attempt_id = store.rollout()
    intruder = _tenant(server, "intruder")
    body = encode_spans(_agent_spans(rollout_id, attempt_id)).SerializeToString()
    reply = httpx.post(f"{server.url}/v1/traces", content=body, headers={**PB, **intruder.headers})
    parsed = ExportTraceServiceResponse.FromString(reply.content)
    assert reply.status_code == 200 and parsed.partial_success.rejected_spans == 5
    assert rollout_id in parsed.partial_success.error_message
    assert store.spans(rollout_id) == [] and intruder.spans(rollout_id) == []
    unauthenticated = httpx.post(f"{server.url}/v1/traces", content=body, headers=PB)
    assert unauthenticated.status_code == 401 and Status.FromString(unauthenticated.content).code == 16


def test_store_url_takes_the_sdk_exporter_without_credentials(store):
    rollout_id, attempt_id = store.rollout()
    url = httpx.post(f"{store.url}/v1/agl-store-urls", headers=store.headers).json()["url"]
    provider = TracerProvider(
        resource=Resource.create(
            {"agentlightning.rollout_id": rollout_id, "agentlightning.attempt_id": attempt_id}
        )
    )
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces")))
    with provider.get_tracer("agent").start_as_current_span("openai.chat.completion"):
        pass
    assert provider.force_flush()
    provider.shutdown()
    assert [s["name"] for s in store.spans(rollout_id)] == ["openai.chat.completion"]


def test_over_quota_the_export_is_refused_with_507(db_url):
    app = create_app(db_url, quota_rows=6, rate_limit_per_s=1000.0, rate_limit_burst=1000.0)
    key = create_tenant(app.state.service.db, "otlp-quota")
    headers = {"Authorization": f"Bearer {key}"}
    with TestClient(app) as client:
        ro = client.post("/v1/agl/rollouts", json={"input": 1}, headers=headers).json()  # 2 rows
        rollout_id, attempt_id = ro["rollout_id"], ro["attempt"]["attempt_id"]
        body = encode_spans(_agent_spans(rollout_id, attempt_id)).SerializeToString()  # 5 spans: over 6
        reply = client.post("/v1/traces", content=body, headers={**PB, **headers})
        assert reply.status_code == 507
        status = Status.FromString(reply.content)
        assert status.code == 8 and "storage quota" in status.message
        assert (
            client.post("/v1/agl/spans/search", json={"rollout_id": rollout_id}, headers=headers).json()[
                "total"
            ]
            == 0
        )
