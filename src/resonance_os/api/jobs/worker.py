"""The worker process that runs one training job: ``python -m resonance_os.api.jobs.worker JOB_ID``.

It claims the job (``starting`` or ``queued`` -> ``running`` exactly once), looks up the job's trainer
by the name the server gave it when the job was submitted (``api.jobs.trainers``), runs it, and writes the
outcome. A trainer is ``trainer(params: dict, report: JobReport) -> TrainingResult``
(``api.jobs.report``); it calls
``report.progress(fraction, metrics, curve=rows)`` as it goes (``curve``: its metrics rows so far, the
job's learning curve), keeps its checkpoint in ``report.work_dir`` (saved
every ``report.checkpoint_every`` updates, reported with ``report.checkpointed``) and, when it finds
one there, resumes from it (``report.resumed``). A heartbeat thread keeps ``heartbeat_at`` fresh so a
server can tell a live worker from a dead one, and stops the worker when the job was cancelled. On
SIGTERM the job is released (queued again to resume, see :func:`resonance_os.api.jobs.queue.release`) unless
it was cancelled. The work folder is removed when the job ends. When the server that launched the
worker dies (``$RESONANCE_PARENT_PID``; ``kill -9`` included), the worker releases the job the same way
and exits (:func:`~resonance_os.api.jobs.processes.die_with_parent`): no orphan keeps training.

A worker runs at the lowest CPU priority (:func:`lower_priority`: nice 19), so training uses the CPU
time that request handling leaves: on a machine with few cores a running job would otherwise take a
core from the server and slow every tenant's requests.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import signal
import socket
import sys
import threading
import traceback
from typing import Any

import sqlalchemy as sa

from resonance_os.api.jobs.processes import die_with_parent, parent_pid_from_env
from resonance_os.api.jobs.queue import HEARTBEAT_S, release, work_dir
from resonance_os.api.jobs.report import JobReport
from resonance_os.api.jobs.trainers import lookup
from resonance_os.api.persistence.db import Database, Job, utcnow
from resonance_os.api.settings import Settings
from resonance_os.core.errors import ResonanceError
from resonance_os.rl.errors import RLError

log = logging.getLogger("resonance_os.api.jobs.worker")


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
        trainer = lookup(job.trainer)
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
