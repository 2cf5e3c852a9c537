"""An agent runner process for the reliability test: it dequeues rollouts from a live server, exports
each step's span with the OpenTelemetry SDK's OTLP/HTTP exporter, records every span the server
acknowledged (one line per span in ``--record``), and marks its attempt succeeded. With ``--hang-after
K`` it stops answering after K spans of its first rollout (the test then kills it with SIGKILL).

``python span_runner.py URL KEY WORKER_ID --spans N --record FILE [--hang-after K]``
"""

from __future__ import annotations

import argparse
import os
import time

import httpx
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

UNFINISHED = ["queuing", "requeuing", "preparing", "running"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("key")
    parser.add_argument("worker_id")
    parser.add_argument("--spans", type=int, default=8)
    parser.add_argument("--record", required=True)
    parser.add_argument("--hang-after", type=int, default=None)
    args = parser.parse_args()
    headers = {"Authorization": f"Bearer {args.key}"}
    store = httpx.Client(base_url=f"{args.url}/v1/agl", headers=headers, timeout=60.0)
    exporter = OTLPSpanExporter(endpoint=f"{args.url}/v1/traces", headers=headers)
    record = open(args.record, "a", buffering=1)
    first = True
    while True:
        claimed = store.post("/queues/rollouts/dequeue", json={"worker_id": args.worker_id}).json()
        if not claimed:
            left = store.post("/rollouts/search", json={"status_in": UNFINISHED, "limit": 1}).json()["total"]
            if left == 0:
                return
            time.sleep(0.3)
            continue
        rollout_id, attempt_id = claimed[0]["rollout_id"], claimed[0]["attempt"]["attempt_id"]
        finished = InMemorySpanExporter()
        provider = TracerProvider(
            resource=Resource.create(
                {"agentlightning.rollout_id": rollout_id, "agentlightning.attempt_id": attempt_id}
            )
        )
        provider.add_span_processor(SimpleSpanProcessor(finished))
        tracer = provider.get_tracer("agent")
        for step in range(args.spans):
            if first and args.hang_after is not None and step == args.hang_after:
                record.write("HANG\n")
                while True:  # a runner stuck mid-rollout; the test kills it
                    time.sleep(60)
            with tracer.start_as_current_span(f"step-{step}", attributes={"step": step}):
                pass
            span = finished.get_finished_spans()[-1]
            while exporter.export([span]) != SpanExportResult.SUCCESS:
                time.sleep(0.2)
            record.write(f"{rollout_id} {attempt_id} {span.context.span_id:016x}\n")
        store.post(
            f"/rollouts/{rollout_id}/attempts/{attempt_id}", json={"status": "succeeded"}
        ).raise_for_status()
        provider.shutdown()
        first = False


if __name__ == "__main__":
    os.environ.setdefault("OTEL_SDK_DISABLED", "false")
    main()
