"""Spans of a small agent run, made by the real OpenTelemetry SDK and passed through the OTLP wire format
(the SDK's own protobuf encoder, our decoder), exactly as the server receives them."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from resonance_os.api.agl.otlp import decode_export
from resonance_os.traces import Span

T0 = 1_800_000_000 * 10**9
MS = 10**6


class Clock:
    """Explicit span times (nanoseconds), so that start/end order is what a test says."""

    def __init__(self) -> None:
        self.now = T0

    def tick(self, ms: int = 1) -> int:
        self.now += ms * MS
        return self.now


class AgentTracer:
    def __init__(self, rollout_id: str = "ro-000000000001", attempt_id: str = "at-00000001") -> None:
        self.exporter = InMemorySpanExporter()
        resource = Resource.create(
            {"agentlightning.rollout_id": rollout_id, "agentlightning.attempt_id": attempt_id}
        )
        self.provider = TracerProvider(resource=resource)
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("agent")
        self.clock = Clock()

    @contextmanager
    def span(self, name: str, attributes: dict | None = None, error: str | None = None):
        span = self.tracer.start_span(name, attributes=attributes or {}, start_time=self.clock.tick())
        with trace.use_span(span, end_on_exit=False):
            yield span
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, error))
        span.end(end_time=self.clock.tick())

    def llm_call(self, prompt_ids: list[int], response_ids: list[int], response_id: str, **extra) -> None:
        attributes = {
            "gen_ai.system": "OpenAI",
            "gen_ai.request.model": "policy",
            "gen_ai.response.id": response_id,
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "question",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "answer",
            "prompt_token_ids": prompt_ids,
            "response_token_ids": response_ids,
            **extra,
        }
        with self.span("openai.chat.completion", attributes):
            self.clock.tick(5)

    def reward(self, value: float, **dimensions: float) -> None:
        """What ``agl.emit_reward(value)`` records: an annotation span with flattened reward dimensions."""
        attributes = {"agentlightning.reward.0.name": "primary", "agentlightning.reward.0.value": value}
        for i, (name, extra) in enumerate(dimensions.items(), start=1):
            attributes[f"agentlightning.reward.{i}.name"] = name
            attributes[f"agentlightning.reward.{i}.value"] = extra
        with self.span("agentlightning.annotation", attributes):
            pass

    def tool(self, name: str, error: str | None = None) -> None:
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
        with self.span(f"execute_tool {name}", attributes, error=error):
            self.clock.tick(2)

    def otlp_bytes(self) -> bytes:
        self.provider.force_flush()
        return encode_spans(self.exporter.get_finished_spans()).SerializeToString()

    def span_dicts(self) -> list[dict]:
        decoded = decode_export(self.otlp_bytes())
        for i, span in enumerate(decoded.spans, start=1):
            span["sequence_id"] = i
        return decoded.spans

    def spans(self) -> list[Span]:
        return [Span.from_dict(d) for d in self.span_dicts()]


def run(script: Callable[[AgentTracer], None], **ids) -> AgentTracer:
    agent = AgentTracer(**ids)
    script(agent)
    return agent


def two_turns_with_failed_tool(agent: AgentTracer) -> None:
    """A session: call 1, a tool that fails, an intermediate reward, call 2, the final reward."""
    with agent.span("rollout.session", {"agentops.span.kind": "session"}):
        agent.llm_call([1, 2, 3], [10, 11], "resp-1")
        agent.tool("run_sql", error="no such table: users")
        agent.reward(0.25)
        agent.llm_call([1, 2, 3, 10, 11, 4], [12, 13, 14], "resp-2")
        agent.reward(1.0, accuracy=1.0)
