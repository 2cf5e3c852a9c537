"""Training jobs: rows in ``api_jobs`` run by separate worker processes, never in a request handler.

Life of a job: :func:`submit` inserts it as ``queued`` (or refuses with 429 when the tenant's or the
server's queue is full). The :class:`JobRunner` thread of each server process admits queued jobs fairly
between tenants (:func:`admit`: the tenant with the fewest running jobs first) while the limits allow
(at most ``JobLimits.running`` jobs ``starting``/``running`` in all, ``JobLimits.running_per_tenant``
of one tenant's), marks them ``starting`` and launches the worker, :mod:`resonance_os.api.jobs.worker`
with the job id, at nice 19 from its first instruction (:data:`LOW_PRIORITY_START`; database URL in
``$RESONANCE_DB``, never on a command line where ``ps`` shows passwords) in its own process session.
A worker dies with the server that launched it (``$RESONANCE_PARENT_PID``,
:func:`~resonance_os.api.jobs.processes.die_with_parent`), however the server ends, and queues its job
again first; the next server resumes it. The worker claims the row (``starting`` -> ``running``, once,
atomically), records its pid, host and a heartbeat, saves a checkpoint into its work folder
(:func:`work_dir`) every few updates, and ends in ``succeeded`` (with the trained policy as an
artifact) or ``failed`` (with the error). A tenant may :func:`cancel` its job at any point before it
ends (``cancelled``; a worker is sent SIGTERM).

Recovery (every runner tick, at server start, and whenever a job is read): a ``starting``/``running`` job
whose worker is gone (pid dead on this host, or no heartbeat for ``STALE_AFTER_S``) goes back to
``queued`` and its next worker resumes from the job's last checkpoint; after ``MAX_ATTEMPTS`` workers it
is marked ``failed`` with the reason. The runner also reaps finished worker processes (no zombies) and
removes the work folders of jobs that ended. No job is silently lost.

A running job yields to requests: the worker's training waits while the server that launched it has
requests in flight (``api.jobs.serving_gate``; bounded, so a flood of requests slows training but never
stops it), so one tenant's training steps aside while another tenant's request runs.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.orm import Session

from resonance_os.api.jobs.processes import PARENT_PID_ENV, pid_alive
from resonance_os.api.jobs.serving_gate import GATE_ENV
from resonance_os.api.persistence.db import Database, Job, utcnow
from resonance_os.api.persistence.keys import resonance_home
from resonance_os.core.errors import AlreadyExistsError, NotFoundError, ResonanceError

log = logging.getLogger("resonance_os.api.jobs.queue")

JOB_STATES = ("queued", "starting", "running", "succeeded", "failed", "cancelled")
ACTIVE_STATES = ("starting", "running")
FINAL_STATES = ("succeeded", "failed", "cancelled")

STALE_AFTER_S = 120.0
"""A job whose worker has not written a heartbeat for this long is presumed dead."""
HEARTBEAT_S = 5.0
MAX_ATTEMPTS = 3
"""Workers a job may lose (killed, machine restarted) before it is marked failed."""
TICK_S = 1.0
"""How often a :class:`JobRunner` reaps, recovers, cleans and admits jobs (sooner when woken)."""
LOW_PRIORITY_START = (
    "import os, runpy\n"
    "try:\n    os.nice(19 - os.nice(0))\nexcept OSError:\n    pass\n"
    "runpy.run_module('resonance_os.api.jobs.worker', run_name='__main__', alter_sys=True)\n"
)
"""``python -c`` code that starts a job worker at nice 19 before it imports anything: the worker's own
imports (SQLAlchemy and the database layer, seconds on a busy machine) ran at nice 0 before
``job_worker.lower_priority`` and took that CPU from requests each time a job started."""
JOBS_LOCK = 0x7265736F6A6F6273
"""PostgreSQL advisory lock serialising admission across server processes (SQLite: the write lock)."""


class JobQueueFullError(ResonanceError):
    """A training job was refused because the tenant's or the server's queue of waiting jobs is full."""

    http_status = 429


class JobFinishedError(AlreadyExistsError):
    """The job has already ended, so it cannot be cancelled."""

    http_status = 409


@dataclass(frozen=True)
class JobLimits:
    """How many jobs may run at once (in all; per tenant) and wait in the queue (per tenant; in all)."""

    running: int = 2
    running_per_tenant: int = 1
    queued_per_tenant: int = 4
    queued: int = 64


def work_dir(job_id: str) -> Path:
    """``<RESONANCE_HOME>/jobs/<job_id>/``: the job's checkpoint and scratch files, kept across attempts
    and removed when the job ends."""
    return resonance_home() / "jobs" / job_id


def _lock_jobs(session: Session) -> None:
    """Serialise job admission: SQLite's ``db.write()`` already holds the database's write lock."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": JOBS_LOCK})


