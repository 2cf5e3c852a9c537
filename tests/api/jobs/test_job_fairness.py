"""Job slots are shared fairly between tenants (``queue.admit``): a free slot goes to the tenant with the
fewest running jobs, so a tenant with a queue of jobs cannot keep a later tenant's first job waiting
more than one slot; admission from many threads at once never passes the limits or starts a job twice.
On SQLite, and on PostgreSQL with ``$RESONANCE_TEST_DB_URL``."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa
from service_helpers import unique

from resonance_os.api.jobs import queue
from resonance_os.api.persistence.db import Database, Job
from resonance_os.api.persistence.tenants import create_tenant
from resonance_os.profiles.schema import Tenant


def _tenant_id(db: Database, prefix: str) -> int:
    name = unique(prefix)
    create_tenant(db, name)
    with db.read() as session:
        return session.scalar(sa.select(Tenant.id).where(Tenant.name == name))


def _end_unfinished_jobs(db: Database) -> None:
    with db.write() as session:
        session.execute(
            sa.update(Job).where(Job.state.in_(("queued", "starting", "running"))).values(state="cancelled")
        )


@pytest.fixture(autouse=True)
def no_other_jobs(db):
    """A shared test database keeps earlier tests' unfinished jobs, and these tests admit jobs no worker
    runs: end them before and after each test."""
    _end_unfinished_jobs(db)
    yield
    _end_unfinished_jobs(db)


def _finish(db: Database, job_id: str) -> None:
    with db.write() as session:
        session.execute(sa.update(Job).where(Job.id == job_id).values(state="succeeded"))


def _submit(db: Database, tenant_id: int, limits: queue.JobLimits) -> str:
    return queue.submit(db, tenant_id, "ppo", "trainers:count", {"timesteps": 64}, limits).id


def test_a_later_tenants_first_job_takes_the_next_free_slot(db):
    limits = queue.JobLimits(running=2, running_per_tenant=2, queued_per_tenant=5)
    flooder, later = _tenant_id(db, "flooder"), _tenant_id(db, "later")
    flood = [_submit(db, flooder, limits) for _ in range(5)]
    assert queue.admit(db, limits) == flood[:2]
    first = _submit(db, later, limits)
    assert queue.admit(db, limits) == []  # no slot is free
    _finish(db, flood[0])
    assert queue.admit(db, limits) == [first]  # first in, first out would start flood[2]
    _finish(db, flood[1])
    assert queue.admit(db, limits) == [flood[2]]  # the later tenant has no job waiting now


def test_free_slots_go_one_per_tenant_with_the_fewest_running_ties_to_the_oldest_waiting(db):
    limits = queue.JobLimits(running=3, running_per_tenant=3, queued_per_tenant=5)
    a, b, c = (_tenant_id(db, prefix) for prefix in ("a", "b", "c"))
    a_jobs = [_submit(db, a, limits) for _ in range(3)]
    b_jobs = [_submit(db, b, limits) for _ in range(2)]
    c_job = _submit(db, c, limits)
    assert queue.admit(db, limits) == [a_jobs[0], b_jobs[0], c_job]
    _finish(db, c_job)
    _finish(db, a_jobs[0])
    # two free slots: a (none running) before b (one running); then a and b have one each, and the
    # tie goes to the oldest waiting job, a's (submitted before any of b's)
    assert queue.admit(db, limits) == [a_jobs[1], a_jobs[2]]
    _finish(db, a_jobs[1])
    assert queue.admit(db, limits) == [b_jobs[1]]  # the only job still waiting


def test_admission_from_many_threads_at_once_keeps_the_limits_and_starts_each_job_once(db):
    limits = queue.JobLimits(running=4, running_per_tenant=2, queued_per_tenant=5)
    tenants = [_tenant_id(db, f"t{i}") for i in range(3)]
    submitted = [_submit(db, t, limits) for _ in range(4) for t in tenants]
    with ThreadPoolExecutor(8) as pool:
        admitted = [job for batch in pool.map(lambda _: queue.admit(db, limits), range(16)) for job in batch]
    assert len(admitted) == len(set(admitted)) == limits.running
    with db.read() as session:
        states = dict(session.execute(sa.select(Job.id, Job.state).where(Job.id.in_(submitted))).all())
    assert sorted(job for job, state in states.items() if state == "starting") == sorted(admitted)
    per_tenant = [sum(states[job] == "starting" for job in submitted[i :: len(tenants)]) for i in range(3)]
    assert sorted(per_tenant) == [1, 1, 2]  # four slots over three tenants: none gets a third
