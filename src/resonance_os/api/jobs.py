"""Training jobs: rows in ``api_jobs`` run by a separate worker process, never in a request handler.

Life of a job: ``submit`` inserts it as ``queued`` and ``launch`` starts
``python -m resonance_os.api.job_worker JOB_ID``
(database URL in ``$RESONANCE_DB``, never on a command line where ``ps`` shows passwords) in its own process session (so the job
outlives a server that is stopped or killed). The worker claims the row (``queued`` -> ``running``, once,
atomically), records its pid, host and a heartbeat, reports progress and metrics, and ends in
``succeeded`` (with the trained policy as an artifact) or ``failed`` (with the error).

Recovery (``recover`` runs at server start, ``refresh`` whenever a job is read): a ``running`` job whose
worker is gone (pid dead on this host, or no heartbeat for ``STALE_AFTER_S``) is marked ``failed`` with
the reason; a ``queued`` job that no worker claimed is launched again. No job is silently lost.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import sqlalchemy as sa

from resonance_os.api.db import Database, Job, utcnow
from resonance_os.api.keys import resonance_home
from resonance_os.core.errors import NotFoundError

log = logging.getLogger("resonance_os.api.jobs")

STALE_AFTER_S = 120.0
"""A running job whose worker has not written a heartbeat for this long is presumed dead."""

HEARTBEAT_S = 5.0
QUEUED_GRACE_S = 10.0
"""A queued job older than this at recovery time is relaunched (its launching server died)."""

_children: list[subprocess.Popen] = []
_children_lock = threading.Lock()


def submit(db: Database, tenant_id: int, kind: str, trainer: str, params: dict) -> Job:
    """Insert a queued job and return it (call :func:`launch` next)."""
    with db.write() as session:
        job = Job(tenant_id=tenant_id, kind=kind, trainer=trainer, state="queued", params=params, metrics={})
        session.add(job)
        session.flush()
        return job


def launch(db_url: str, job_id: str) -> subprocess.Popen:
    """Start a worker process for ``job_id``; its output goes to ``<RESONANCE_HOME>/jobs/<id>.log``."""
    log_dir = resonance_home() / "jobs"
    log_dir.mkdir(parents=True, exist_ok=True)
    with open(log_dir / f"{job_id}.log", "ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "resonance_os.api.job_worker", job_id],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "RESONANCE_DB": db_url, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
            cwd=os.getcwd(),
        )
    with _children_lock:
        _children.append(process)
        _children[:] = [p for p in _children if p.poll() is None]  # reap finished workers
    return process


def get(db: Database, tenant_id: int, job_id: str) -> Job:
    """The tenant's job ``job_id`` (after :func:`refresh`); another tenant's job is not found."""
    with db.read() as session:
        job = session.scalar(sa.select(Job).where(Job.id == job_id, Job.tenant_id == tenant_id))
    if job is None:
        raise NotFoundError(f"no job {job_id!r} for this tenant")
    if job.state == "running" and _worker_gone(job):
        refresh(db, job.id)
        return get(db, tenant_id, job_id)
    return job


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited, not yet reaped) is dead for our purposes
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (OSError, IndexError):
        return True


def _worker_gone(job: Job) -> bool:
    beat = job.heartbeat_at or job.started_at
    if beat is not None and utcnow() - beat > timedelta(seconds=STALE_AFTER_S):
        return True
    return job.host == socket.gethostname() and job.pid is not None and not _pid_alive(job.pid)


def refresh(db: Database, job_id: str) -> None:
    """Mark ``job_id`` failed if it is running but its worker is gone."""
    with db.write() as session:
        job = session.get(Job, job_id)
        if job is not None and job.state == "running" and _worker_gone(job):
            job.state = "failed"
            job.error = (
                f"the worker process (pid {job.pid} on {job.host}) stopped before the job finished "
                "(server or machine restarted, or the process was killed); submit the job again"
            )
            job.finished_at = utcnow()
            log.warning("job %s marked failed: worker gone", job_id)


def recover(db: Database, db_url: str, *, launch_queued: bool = True) -> dict[str, list[str]]:
    """At server start: fail running jobs whose worker is gone, relaunch stale queued jobs."""
    with db.read() as session:
        running = session.scalars(sa.select(Job.id).where(Job.state == "running")).all()
        cutoff = utcnow() - timedelta(seconds=QUEUED_GRACE_S)
        queued = session.scalars(
            sa.select(Job.id).where(Job.state == "queued", Job.created_at < cutoff)
        ).all()
    failed = []
    for job_id in running:
        refresh(db, job_id)
        with db.read() as session:
            if session.get(Job, job_id).state == "failed":
                failed.append(job_id)
    if launch_queued:
        for job_id in queued:
            launch(db_url, job_id)
    return {"failed": failed, "relaunched": list(queued) if launch_queued else []}
