"""The worker process that runs one training job: ``python -m resonance_os.api.job_worker JOB_ID``.

It claims the job (``queued`` -> ``running`` exactly once), imports the job's trainer
(``"module:function"``, chosen by the server when the job was submitted), runs it, and writes the
outcome. A trainer is ``trainer(params: dict, report: JobReport) -> TrainingResult``; it calls
``report.progress(fraction, metrics)`` as it goes. A heartbeat thread keeps ``heartbeat_at`` fresh so a
server can tell a live worker from a dead one.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import socket
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from resonance_os.api.db import Database, Job, utcnow
from resonance_os.api.jobs import HEARTBEAT_S
from resonance_os.core.errors import ResonanceError
from resonance_os.rl.errors import RLError

log = logging.getLogger("resonance_os.api.job_worker")


@dataclass
class TrainingResult:
    """What a trainer returns: final metrics and, optionally, the trained policy as bytes (a zip)."""

    metrics: dict[str, Any] = field(default_factory=dict)
    artifact: bytes | None = None


class JobReport:
    """Progress reporting for a running job; writes at most every ``min_interval_s`` seconds."""

    def __init__(self, db: Database, job_id: str, tenant_id: int, min_interval_s: float = 0.5) -> None:
        self.db = db
        self.job_id = job_id
        self.tenant_id = tenant_id
        self.min_interval_s = min_interval_s
        self._last = 0.0

    def progress(
        self, fraction: float, metrics: dict[str, Any] | None = None, *, force: bool = False
    ) -> None:
        now = time.monotonic()
        if not force and now - self._last < self.min_interval_s:
            return
        self._last = now
        values: dict[str, Any] = {"progress": min(max(float(fraction), 0.0), 1.0), "heartbeat_at": utcnow()}
        if metrics is not None:
            values["metrics"] = metrics
        with self.db.write() as session:
            session.execute(sa.update(Job).where(Job.id == self.job_id).values(**values))


def _claim(db: Database, job_id: str) -> Job | None:
    now = utcnow()
    with db.write() as session:
        claimed = session.execute(
            sa.update(Job)
            .where(Job.id == job_id, Job.state == "queued")
            .values(
                state="running",
                pid=os.getpid(),
                host=socket.gethostname(),
                started_at=now,
                heartbeat_at=now,
                attempts=Job.attempts + 1,
            )
        ).rowcount
        return session.get(Job, job_id) if claimed == 1 else None


def _finish(db: Database, job_id: str, **values: Any) -> None:
    with db.write() as session:
        session.execute(
            sa.update(Job)
            .where(Job.id == job_id, Job.state == "running")
            .values(finished_at=utcnow(), **values)
        )


def _heartbeat(db: Database, job_id: str, stop: threading.Event) -> None:
    while not stop.wait(HEARTBEAT_S):
        try:
            with db.write() as session:
                session.execute(sa.update(Job).where(Job.id == job_id).values(heartbeat_at=utcnow()))
        except sa.exc.SQLAlchemyError:  # a busy database must not kill the job; the next beat retries
            log.warning("heartbeat for job %s failed", job_id, exc_info=True)


def load_trainer(spec: str):
    module_name, _, function_name = spec.partition(":")
    return getattr(importlib.import_module(module_name), function_name)


def run_job(db: Database, job_id: str) -> str:
    """Claim and run ``job_id``; return its final state (``"skipped"`` if another worker had it)."""
    job = _claim(db, job_id)
    if job is None:
        return "skipped"

    def _terminate(signum, _frame):
        _finish(db, job_id, state="failed", error=f"the worker was stopped by signal {signum}")
        os._exit(1)

    signal.signal(signal.SIGTERM, _terminate)
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(db, job_id, stop), daemon=True)
    beat.start()
    try:
        trainer = load_trainer(job.trainer)
        result = trainer(dict(job.params), JobReport(db, job_id, job.tenant_id))
    except (ResonanceError, RLError) as exc:
        _finish(db, job_id, state="failed", error=f"{type(exc).__name__}: {exc}")
        return "failed"
    except Exception as exc:  # our bug: keep the traceback in the job log, a summary in the row
        traceback.print_exc()
        _finish(db, job_id, state="failed", error=f"internal error: {type(exc).__name__}: {exc}")
        return "failed"
    finally:
        stop.set()
    _finish(db, job_id, state="succeeded", progress=1.0, metrics=result.metrics, artifact=result.artifact)
    return "succeeded"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=None, help="database URL or path (default: $RESONANCE_DB)")
    parser.add_argument("job_id")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    db = Database(args.db)
    try:
        state = run_job(db, args.job_id)
    finally:
        db.dispose()
    log.info("job %s: %s", args.job_id, state)
    return 0 if state in ("succeeded", "skipped") else 1


if __name__ == "__main__":
    sys.exit(main())
