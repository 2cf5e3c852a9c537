"""Prometheus metrics: requests, latencies and jobs (``GET /metrics``; job series only for the operator's
token, ``$RESONANCE_METRICS_TOKEN``).

With several server workers set ``PROMETHEUS_MULTIPROC_DIR`` (``resonance serve --workers N`` does) so
that counters from every worker are summed at scrape time.
"""

from __future__ import annotations

import os

import sqlalchemy as sa
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily

from resonance_os.api.jobs.queue import JOB_STATES
from resonance_os.api.persistence.db import Database, Job

REQUESTS = Counter("resonance_http_requests_total", "HTTP requests handled", ["method", "route", "status"])
REQUEST_LATENCY = Histogram(
    "resonance_http_request_duration_seconds",
    "HTTP request latency",
    ["method", "route"],
    buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
JOBS_SUBMITTED = Counter("resonance_jobs_submitted_total", "Training jobs submitted", ["kind"])


class JobStateCollector:
    """Jobs per state, read from the database at scrape time (so it is right across workers)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def collect(self):
        family = GaugeMetricFamily("resonance_jobs", "Training jobs by state", labels=["state"])
        with self.db.read() as session:
            counts = dict(session.execute(sa.select(Job.state, sa.func.count()).group_by(Job.state)).all())
        for state in JOB_STATES:
            family.add_metric([state], counts.get(state, 0))
        yield family


JOB_METRICS_PREFIX = "resonance_jobs"
"""Job series (states, submissions) are shown only to the operator: they describe other tenants' work."""


def _without_job_series(text: bytes) -> bytes:
    lines = text.decode().splitlines(keepends=True)
    kept = [
        line
        for line in lines
        if not line.startswith(JOB_METRICS_PREFIX)
        and not line.startswith(("# HELP " + JOB_METRICS_PREFIX, "# TYPE " + JOB_METRICS_PREFIX))
    ]
    return "".join(kept).encode()


def render(db: Database, include_jobs: bool = False) -> tuple[bytes, str]:
    """The exposition text and its content type: request metrics, and with ``include_jobs`` (the
    operator's scrape) the training jobs by state and submissions."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        process_registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(process_registry)
    else:
        process_registry = REGISTRY
    text = generate_latest(process_registry)
    if not include_jobs:
        return _without_job_series(text), CONTENT_TYPE_LATEST
    jobs_registry = CollectorRegistry()
    jobs_registry.register(JobStateCollector(db))
    return text + generate_latest(jobs_registry), CONTENT_TYPE_LATEST
