"""A SQL agent written only with the ``openai`` SDK and OpenTelemetry: it answers a question about
``shop.db`` by writing SQL, running its reply with its ``run_sql`` tool, and writing a corrected query
when the database reports an error (up to three queries; a reply with no SQL statement is an error
too). Its answer is the value its last successful query returns; its reward is 1.0 when that value
matches the task's answer, else 0.0.

Each ``run_sql`` call is an OpenTelemetry span (``execute_tool run_sql``, OpenTelemetry's GenAI
``gen_ai.operation.name = "execute_tool"``), status ``ERROR`` when the SQL fails, exported over OTLP to
the store; its LLM calls need no tracing (the runner gives it the recorded endpoint's base URL).

``run(task, llm)`` is what a runner calls (``resonance agents train``); ``demonstration(task)`` is the
conversation the agent opens for a task with the task's gold SQL as the reply (``resonance agents
warmup``'s supervised warm-up); ``python agent.py QUESTION`` asks one question against a plain
OpenAI-compatible server (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``--model``).
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
from pathlib import Path
from typing import Any

import openai
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode, Tracer

DB = Path(os.environ.get("SQL_AGENT_DB", Path(__file__).resolve().parent / "shop.db"))
MAX_QUERIES = 3
SYSTEM = """You answer questions about a SQLite database by writing one SQL query.
Tables:
customers(id, name, city)
products(id, name, category, price)
orders(id, customer_id, product_id, quantity)
Reply with the SQL query only."""
FENCE = re.compile(r"```(?:sql)?\s*(.*?)(?:```|$)", re.S | re.I)


def extract_sql(reply: str) -> str:
    """The query in a reply: inside a code fence if there is one, from its first SELECT/WITH on."""
    fenced = FENCE.search(reply)
    text = fenced.group(1) if fenced else reply
    start = re.search(r"\b(SELECT|WITH)\b", text, re.I)
    text = text[start.start() :] if start else text
    return text.split(";")[0].strip()


def run_sql(query: str, tracer: Tracer) -> list[tuple[Any, ...]]:
    """The tool: the rows of a read-only query (an error propagates, its span marked ERROR)."""
    with tracer.start_as_current_span(
        "execute_tool run_sql", attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "run_sql",
                                            "db.query.text": query},
    ) as span:  # fmt: skip
        try:
            if not query:
                raise sqlite3.OperationalError("no SQL statement in the reply")
            con = sqlite3.connect(f"file:{DB}?mode=ro", uri=True)
            try:
                return con.execute(query).fetchmany(20)
            finally:
                con.close()
        except sqlite3.Error as exc:
            span.set_status(Status(StatusCode.ERROR, str(exc)))
            raise


def matches(value: Any, answer: Any) -> bool:
    try:
        return abs(float(value) - float(answer)) < 1e-6
    except (TypeError, ValueError):
        return str(value).strip().lower() == str(answer).strip().lower()


def opening(question: str) -> list[dict[str, str]]:
    """The messages of the agent's first call for ``question``."""
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]


def demonstration(task: dict[str, Any]) -> dict[str, Any]:
    """The agent's first call for ``task`` answered with the task's gold SQL (a warm-up example)."""
    return {"prompt": opening(task["question"]), "completion": task["sql"]}


def solve(question: str, client: openai.OpenAI, model: str, sampling: dict[str, Any], tracer: Tracer) -> Any:
    """Query until a query runs (at most MAX_QUERIES); the first cell of the last result, or None."""
    messages = opening(question)
    for _ in range(MAX_QUERIES):
        reply = client.chat.completions.create(model=model, messages=messages, logprobs=True, **sampling)
        text = reply.choices[0].message.content or ""
        messages.append({"role": "assistant", "content": text})
        try:
            rows = run_sql(extract_sql(text), tracer)
        except sqlite3.Error as exc:
            messages.append(
                {"role": "user", "content": f"Error: {exc}. Reply with a corrected SQL query only."}
            )
            continue
        return rows[0][0] if rows and rows[0] else None
    return None


def run(task: dict[str, Any], llm: dict[str, Any]) -> float:
    """One rollout (what ``resonance_os.traces.runner`` calls): the reward for this task."""
    provider = TracerProvider(
        resource=Resource.create(
            {"agentlightning.rollout_id": llm["rollout_id"], "agentlightning.attempt_id": llm["attempt_id"]}
        )
    )
    provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=llm["otlp_endpoint"], headers=llm["otlp_headers"]))
    )
    client = openai.OpenAI(base_url=llm["base_url"], api_key=llm["api_key"], max_retries=1, timeout=600)
    sampling = {k: v for k, v in llm["sampling"].items() if k in ("temperature", "max_tokens", "top_p")}
    try:
        value = solve(task["question"], client, llm["model"], sampling, provider.get_tracer("sql-agent"))
    finally:
        provider.shutdown()  # every tool span is exported before the reward is recorded
    return 1.0 if value is not None and matches(value, task["answer"]) else 0.0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Ask the SQL agent one question.")
    parser.add_argument("question")
    parser.add_argument("--model", default="SmolLM2-135M-Instruct")
    args = parser.parse_args()
    tracer = TracerProvider().get_tracer("sql-agent")
    print(solve(args.question, openai.OpenAI(), args.model, {"temperature": 0, "max_tokens": 64}, tracer))