def submit(
    db: Database, tenant_id: int, kind: str, trainer: str, params: dict, limits: JobLimits | None = None
) -> Job:
    """Insert a queued job and return it; ``JobQueueFullError`` (429) when the queue is full."""
    limits = limits or JobLimits()
    with db.write() as session:
        _lock_jobs(session)
        waiting = dict(
            session.execute(
                sa.select(Job.tenant_id, sa.func.count()).where(Job.state == "queued").group_by(Job.tenant_id)
            ).all()
        )
        mine = waiting.get(tenant_id, 0)
        if mine >= limits.queued_per_tenant:
            raise JobQueueFullError(
                f"you already have {mine} training jobs waiting, the limit per tenant "
                f"(at most {limits.running_per_tenant} of yours run at once); wait for one to finish, "
                "or cancel one with DELETE /v1/jobs/{id}; the operator can raise "
                "RESONANCE_MAX_QUEUED_JOBS_PER_TENANT"
            )
        if sum(waiting.values()) >= limits.queued:
            raise JobQueueFullError(
                f"the server's training queue is full ({sum(waiting.values())} jobs waiting); try again "
                "in a few minutes; the operator can raise RESONANCE_MAX_QUEUED_JOBS or RESONANCE_MAX_RUNNING_JOBS"
            )
        job = Job(tenant_id=tenant_id, kind=kind, trainer=trainer, state="queued", params=params, metrics={})
        session.add(job)
        session.flush()
        return job


def admit(db: Database, limits: JobLimits) -> list[str]:
    """Mark queued jobs ``starting`` while the limits allow and return their ids (the caller launches a
    worker for each). Each free slot goes to the tenant with the fewest jobs starting or running, ties
    to the tenant whose oldest waiting job is oldest; that tenant's oldest job takes it. So a tenant
    with many jobs waiting cannot make a later tenant's first job wait more than one slot (first in,
    first out did: five queued jobs ran before another tenant's one). Under the admission lock, so
    server processes admitting at once never pass the limits or start a job twice."""
    with db.read() as session:  # the common case, nothing waiting, takes no write lock
        if session.scalar(sa.select(Job.id).where(Job.state == "queued").limit(1)) is None:
            return []
    with db.write() as session:
        _lock_jobs(session)
        active = dict(
            session.execute(
                sa.select(Job.tenant_id, sa.func.count())
                .where(Job.state.in_(ACTIVE_STATES))
                .group_by(Job.tenant_id)
            ).all()
        )
        free = limits.running - sum(active.values())
        if free <= 0:
            return []
        waiting: dict[int, deque[tuple[datetime, str]]] = {}
        for job_id, tenant_id, created_at in session.execute(
            sa.select(Job.id, Job.tenant_id, Job.created_at)
            .where(Job.state == "queued")
            .order_by(Job.created_at, Job.id)
        ):
            waiting.setdefault(tenant_id, deque()).append((created_at, job_id))
        chosen = []
        while len(chosen) < free:
            eligible = [t for t, q in waiting.items() if q and active.get(t, 0) < limits.running_per_tenant]
            if not eligible:
                break
            tenant_id = min(eligible, key=lambda t: (active.get(t, 0), waiting[t][0]))
            chosen.append(waiting[tenant_id].popleft()[1])
            active[tenant_id] = active.get(tenant_id, 0) + 1
        if chosen:
            session.execute(
                sa.update(Job)
                .where(Job.id.in_(chosen))
                .values(state="starting", pid=None, host=socket.gethostname(), heartbeat_at=utcnow())
            )
        return chosen


