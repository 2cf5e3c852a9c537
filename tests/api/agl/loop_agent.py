"""A two-call agent for the trainer loop's test, written as any agent is: the ``openai`` SDK for its
calls (to the base URL the runner gives it) and the OpenTelemetry SDK for a tool span; nothing of ours.
Its tool fails when the task says so (an ERROR span, for AIR); its reward is the length of its last reply
modulo 5, so rollouts of one task score differently."""

from __future__ import annotations

import openai
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode


def run(task: dict, llm: dict) -> float:
    client = openai.OpenAI(base_url=llm["base_url"], api_key=llm["api_key"], max_retries=0)
    provider = TracerProvider(
        resource=Resource.create(
            {"agentlightning.rollout_id": llm["rollout_id"], "agentlightning.attempt_id": llm["attempt_id"]}
        )
    )
    provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=llm["otlp_endpoint"], headers=llm["otlp_headers"]))
    )
    tracer = provider.get_tracer("loop-agent")
    sampling = {"temperature": llm["sampling"]["temperature"], "max_tokens": llm["sampling"]["max_tokens"]}
    messages = [{"role": "user", "content": task["question"]}]
    first = client.chat.completions.create(model=llm["model"], messages=messages, logprobs=True, **sampling)
    with tracer.start_as_current_span(
        "execute_tool lookup", attributes={"gen_ai.operation.name": "execute_tool"}
    ) as span:
        if task.get("tool_fails"):
            span.set_status(Status(StatusCode.ERROR, "no such row"))
    messages += [
        {"role": "assistant", "content": first.choices[0].message.content},
        {"role": "user", "content": "and then?"},
    ]
    second = client.chat.completions.create(model=llm["model"], messages=messages, logprobs=True, **sampling)
    provider.shutdown()
    return float(len(second.choices[0].message.content) % 5)
