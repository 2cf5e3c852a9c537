"""The worker process that runs one training job: ``python -m resonance_os.api.job_worker JOB_ID``.

It claims the job (``starting`` or ``queued`` -> ``running`` exactly once), imports the job's trainer
(``"module:function"``, chosen by the server when the job was submitted), runs it, and writes the
outcome. A trainer is ``trainer(params: dict, report: JobReport) -> TrainingResult``; it calls
``report.progress(fraction, metrics, curve=rows)`` as it goes (``curve``: its metrics rows so far, the
job's learning curve), keeps its checkpoint in ``report.work_dir`` (saved
every ``report.checkpoint_every`` updates, reported with ``report.checkpointed``) and, when it finds
one there, resumes from it (``report.resumed``). A heartbeat thread keeps ``heartbeat_at`` fresh so a
server can tell a live worker from a dead one, and stops the worker when the job was cancelled. On
SIGTERM the job is released (queued again to resume, see :func:`resonance_os.api.jobs.release`) unless
it was cancelled. The work folder is removed when the job ends. When the server that launched the
worker dies (``$RESONANCE_PARENT_PID``; ``kill -9`` included), the worker releases the job the same way
and exits (:func:`~resonance_os.api.processes.die_with_parent`): no orphan keeps training.

A worker runs at the lowest CPU priority (:func:`lower_priority`: nice 19), so training uses the CPU
time that request handling leaves: on a machine with few cores a running job would otherwise take a
core from the server and slow every tenant's requests.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import shutil
import signal
import socket
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from resonance_os.api.db import Database, Job, utcnow
from resonance_os.api.jobs import HEARTBEAT_S, release, work_dir
from resonance_os.api.processes import die_with_parent, parent_pid_from_env
from resonance_os.api.settings import Settings
from resonance_os.core.errors import ResonanceError
from resonance_os.rl.errors import RLError

log = logging.getLogger("resonance_os.api.job_worker")


MAX_CURVE_POINTS = 500
"""A job's stored learning curve keeps at most this many points (evenly spaced, the last one always)."""


def curve_points(rows: list[dict[str, Any]], limit: int = MAX_CURVE_POINTS) -> list[dict[str, float]]:
    """The numeric fields of each metrics row, thinned to at most ``limit`` evenly spaced rows (the
    first and last kept): what ``GET /v1/jobs/{id}/metrics`` returns as the learning curve."""
    if len(rows) > limit:
        step = (len(rows) - 1) / (limit - 1)
        rows = [rows[round(i * step)] for i in range(limit)]
    return [
        {
            key: float(value)
            for key, value in row.items()
            if isinstance(value, (int, float)) and not isinstance(value, bool)
        }
        for row in rows
    ]


@dataclass
class TrainingResult:
    """What a trainer returns: final metrics and, optionally, the trained policy as bytes (a zip)."""

    metrics: dict[str, Any] = field(default_factory=dict)
    artifact: bytes | None = None


class JobReport:
    """What a trainer gets besides its params: progress reporting (at most every ``min_interval_s``
    seconds), the job's ``work_dir`` (kept across attempts) and how often to checkpoint."""

    def __init__(
        self,
        db: Database,
        job_id: str,
        tenant_id: int,
        min_interval_s: float = 0.5,
        *,
        work_dir: Path | None = None,
        checkpoint_every: int = 1,
    ) -> None:
        self.db = db
        self.job_id = job_id
        self.tenant_id = tenant_id
        self.min_interval_s = min_interval_s
        self.work_dir = work_dir
        self.checkpoint_every = checkpoint_every
        self._last = 0.0

    def checkpointed(self, timesteps: int) -> None:
        """Record that the job's checkpoint now holds ``timesteps`` steps of training."""
        self._update(checkpoint_timesteps=int(timesteps), heartbeat_at=utcnow())

    def resumed(self, timesteps: int) -> None:
        """Record that this attempt continues from a checkpoint of ``timesteps`` steps."""
        self._update(resumed_from=int(timesteps))

    def _update(self, **values: Any) -> None:
        with self.db.write() as session:
            session.execute(
                sa.update(Job).where(Job.id == self.job_id, Job.state == "running").values(**values)
            )

    def progress(
        self,
        fraction: float,
        metrics: dict[str, Any] | None = None,
        *,
        curve: list[dict[str, Any]] | None = None,
        force: bool = False,
    ) -> None:
        """Record ``fraction`` done (0-1), the latest ``metrics`` and the learning ``curve`` so far (every
        metrics row, oldest first; stored thinned by :func:`curve_points`); at most every
        ``min_interval_s`` seconds unless ``force``."""
        now = time.monotonic()
        if not force and now - self._last < self.min_interval_s:
            return
        self._last = now
        values: dict[str, Any] = {"progress": min(max(float(fraction), 0.0), 1.0), "heartbeat_at": utcnow()}
        if metrics is not None:
            values["metrics"] = metrics
        if curve is not None:
            values["curve"] = curve_points(curve)
        self._update(**values)


