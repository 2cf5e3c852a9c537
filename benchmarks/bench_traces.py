"""Span ingestion: OTLP/HTTP span exports to ``resonance serve`` (durable: SQLite, one tenant, Bearer key)
against agentlightning 0.3.0's own store server (``agl store``: in-memory), side by side in one run.

Both servers get the same protobuf requests (made by the OpenTelemetry SDK's encoder): each request is
one rollout's batch of ``--spans`` spans, alternating LLM calls (prompt and response token ids, messages)
and reward annotations, routed by ``agentlightning.rollout_id``/``attempt_id`` resource attributes.
``--concurrency`` client threads send them; we report spans/s over the whole run, and p50/p99 latency
per request, and check every span was stored (each server's statistics).

Needs agentlightning 0.3.0 in its own venv: ``$RESONANCE_AGL_PYTHON`` (default /tmp/agl-venv/bin/python;
see docs/agents.md). ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_traces.py``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

AGL_PYTHON = Path(os.environ.get("RESONANCE_AGL_PYTHON", "/tmp/agl-venv/bin/python"))
PB = {"Content-Type": "application/x-protobuf"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(url: str, headers: dict, process: subprocess.Popen, timeout: float = 240.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited early with {process.returncode}")
        try:
            if httpx.get(url, headers=headers, timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} not healthy within {timeout} s")


def batch_template(spans: int, token_ids: int):
    """One rollout's export request without its ids: LLM calls and rewards from the SDK, encoded."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "bench-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("openai")
    for i in range(spans):
        if i % 2 == 0:
            attributes = {
                "gen_ai.system": "OpenAI",
                "gen_ai.request.model": "policy",
                "gen_ai.response.id": f"chatcmpl-{i}",
                "gen_ai.prompt.0.role": "user",
                "gen_ai.prompt.0.content": "How many orders did customer 42 place in 2025? " * 4,
                "gen_ai.completion.0.role": "assistant",
                "gen_ai.completion.0.content": "SELECT COUNT(*) FROM orders WHERE customer_id = 42",
                "gen_ai.usage.prompt_tokens": token_ids,
                "gen_ai.usage.completion_tokens": token_ids // 4,
                "prompt_token_ids": list(range(1000, 1000 + token_ids)),
                "response_token_ids": list(range(2000, 2000 + token_ids // 4)),
            }
            name = "openai.chat.completion"
        else:
            attributes = {"agentlightning.reward.0.name": "primary", "agentlightning.reward.0.value": 0.5}
            name = "agentlightning.annotation"
        with tracer.start_as_current_span(name, attributes=attributes):
            pass
    return encode_spans(exporter.get_finished_spans())


def with_ids(template, rollout_id: str, attempt_id: str) -> bytes:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    request.CopyFrom(template)
    for resource_spans in request.resource_spans:
        for key, value in (
            ("agentlightning.rollout_id", rollout_id),
            ("agentlightning.attempt_id", attempt_id),
        ):
            attribute = resource_spans.resource.attributes.add()
            attribute.key = key
            attribute.value.string_value = value
    return request.SerializeToString()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def drive(base: str, headers: dict, bodies: list[bytes], concurrency: int, use_gzip: bool) -> dict:
    """Send every body to ``base/v1/traces``; spans/s and per-request latencies."""
    extra = {**PB, **headers, **({"Content-Encoding": "gzip"} if use_gzip else {})}
    payloads = [gzip.compress(b, 1) if use_gzip else b for b in bodies]
    latencies: list[float] = []
    failures: list[str] = []

    def send(chunk: list[bytes]) -> None:
        with httpx.Client(timeout=120.0) as client:
            for body in chunk:
                start = time.perf_counter()
                response = client.post(f"{base}/v1/traces", content=body, headers=extra)
                latencies.append(time.perf_counter() - start)
                if response.status_code != 200:
                    failures.append(f"{response.status_code}")

    chunks = [payloads[i::concurrency] for i in range(concurrency)]
    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(send, chunks))
    elapsed = time.perf_counter() - start
    if failures:
        raise RuntimeError(f"{len(failures)} requests failed: {failures[:5]}")
    return {
        "elapsed_s": elapsed,
        "p50_ms": 1000 * percentile(latencies, 0.5),
        "p99_ms": 1000 * percentile(latencies, 0.99),
    }


class Server:
    def __init__(self, command: list[str], env: dict, base: str, headers: dict) -> None:
        self.base, self.headers = base, headers
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            command, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            self.process.wait(timeout=60)

    def rollouts(self, n: int) -> list[tuple[str, str]]:
        ids = []
        with httpx.Client(timeout=60.0, headers=self.headers) as client:
            for i in range(n):
                ro = client.post(f"{self.base}/v1/agl/rollouts", json={"input": {"task": i}, "mode": "train"})
                ro.raise_for_status()
                ids.append((ro.json()["rollout_id"], ro.json()["attempt"]["attempt_id"]))
        return ids

    def total_spans(self) -> int:
        return httpx.get(f"{self.base}/v1/agl/statistics", headers=self.headers, timeout=60).json()[
            "total_spans"
        ]


def start_ours(workdir: Path) -> Server:
    os.environ["RESONANCE_HOME"] = str(workdir / "home")  # the key pepper, shared with the server
    from resonance_os.api.persistence.db import Database
    from resonance_os.api.persistence.tenants import create_tenant

    db_url = f"sqlite:///{workdir / 'bench.db'}"
    db = Database(db_url)
    db.migrate()
    key = create_tenant(db, "bench")
    db.dispose()
    port = free_port()
    env = {
        **os.environ,
        "RESONANCE_RATE_LIMIT": "100000",
        "RESONANCE_RATE_BURST": "100000",
        "RESONANCE_TEXT_WORKERS": "0",
    }
    server = Server(
        [sys.executable, "-m", "resonance_os.api.hr_server", "--port", str(port), "--db", db_url],
        env,
        f"http://127.0.0.1:{port}",
        {"Authorization": f"Bearer {key}"},
    )
    wait_healthy(f"{server.base}/v1/agl/health", server.headers, server.process)
    return server


def start_reference() -> Server:
    port = free_port()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "AGENTOPS_API_KEY": ""}
    command = [
        str(AGL_PYTHON.parent / "agl"),
        "store",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "WARNING",
    ]
    server = Server(command, env, f"http://127.0.0.1:{port}", {})
    wait_healthy(f"{server.base}/v1/agl/health", {}, server.process)
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200, help="OTLP requests (one rollout each)")
    parser.add_argument("--spans", type=int, default=50, help="spans per request")
    parser.add_argument("--token-ids", type=int, default=256, help="prompt token ids per LLM call")
    parser.add_argument("--concurrency", type=int, default=4, help="client threads")
    parser.add_argument("--gzip", action="store_true", help="gzip every request body")
    args = parser.parse_args()
    if not AGL_PYTHON.exists():
        sys.exit(
            f"agentlightning 0.3.0 is not installed at {AGL_PYTHON}; see docs/agents.md (or set $RESONANCE_AGL_PYTHON)"
        )

    template = batch_template(args.spans, args.token_ids)
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for label, start in (
            ("agentlightning 0.3.0 (in memory)", start_reference),
            ("resonance serve (SQLite)", lambda: start_ours(Path(folder))),
        ):
            server = start()
            try:
                warm = max(1, args.requests // 10)
                ids = server.rollouts(args.requests + warm)
                bodies = [with_ids(template, rid, aid) for rid, aid in ids]
                drive(server.base, server.headers, bodies[:warm], 1, args.gzip)  # warm-up, own rollouts
                before = server.total_spans()
                stats = drive(server.base, server.headers, bodies[warm:], args.concurrency, args.gzip)
                stored = server.total_spans() - before
            finally:
                server.stop()
            stats["stored"] = stored
            stats["spans_per_s"] = args.requests * args.spans / stats["elapsed_s"]
            stats["all_stored"] = stored == args.requests * args.spans
            results[label] = stats

    ref, ours = results["agentlightning 0.3.0 (in memory)"], results["resonance serve (SQLite)"]
    body_kb = len(with_ids(template, "ro-000000000000", "at-00000000")) / 1024
    print(
        f"{args.requests} OTLP requests x {args.spans} spans ({body_kb:.0f} KiB each{', gzip' if args.gzip else ''}), "
        f"{args.concurrency} client threads, 127.0.0.1"
    )
    print("| server | spans/s | p50 ms/request | p99 ms/request | stored |")
    print("|---|---|---|---|---|")
    for label, stats in results.items():
        print(
            f"| {label} | {stats['spans_per_s']:,.0f} | {stats['p50_ms']:.1f} | {stats['p99_ms']:.1f} | {stats['stored']:,} |"
        )
    print(
        f"throughput ratio ours/reference: {ours['spans_per_s'] / ref['spans_per_s']:.2f}x; p99 ratio: {ours['p99_ms'] / ref['p99_ms']:.2f}x"
    )
    print(json.dumps({"args": vars(args), "results": results}))


if __name__ == "__main__":
    main()