def worker_environment(db_url: str, checkpoint_every: int = 1, serving_gate: Path | None = None) -> dict:
    """The environment a job worker starts with: the database, the checkpoint interval, the launching
    process's pid (the worker dies with it), one thread per numeric library and, with
    ``serving_gate``, the launching server's gate (``api.jobs.serving_gate``: training waits while that
    server has requests in flight)."""
    env = {
        **os.environ,
        PARENT_PID_ENV: str(os.getpid()),
        "RESONANCE_DB": db_url,
        "RESONANCE_CHECKPOINT_EVERY": str(checkpoint_every),
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
    }
    env.pop(GATE_ENV, None)
    if serving_gate is not None:
        env[GATE_ENV] = str(serving_gate)
    return env


def launch(
    db_url: str, job_id: str, checkpoint_every: int = 1, serving_gate: Path | None = None
) -> subprocess.Popen:
    """Start a worker process for ``job_id``; its output goes to ``<RESONANCE_HOME>/jobs/<id>.log``."""
    log_dir = resonance_home() / "jobs"
    log_dir.mkdir(parents=True, exist_ok=True)
    env = worker_environment(db_url, checkpoint_every, serving_gate)
    with open(log_dir / f"{job_id}.log", "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-c", LOW_PRIORITY_START, job_id],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
            cwd=os.getcwd(),
        )


def get(db: Database, tenant_id: int, job_id: str) -> Job:
    """The tenant's job ``job_id`` (after :func:`recover_lost`); another tenant's job is not found."""
    with db.read() as session:
        job = session.scalar(sa.select(Job).where(Job.id == job_id, Job.tenant_id == tenant_id))
    if job is None:
        raise NotFoundError(f"no job {job_id!r} for this tenant")
    if job.state in ACTIVE_STATES and _worker_gone(job):
        recover_lost(db, job.id)
        return get(db, tenant_id, job_id)
    return job


def list_jobs(
    db: Database,
    tenant_id: int,
    states: list[str] | None = None,
    limit: int = 50,
    *,
    kinds: list[str] | None = None,
) -> list[Job]:
    """The tenant's newest ``limit`` jobs, newest first, optionally only those in ``states`` and of
    ``kinds``."""
    query = sa.select(Job).where(Job.tenant_id == tenant_id)
    if states:
        query = query.where(Job.state.in_(states))
    if kinds:
        query = query.where(Job.kind.in_(kinds))
    with db.read() as session:
        found = session.scalars(query.order_by(Job.created_at.desc(), Job.id).limit(limit)).all()
    if any(job.state in ACTIVE_STATES and _worker_gone(job) for job in found):
        for job in found:
            recover_lost(db, job.id)
        return list_jobs(db, tenant_id, states, limit, kinds=kinds)
    return list(found)


def cancel(db: Database, tenant_id: int, job_id: str) -> Job:
    """Cancel the tenant's job: a queued one never starts, a running one's worker gets SIGTERM.

    Cancelling a cancelled job again is a no-op; one that succeeded or failed raises ``JobFinishedError``.
    """
    with db.write() as session:
        job = session.scalar(sa.select(Job).where(Job.id == job_id, Job.tenant_id == tenant_id))
        if job is None:
            raise NotFoundError(f"no job {job_id!r} for this tenant")
        if job.state in ("succeeded", "failed"):
            raise JobFinishedError(
                f"job {job_id} already {job.state}; only a queued or running job can be cancelled"
            )
        worker = (job.pid, job.host) if job.state in ACTIVE_STATES else None
        if job.state != "cancelled":
            job.state, job.finished_at, job.error = "cancelled", utcnow(), "cancelled by the tenant"
    if worker is not None and worker[0] is not None and worker[1] == socket.gethostname():
        try:  # a worker on another host sees the state at its next heartbeat and stops
            os.kill(worker[0], signal.SIGTERM)
        except ProcessLookupError:
            pass
    return job


def _worker_gone(job: Job) -> bool:
    beat = job.heartbeat_at or job.started_at
    if beat is not None and utcnow() - beat > timedelta(seconds=STALE_AFTER_S):
        return True
    return job.host == socket.gethostname() and job.pid is not None and not pid_alive(job.pid)