def _claim(db: Database, job_id: str) -> Job | None:
    now = utcnow()
    with db.write() as session:
        claimed = session.execute(
            sa.update(Job)
            .where(Job.id == job_id, Job.state.in_(("starting", "queued")))
            .values(
                state="running",
                pid=os.getpid(),
                host=socket.gethostname(),
                started_at=now,
                heartbeat_at=now,
                attempts=Job.attempts + 1,
                resumed_from=None,
            )
        ).rowcount
        return session.get(Job, job_id) if claimed == 1 else None


def _finish(db: Database, job_id: str, **values: Any) -> None:
    """End the job (unless it was cancelled meanwhile) and remove its work folder."""
    with db.write() as session:
        session.execute(
            sa.update(Job)
            .where(Job.id == job_id, Job.state == "running")
            .values(finished_at=utcnow(), **values)
        )
    shutil.rmtree(work_dir(job_id), ignore_errors=True)


def _heartbeat(db: Database, job_id: str, stop: threading.Event) -> None:
    while not stop.wait(HEARTBEAT_S):
        try:
            with db.write() as session:
                beating = session.execute(
                    sa.update(Job)
                    .where(Job.id == job_id, Job.state == "running")
                    .values(heartbeat_at=utcnow())
                ).rowcount
        except sa.exc.SQLAlchemyError:  # a busy database must not kill the job; the next beat retries
            log.warning("heartbeat for job %s failed", job_id, exc_info=True)
            continue
        if not beating:  # cancelled (or released by a server that presumed this worker dead)
            log.info("job %s is no longer running here; stopping", job_id)
            os._exit(0)


def lower_priority() -> None:
    """Put this process (and the threads it starts afterwards) at nice 19, the lowest CPU priority that
    still gives it a share on a busy machine (Linux's ``SCHED_IDLE`` would give a fifth of that, and
    starve its heartbeat under load). A refusal (a container's limits) is logged, and the job runs."""
    try:
        os.nice(19 - os.nice(0))
    except OSError as exc:
        log.warning("cannot lower the worker's CPU priority: %s", exc)


def _server_gone(db: Database, job_id: str) -> None:
    """The launching server died: queue the job again (a no-op unless it is still active) and exit."""
    try:
        release(db, job_id, "the server that launched the worker stopped")
    finally:
        os._exit(1)


def load_trainer(spec: str):
    module_name, _, function_name = spec.partition(":")
    return getattr(importlib.import_module(module_name), function_name)


def run_job(db: Database, job_id: str) -> str:
    """Claim and run ``job_id``; return its final state (``"skipped"`` if another worker had it)."""
    job = _claim(db, job_id)
    if job is None:
        return "skipped"

    def _terminate(signum, _frame):
        release(db, job_id, f"the worker was stopped by signal {signum}")  # no-op if it was cancelled
        os._exit(1)

    signal.signal(signal.SIGTERM, _terminate)
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(db, job_id, stop), daemon=True)
    beat.start()
    folder = work_dir(job_id)
    folder.mkdir(parents=True, exist_ok=True)
    report = JobReport(
        db, job_id, job.tenant_id, work_dir=folder, checkpoint_every=Settings.from_env().checkpoint_every
    )
    try:
        trainer = load_trainer(job.trainer)
        result = trainer(dict(job.params), report)
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
    lower_priority()
    db = Database(args.db)
    server_pid = parent_pid_from_env()
    if server_pid is not None:
        die_with_parent(server_pid, lambda: _server_gone(db, args.job_id))
    try:
        state = run_job(db, args.job_id)
    finally:
        db.dispose()
    log.info("job %s: %s", args.job_id, state)
    return 0 if state in ("succeeded", "skipped") else 1


if __name__ == "__main__":
    sys.exit(main())