def release(db: Database, job_id: str, reason: str) -> str | None:
    """The worker of active job ``job_id`` stopped (``reason``): queue the job again so the next worker
    resumes from its checkpoint, or mark it failed after ``MAX_ATTEMPTS`` workers. Returns the new state
    (``None`` if the job was no longer active: it ended or another process released it first)."""
    with db.write() as session:
        job = session.get(Job, job_id)
        if job is None or job.state not in ACTIVE_STATES:
            return None
        if job.attempts < MAX_ATTEMPTS:
            job.state, job.pid, job.heartbeat_at = "queued", None, None
            log.warning("job %s: %s; queued again to resume from its checkpoint", job_id, reason)
        else:
            job.state, job.finished_at = "failed", utcnow()
            job.error = f"{reason} on each of {job.attempts} attempts; submit the job again"
            log.warning("job %s marked failed: %s (attempt %d)", job_id, reason, job.attempts)
        return job.state


def recover_lost(db: Database, job_id: str) -> str | None:
    """Release ``job_id`` if it is active but its worker is gone."""
    with db.read() as session:
        job = session.get(Job, job_id)
    if job is None or job.state not in ACTIVE_STATES or not _worker_gone(job):
        return None
    return release(
        db,
        job_id,
        f"the worker process (pid {job.pid} on {job.host}) stopped before the job finished "
        "(server or machine restarted, or the process was killed)",
    )


def recover(db: Database) -> dict[str, list[str]]:
    """Release every active job whose worker is gone; the ids queued again and failed."""
    with db.read() as session:
        active = session.scalars(sa.select(Job.id).where(Job.state.in_(ACTIVE_STATES))).all()
    outcome: dict[str, list[str]] = {"queued": [], "failed": []}
    for job_id in active:
        state = recover_lost(db, job_id)
        if state is not None:
            outcome[state].append(job_id)
    return outcome


def remove_ended_work_dirs(db: Database) -> list[str]:
    """Delete the work folders of this database's jobs that ended (a killed or cancelled worker leaves
    its folder behind); folders of unknown ids are left alone. Returns the ids removed."""
    root = resonance_home() / "jobs"
    folders = {p.name: p for p in root.iterdir() if p.is_dir()} if root.is_dir() else {}
    if not folders:
        return []
    with db.read() as session:
        ended = session.scalars(
            sa.select(Job.id).where(Job.id.in_(list(folders)), Job.state.in_(FINAL_STATES))
        ).all()
    for job_id in ended:
        shutil.rmtree(folders[job_id], ignore_errors=True)
    return list(ended)


class JobRunner:
    """A server process's background thread: every ``TICK_S`` (or when woken) it reaps finished workers,
    recovers jobs whose worker is gone, removes ended jobs' work folders and launches admitted jobs."""

    def __init__(
        self, db: Database, limits: JobLimits, checkpoint_every: int = 1, serving_gate: Path | None = None
    ) -> None:
        self.db, self.limits, self.checkpoint_every = db, limits, checkpoint_every
        self.serving_gate = serving_gate
        self.children: list[subprocess.Popen] = []
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> JobRunner:
        self._thread = threading.Thread(target=self._loop, name="resonance-job-runner", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread (running workers stop when this process ends, queueing their jobs again for
        the next server)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def wake(self) -> None:
        self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.tick()
            except Exception:  # a busy or briefly unreachable database must not stop the runner
                log.exception("job runner tick failed; retrying")
            self._wake.wait(TICK_S)
            self._wake.clear()

    def tick(self) -> list[str]:
        """One round; returns the ids of the jobs launched."""
        with self._lock:
            self.children = [p for p in self.children if p.poll() is None]  # poll() reaps
            recover(self.db)
            remove_ended_work_dirs(self.db)
            launched = admit(self.db, self.limits)
            for job_id in launched:
                self._launch(job_id)
            return launched

    def _launch(self, job_id: str) -> None:
        try:
            process = launch(self.db.url, job_id, self.checkpoint_every, self.serving_gate)
        except OSError as exc:
            with self.db.write() as session:
                session.execute(
                    sa.update(Job)
                    .where(Job.id == job_id, Job.state == "starting")
                    .values(state="failed", finished_at=utcnow(), error=f"cannot start a worker: {exc}")
                )
            return
        self.children.append(process)
        with self.db.write() as session:  # the worker writes the same pid when it claims the job
            session.execute(
                sa.update(Job)
                .where(Job.id == job_id, Job.state == "starting", Job.pid.is_(None))
                .values(pid=process.pid)
            )
