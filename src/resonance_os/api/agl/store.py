"""The rollout store: Agent Lightning 0.3.0's ``LightningStore`` semantics on the service's database.

Each method acts for one tenant and touches only that tenant's rows. The rules are those of
``agentlightning.store.collection_based`` (its reference implementation):

- ``enqueue`` makes ``queuing`` rollouts; ``dequeue`` hands the oldest to a worker as a new
  ``preparing`` attempt (claimed with a conditional UPDATE, so two workers never get one rollout);
  ``start_rollout`` makes a rollout with its first attempt at once.
- The first span of an attempt sets it (and, if it is the latest attempt, its rollout) ``running``;
  every span is a heartbeat.
- An attempt's status reaches its rollout only from the latest attempt: ``failed``, ``timeout`` or
  ``unresponsive`` requeue the rollout (``requeuing``) when that status is in the rollout's
  ``retry_condition`` and it has attempts left (``max_attempts``), else the rollout ``failed``.
- The watchdog: before the store's calls (at most once a second per tenant), a latest attempt older
  than ``timeout_seconds`` becomes ``timeout``, one silent (no span, no heartbeat) for
  ``unresponsive_seconds`` becomes ``unresponsive``; both then follow the rule above.
- Span sequence ids are issued per rollout, strictly increasing; a span's own id is raised past.
- A span is stored once: sent again (an exporter's retry, a replayed batch) it is counted a duplicate.

Storage counts against the tenant's quota (:mod:`resonance_os.api.persistence.quotas`): a rollout, attempt,
resources version, worker or span is a row, its JSON its bytes; past the quota, 507 and nothing stored.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from resonance_os.api.agl.schemas import (
    ATTEMPT_SORT_FIELDS,
    RESOURCES_SORT_FIELDS,
    ROLLOUT_SORT_FIELDS,
    WORKER_SORT_FIELDS,
    EnqueueRolloutRequest,
    QueryAttemptsRequest,
    QueryResourcesRequest,
    QueryRolloutsRequest,
    QuerySpansRequest,
    QueryWorkersRequest,
    RolloutConfig,
)
from resonance_os.api.agl.tables import AglAttempt, AglResources, AglRollout, AglSpan, AglWorker
from resonance_os.api.persistence.db import Database
from resonance_os.api.persistence.quotas import AGENT_ROW_BYTES, StorageQuota, charge
from resonance_os.core.errors import NotFoundError, ValidationError

QUEUED = ("queuing", "requeuing")
RUNNING = ("preparing", "running")
FINISHED = ("failed", "succeeded", "cancelled")
SPAN_SORT_COLUMNS = ("sequence_id", "trace_id", "span_id", "parent_id", "name")
SCAN_EVERY_S = 1.0


def _id(prefix: str, nbytes: int) -> str:
    return f"{prefix}-{secrets.token_hex(nbytes)}"


def _json_bytes(*values: Any) -> int:
    return sum(len(json.dumps(v, separators=(",", ":"), default=str)) for v in values) + AGENT_ROW_BYTES


def rollout_json(row: AglRollout, attempt: AglAttempt | None = None) -> dict[str, Any]:
    out = {
        "rollout_id": row.rollout_id,
        "input": row.input,
        "start_time": row.start_time,
        "end_time": row.end_time,
        "mode": row.mode,
        "resources_id": row.resources_id,
        "status": row.status,
        "config": row.config,
        "metadata": row.meta,
    }
    if attempt is not None:
        out["attempt"] = attempt_json(attempt)
    return out


def attempt_json(row: AglAttempt) -> dict[str, Any]:
    return {
        "rollout_id": row.rollout_id,
        "attempt_id": row.attempt_id,
        "sequence_id": row.sequence_id,
        "start_time": row.start_time,
        "end_time": row.end_time,
        "status": row.status,
        "worker_id": row.worker_id,
        "last_heartbeat_time": row.last_heartbeat_time,
        "metadata": row.meta,
    }


def worker_json(row: AglWorker) -> dict[str, Any]:
    return {
        "worker_id": row.worker_id,
        "status": row.status,
        "heartbeat_stats": row.heartbeat_stats,
        "last_heartbeat_time": row.last_heartbeat_time,
        "last_dequeue_time": row.last_dequeue_time,
        "last_busy_time": row.last_busy_time,
        "last_idle_time": row.last_idle_time,
        "current_rollout_id": row.current_rollout_id,
        "current_attempt_id": row.current_attempt_id,
    }


def resources_json(row: AglResources) -> dict[str, Any]:
    return {
        "resources_id": row.resources_id,
        "create_time": row.create_time,
        "update_time": row.update_time,
        "version": row.version,
        "resources": row.resources,
    }


def page(items: list[Any], limit: int, offset: int, total: int) -> dict[str, Any]:
    return {"items": items, "limit": limit, "offset": offset, "total": total}


class StoreQueryError(ValidationError):
    """A page or sort the store cannot serve (400, as Agent Lightning answers it)."""

    http_status = 400


def check_page(request, sort_fields: Sequence[str]) -> None:
    """Agent Lightning's 400s for a bad page or sort, naming the allowed values."""
    if request.sort_by is not None and request.sort_by not in sort_fields:
        raise StoreQueryError(
            f"invalid sort_by {request.sort_by!r}; allowed fields are: {', '.join(sort_fields)}"
        )
    if request.limit == 0 or request.limit < -1:
        raise StoreQueryError("limit must be greater than 0, or -1 for no limit")
    if request.offset < 0:
        raise StoreQueryError("offset must be 0 or more")


def _paged(session: Session, query, model, request, sort_fields) -> tuple[list, int]:
    check_page(request, sort_fields)
    total = session.scalar(sa.select(sa.func.count()).select_from(query.subquery()))
    if request.sort_by is not None:
        column = getattr(model, request.sort_by)
        query = query.order_by(column.desc() if request.sort_order == "desc" else column.asc(), model.id)
    else:
        query = query.order_by(model.id)
    if request.offset:
        query = query.offset(request.offset)
    if request.limit != -1:
        query = query.limit(request.limit)
    return list(session.scalars(query)), int(total or 0)


def _combine(conditions: list, logic: str):
    if not conditions:
        return sa.true()
    return sa.and_(*conditions) if logic == "and" else sa.or_(*conditions)


def _contains(column, text: str):
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return column.like(f"%{escaped}%", escape="\\")


@dataclass
class SpanOutcome:
    stored: int = 0
    duplicates: int = 0
    unknown: int = 0
    unknown_ids: tuple[str, ...] = ()


class AgentStore:
    """The store of every tenant in one database (``tenant_id`` scopes each call)."""

    def __init__(self, db: Database, quota: StorageQuota) -> None:
        self.db = db
        self.quota = quota
        self._last_scan: dict[int, float] = {}
        self._scan_lock = threading.Lock()
        self._span_writes = threading.Lock() if db.is_sqlite else contextlib.nullcontext()

    # rollouts -------------------------------------------------------------------------------------

    def _latest_resources_id(self, session: Session, tenant_id: int) -> str | None:
        return session.scalar(
            sa.select(AglResources.resources_id)
            .where(AglResources.tenant_id == tenant_id)
            .order_by(AglResources.update_time.desc(), AglResources.id.desc())
            .limit(1)
        )

    def _rollout(self, session: Session, tenant_id: int, rollout_id: str) -> AglRollout:
        row = session.scalar(
            sa.select(AglRollout)
            .where(AglRollout.tenant_id == tenant_id, AglRollout.rollout_id == rollout_id)
            .with_for_update()
        )
        if row is None:
            raise NotFoundError(f"no rollout {rollout_id!r}; enqueue or start it first")
        return row

    def _latest_attempt(self, session: Session, tenant_id: int, rollout_id: str) -> AglAttempt | None:
        return session.scalar(
            sa.select(AglAttempt)
            .where(AglAttempt.tenant_id == tenant_id, AglAttempt.rollout_id == rollout_id)
            .order_by(AglAttempt.sequence_id.desc())
            .limit(1)
        )

    def _new_rollout(self, session: Session, tenant_id: int, request, status: str, now: float) -> AglRollout:
        config = (request.config or RolloutConfig()).model_dump()
        row = AglRollout(
            tenant_id=tenant_id,
            rollout_id=_id("ro", 6),
            input=request.input,
            start_time=now,
            mode=request.mode,
            resources_id=request.resources_id or self._latest_resources_id(session, tenant_id),
            status=status,
            config=config,
            meta=dict(request.metadata or {}),
            queued_at=now if status in QUEUED else None,
            span_sequence=0,
        )
        charge(session, tenant_id, self.quota, 1, _json_bytes(request.input, config, request.metadata))
        session.add(row)
        return row

    def _new_attempt(
        self, session: Session, tenant_id: int, rollout: AglRollout, worker_id: str | None, now: float
    ) -> AglAttempt:
        count = session.scalar(
            sa.select(sa.func.count()).where(
                AglAttempt.tenant_id == tenant_id, AglAttempt.rollout_id == rollout.rollout_id
            )
        )
        attempt = AglAttempt(
            tenant_id=tenant_id,
            rollout_id=rollout.rollout_id,
            attempt_id=_id("at", 4),
            sequence_id=int(count or 0) + 1,
            start_time=now,
            status="preparing",
            worker_id=worker_id,
        )
        charge(session, tenant_id, self.quota, 1, AGENT_ROW_BYTES)
        session.add(attempt)
        rollout.status = "preparing"
        rollout.queued_at = None
        return attempt

    def start_rollout(self, tenant_id: int, request) -> dict[str, Any]:
        now = time.time()
        with self.db.write() as session:
            rollout = self._new_rollout(session, tenant_id, request, "preparing", now)
            attempt = self._new_attempt(session, tenant_id, rollout, request.worker_id, now)
            if request.worker_id:
                self._sync_worker(session, tenant_id, attempt, now)
            session.flush()
            return rollout_json(rollout, attempt)

    def enqueue(self, tenant_id: int, requests: Sequence[EnqueueRolloutRequest]) -> list[dict[str, Any]]:
        now = time.time()
        with self.db.write() as session:
            rows = [
                self._new_rollout(session, tenant_id, request, "queuing", now + i * 1e-6)
                for i, request in enumerate(requests)
            ]
            session.flush()
            return [rollout_json(row) for row in rows]

    def dequeue(self, tenant_id: int, limit: int, worker_id: str | None) -> list[dict[str, Any]]:
        self.scan(tenant_id)
        if limit <= 0:
            return []
        now = time.time()
        claimed: list[dict[str, Any]] = []
        with self.db.write() as session:
            candidates = session.scalars(
                sa.select(AglRollout)
                .where(
                    AglRollout.tenant_id == tenant_id,
                    AglRollout.queued_at.is_not(None),
                    AglRollout.status.in_(QUEUED),
                )
                .order_by(AglRollout.queued_at, AglRollout.id)
                .limit(limit)
            ).all()
            for rollout in candidates:
                won = session.execute(
                    sa.update(AglRollout)
                    .where(AglRollout.id == rollout.id, AglRollout.status.in_(QUEUED))
                    .values(status="preparing", queued_at=None)
                    .execution_options(synchronize_session=False)
                ).rowcount
                if won != 1:
                    continue
                session.refresh(rollout)
                attempt = self._new_attempt(session, tenant_id, rollout, worker_id, now)
                session.flush()
                claimed.append(rollout_json(rollout, attempt))
                if worker_id:
                    self._sync_worker(session, tenant_id, attempt, now, dequeue=True)
            if worker_id and not claimed:
                self._upsert_worker(
                    session,
                    tenant_id,
                    worker_id,
                    now,
                    status="idle",
                    last_idle_time=now,
                    last_dequeue_time=now,
                )
        return claimed

    def start_attempt(self, tenant_id: int, rollout_id: str, worker_id: str | None) -> dict[str, Any]:
        self.scan(tenant_id)
        now = time.time()
        with self.db.write() as session:
            rollout = self._rollout(session, tenant_id, rollout_id)
            attempt = self._new_attempt(session, tenant_id, rollout, worker_id, now)
            if worker_id:
                self._sync_worker(session, tenant_id, attempt, now)
            session.flush()
            return rollout_json(rollout, attempt)

    def _with_latest(
        self, session: Session, tenant_id: int, rows: Sequence[AglRollout]
    ) -> list[dict[str, Any]]:
        if not rows:
            return []
        ids = [row.rollout_id for row in rows]
        latest: dict[str, AglAttempt] = {}
        for attempt in session.scalars(
            sa.select(AglAttempt).where(AglAttempt.tenant_id == tenant_id, AglAttempt.rollout_id.in_(ids))
        ):
            if (
                attempt.rollout_id not in latest
                or attempt.sequence_id > latest[attempt.rollout_id].sequence_id
            ):
                latest[attempt.rollout_id] = attempt
        return [rollout_json(row, latest.get(row.rollout_id)) for row in rows]

    def query_rollouts(self, tenant_id: int, request: QueryRolloutsRequest) -> dict[str, Any]:
        self.scan(tenant_id)
        conditions = []
        if request.status_in is not None:
            conditions.append(AglRollout.status.in_(request.status_in))
        if request.rollout_id_in is not None:
            conditions.append(AglRollout.rollout_id.in_(request.rollout_id_in))
        if request.rollout_id_contains is not None:
            conditions.append(_contains(AglRollout.rollout_id, request.rollout_id_contains))
        query = sa.select(AglRollout).where(
            AglRollout.tenant_id == tenant_id, _combine(conditions, request.filter_logic)
        )
        with self.db.read() as session:
            rows, total = _paged(session, query, AglRollout, request, ROLLOUT_SORT_FIELDS)
            return page(self._with_latest(session, tenant_id, rows), request.limit, request.offset, total)

    def get_rollout(self, tenant_id: int, rollout_id: str) -> dict[str, Any] | None:
        self.scan(tenant_id)
        with self.db.read() as session:
            row = session.scalar(
                sa.select(AglRollout).where(
                    AglRollout.tenant_id == tenant_id, AglRollout.rollout_id == rollout_id
                )
            )
            return None if row is None else self._with_latest(session, tenant_id, [row])[0]

    def update_rollout(self, tenant_id: int, rollout_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        self.scan(tenant_id)
        now = time.time()
        with self.db.write() as session:
            row = self._rollout(session, tenant_id, rollout_id)
            for name in ("input", "mode", "resources_id"):
                if name in fields:
                    setattr(row, name, fields[name])
            if "config" in fields:
                row.config = fields["config"]
            if "metadata" in fields:
                row.meta = fields["metadata"]
            if "status" in fields:
                self._set_rollout_status(row, fields["status"], now)
            session.flush()
            return rollout_json(row)

    @staticmethod
    def _set_rollout_status(row: AglRollout, status: str, now: float) -> None:
        if status in FINISHED:
            row.end_time = now
        if status in QUEUED:
            row.queued_at = row.queued_at if row.status in QUEUED and row.queued_at else now
        else:
            row.queued_at = None
        row.status = status

    # attempts -------------------------------------------------------------------------------------

    def query_attempts(
        self, tenant_id: int, rollout_id: str, request: QueryAttemptsRequest
    ) -> dict[str, Any]:
        self.scan(tenant_id)
        query = sa.select(AglAttempt).where(
            AglAttempt.tenant_id == tenant_id, AglAttempt.rollout_id == rollout_id
        )
        with self.db.read() as session:
            rows, total = _paged(session, query, AglAttempt, request, ATTEMPT_SORT_FIELDS)
            return page([attempt_json(r) for r in rows], request.limit, request.offset, total)

    def latest_attempt(self, tenant_id: int, rollout_id: str) -> dict[str, Any] | None:
        self.scan(tenant_id)
        with self.db.read() as session:
            row = self._latest_attempt(session, tenant_id, rollout_id)
            return None if row is None else attempt_json(row)

    def update_attempt(
        self, tenant_id: int, rollout_id: str, attempt_id: str, fields: dict[str, Any]
    ) -> dict[str, Any]:
        self.scan(tenant_id)
        with self.db.write() as session:
            attempt = self._apply_attempt_update(
                session, tenant_id, rollout_id, attempt_id, fields, time.time()
            )
            return attempt_json(attempt)

    def _apply_attempt_update(
        self,
        session: Session,
        tenant_id: int,
        rollout_id: str,
        attempt_id: str,
        fields: dict[str, Any],
        now: float,
    ) -> AglAttempt:
        rollout = self._rollout(session, tenant_id, rollout_id)
        latest = self._latest_attempt(session, tenant_id, rollout_id)
        if latest is None:
            raise NotFoundError(f"rollout {rollout_id!r} has no attempts yet")
        if attempt_id == "latest":
            attempt = latest
        else:
            attempt = session.scalar(
                sa.select(AglAttempt).where(
                    AglAttempt.tenant_id == tenant_id,
                    AglAttempt.rollout_id == rollout_id,
                    AglAttempt.attempt_id == attempt_id,
                )
            )
            if attempt is None:
                raise NotFoundError(f"rollout {rollout_id!r} has no attempt {attempt_id!r}")
        sync_worker = False
        if "worker_id" in fields:
            attempt.worker_id = fields["worker_id"]
            sync_worker = bool(fields["worker_id"])
        if "status" in fields:
            attempt.status = fields["status"]
            if attempt.status in ("failed", "succeeded"):
                attempt.end_time = now
            sync_worker = sync_worker or bool(attempt.worker_id)
        if "last_heartbeat_time" in fields:
            attempt.last_heartbeat_time = fields["last_heartbeat_time"]
        if "metadata" in fields:
            attempt.meta = fields["metadata"]
        if attempt.attempt_id == latest.attempt_id:
            status = self._rollout_status_from(attempt, rollout.config)
            if status != rollout.status:
                self._set_rollout_status(rollout, status, now)
        if sync_worker:
            self._sync_worker(session, tenant_id, attempt, now)
        session.flush()
        return attempt

    @staticmethod
    def _rollout_status_from(attempt: AglAttempt, config: dict[str, Any]) -> str:
        if attempt.status in ("preparing", "running", "succeeded"):
            return attempt.status
        retry = attempt.status in (config.get("retry_condition") or [])
        return (
            "requeuing" if retry and attempt.sequence_id < int(config.get("max_attempts") or 1) else "failed"
        )

    # watchdog -------------------------------------------------------------------------------------

    def scan(self, tenant_id: int) -> None:
        """Time out and mark unresponsive the tenant's running attempts (at most once per ``SCAN_EVERY_S``)."""
        now = time.time()
        with self._scan_lock:
            if now - self._last_scan.get(tenant_id, 0.0) < SCAN_EVERY_S:
                return
            self._last_scan[tenant_id] = now
        with self.db.read() as session:
            running = session.scalars(
                sa.select(AglRollout).where(AglRollout.tenant_id == tenant_id, AglRollout.status.in_(RUNNING))
            ).all()
            watched = [
                r for r in running if r.config.get("timeout_seconds") or r.config.get("unresponsive_seconds")
            ]
            latest = {
                row["rollout_id"]: row.get("attempt")
                for row in self._with_latest(session, tenant_id, watched)
            }
        updates: list[tuple[str, str, str]] = []
        for rollout in watched:
            attempt = latest.get(rollout.rollout_id)
            if attempt is None:
                continue
            timeout = rollout.config.get("timeout_seconds")
            silent = rollout.config.get("unresponsive_seconds")
            heard = attempt["last_heartbeat_time"] or attempt["start_time"]
            if timeout is not None and now - attempt["start_time"] > timeout:
                updates.append((rollout.rollout_id, attempt["attempt_id"], "timeout"))
            elif silent is not None and attempt["status"] != "unresponsive" and now - heard > silent:
                updates.append((rollout.rollout_id, attempt["attempt_id"], "unresponsive"))
        if not updates:
            return
        with self.db.write() as session:
            for rollout_id, attempt_id, status in updates:
                latest_now = self._latest_attempt(session, tenant_id, rollout_id)
                rollout = self._rollout(session, tenant_id, rollout_id)
                if latest_now is None or latest_now.attempt_id != attempt_id or rollout.status not in RUNNING:
                    continue  # the runner reported, or someone else timed it out, since the read
                self._apply_attempt_update(
                    session, tenant_id, rollout_id, attempt_id, {"status": status}, now
                )

    # spans ----------------------------------------------------------------------------------------

    def require_attempt(self, tenant_id: int, rollout_id: str, attempt_id: str) -> None:
        """``NotFoundError`` unless the tenant has this attempt of this rollout."""
        with self.db.read() as session:
            found = session.scalar(
                sa.select(AglAttempt.id).where(
                    AglAttempt.tenant_id == tenant_id,
                    AglAttempt.rollout_id == rollout_id,
                    AglAttempt.attempt_id == attempt_id,
                )
            )
        if found is None:
            raise NotFoundError(
                f"no attempt {attempt_id!r} of rollout {rollout_id!r}; dequeue or start the rollout first"
            )

    def next_sequence_id(self, tenant_id: int, rollout_id: str) -> int:
        with self.db.write() as session:
            rollout = self._rollout(session, tenant_id, rollout_id)
            rollout.span_sequence += 1
            return rollout.span_sequence

    def add_spans(self, tenant_id: int, spans: Sequence[dict[str, Any]]) -> SpanOutcome:
        """Store spans (Agent Lightning ``Span`` dicts; ``sequence_id`` ``None`` to have one issued).

        Spans of rollouts or attempts this tenant does not have are not stored (``unknown``). Two
        writers racing to store one span (PostgreSQL) conflict on its unique key; the loser's whole
        batch is tried again and then counts that span a duplicate."""
        with self._span_writes:  # SQLite: queue here, not in its busy handler's sleeps (up to 100 ms)
            try:
                return self._add_spans([dict(span) for span in spans], tenant_id)
            except IntegrityError:
                return self._add_spans([dict(span) for span in spans], tenant_id)

    def _add_spans(self, spans: list[dict[str, Any]], tenant_id: int) -> SpanOutcome:
        outcome = SpanOutcome()
        if not spans:
            return outcome
        groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for span in spans:
            groups[(span["rollout_id"], span["attempt_id"])].append(span)
        now = time.time()
        unknown: list[str] = []
        with self.db.write() as session:
            rollouts, attempts = _span_owners(session, tenant_id, {rid for rid, _ in groups})
            latest = _latest_attempts(attempts.values())
            rows: list[dict[str, Any]] = []
            for (rollout_id, attempt_id), group in groups.items():
                rollout, attempt = rollouts.get(rollout_id), attempts.get((rollout_id, attempt_id))
                if rollout is None or attempt is None:
                    outcome.unknown += len(group)
                    unknown.append(f"{rollout_id}/{attempt_id}")
                    continue
                fresh = _unseen_spans(session, tenant_id, rollout_id, attempt_id, group)
                outcome.duplicates += len(group) - len(fresh)
                if not fresh:
                    continue
                rows += _numbered_span_rows(tenant_id, rollout, attempt_id, fresh)
                self._heartbeat(rollout, attempt, latest.get(rollout_id), now)
            if rows:
                charge(session, tenant_id, self.quota, len(rows), sum(len(r["body"]) for r in rows))
                session.execute(sa.insert(AglSpan), rows)
            outcome.stored = len(rows)
        outcome.unknown_ids = tuple(unknown)
        return outcome

    @staticmethod
    def _heartbeat(rollout: AglRollout, attempt: AglAttempt, latest: AglAttempt | None, now: float) -> None:
        attempt.last_heartbeat_time = now
        if attempt.status in ("preparing", "unresponsive"):
            attempt.status = "running"
        if (
            latest is not None
            and latest.attempt_id == attempt.attempt_id
            and rollout.status in ("preparing", "requeuing")
        ):
            rollout.status = "running"
            rollout.queued_at = None

    def query_spans(self, tenant_id: int, request: QuerySpansRequest) -> str:
        """The ``{items, limit, offset, total}`` page as JSON text (spans are stored as JSON)."""
        check_page(request, SPAN_SORT_COLUMNS)
        self.scan(tenant_id)
        with self.db.read() as session:
            attempt_id = request.attempt_id
            if attempt_id == "latest":
                latest = self._latest_attempt(session, tenant_id, request.rollout_id)
                if latest is None:
                    return json.dumps(page([], request.limit, request.offset, 0))
                attempt_id = latest.attempt_id
            must = [AglSpan.tenant_id == tenant_id, AglSpan.rollout_id == request.rollout_id]
            if attempt_id is not None:
                must.append(AglSpan.attempt_id == attempt_id)
            conditions = []
            for name in ("trace_id", "span_id", "parent_id", "name"):
                column = getattr(AglSpan, name)
                if getattr(request, name) is not None:
                    conditions.append(column == getattr(request, name))
                if getattr(request, f"{name}_contains") is not None:
                    conditions.append(_contains(column, getattr(request, f"{name}_contains")))
            where = sa.and_(*must, _combine(conditions, request.filter_logic))
            total = session.scalar(sa.select(sa.func.count()).select_from(AglSpan).where(where))
            query = sa.select(AglSpan.body).where(where)
            if request.sort_by is not None:
                column = getattr(AglSpan, request.sort_by)
                query = query.order_by(
                    column.desc() if request.sort_order == "desc" else column.asc(), AglSpan.id
                )
            else:
                query = query.order_by(AglSpan.id)
            if request.offset:
                query = query.offset(request.offset)
            if request.limit != -1:
                query = query.limit(request.limit)
            bodies = session.scalars(query).all()
        return (
            '{"items":['
            + ",".join(bodies)
            + f'],"limit":{request.limit},"offset":{request.offset},"total":{int(total or 0)}}}'
        )

    # resources ------------------------------------------------------------------------------------

    def add_resources(self, tenant_id: int, resources: dict[str, Any]) -> dict[str, Any]:
        now = time.time()
        with self.db.write() as session:
            charge(session, tenant_id, self.quota, 1, _json_bytes(resources))
            row = AglResources(
                tenant_id=tenant_id,
                resources_id=_id("rs", 6),
                create_time=now,
                update_time=now,
                version=1,
                resources=resources,
            )
            session.add(row)
            session.flush()
            return resources_json(row)

    def update_resources(
        self, tenant_id: int, resources_id: str, resources: dict[str, Any]
    ) -> dict[str, Any]:
        now = time.time()
        with self.db.write() as session:
            row = session.scalar(
                sa.select(AglResources).where(
                    AglResources.tenant_id == tenant_id, AglResources.resources_id == resources_id
                )
            )
            if row is None:
                charge(session, tenant_id, self.quota, 1, _json_bytes(resources))
                row = AglResources(
                    tenant_id=tenant_id,
                    resources_id=resources_id,
                    create_time=now,
                    update_time=now,
                    version=1,
                    resources=resources,
                )
                session.add(row)
            else:
                charge(session, tenant_id, self.quota, 0, _json_bytes(resources))
                row.resources, row.update_time, row.version = resources, now, row.version + 1
            session.flush()
            return resources_json(row)

    def get_resources(self, tenant_id: int, resources_id: str | None) -> dict[str, Any] | None:
        """Resources by id; the latest (by update time) for ``None``."""
        with self.db.read() as session:
            query = sa.select(AglResources).where(AglResources.tenant_id == tenant_id)
            if resources_id is None:
                query = query.order_by(AglResources.update_time.desc(), AglResources.id.desc()).limit(1)
            else:
                query = query.where(AglResources.resources_id == resources_id)
            row = session.scalar(query)
            return None if row is None else resources_json(row)

    def query_resources(self, tenant_id: int, request: QueryResourcesRequest) -> dict[str, Any]:
        conditions = [AglResources.tenant_id == tenant_id]
        if request.resources_id is not None:
            conditions.append(AglResources.resources_id == request.resources_id)
        if request.resources_id_contains is not None:
            conditions.append(_contains(AglResources.resources_id, request.resources_id_contains))
        with self.db.read() as session:
            rows, total = _paged(
                session,
                sa.select(AglResources).where(*conditions),
                AglResources,
                request,
                RESOURCES_SORT_FIELDS,
            )
            return page([resources_json(r) for r in rows], request.limit, request.offset, total)

    # workers --------------------------------------------------------------------------------------

    def _upsert_worker(
        self, session: Session, tenant_id: int, worker_id: str, now: float, **values
    ) -> AglWorker:
        row = session.scalar(
            sa.select(AglWorker).where(AglWorker.tenant_id == tenant_id, AglWorker.worker_id == worker_id)
        )
        if row is None:
            charge(session, tenant_id, self.quota, 1, AGENT_ROW_BYTES)
            row = AglWorker(tenant_id=tenant_id, worker_id=worker_id, status="unknown")
            session.add(row)
        for name, value in values.items():
            setattr(row, name, value)
        return row

    def _sync_worker(
        self, session: Session, tenant_id: int, attempt: AglAttempt, now: float, dequeue: bool = False
    ) -> None:
        values: dict[str, Any] = {"last_dequeue_time": now} if dequeue else {}
        if attempt.status in ("succeeded", "failed", "timeout", "unresponsive"):
            values.update(
                status="idle" if attempt.status in ("succeeded", "failed") else "unknown",
                last_idle_time=now,
                current_rollout_id=None,
                current_attempt_id=None,
            )
        else:
            values.update(
                status="busy",
                last_busy_time=now,
                current_rollout_id=attempt.rollout_id,
                current_attempt_id=attempt.attempt_id,
            )
        self._upsert_worker(session, tenant_id, attempt.worker_id, now, **values)

    def update_worker(self, tenant_id: int, worker_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        now = time.time()
        values: dict[str, Any] = {"last_heartbeat_time": now}
        if "heartbeat_stats" in fields:
            values["heartbeat_stats"] = fields["heartbeat_stats"]
        with self.db.write() as session:
            row = self._upsert_worker(session, tenant_id, worker_id, now, **values)
            session.flush()
            return worker_json(row)

    def get_worker(self, tenant_id: int, worker_id: str) -> dict[str, Any] | None:
        with self.db.read() as session:
            row = session.scalar(
                sa.select(AglWorker).where(AglWorker.tenant_id == tenant_id, AglWorker.worker_id == worker_id)
            )
            return None if row is None else worker_json(row)

    def query_workers(self, tenant_id: int, request: QueryWorkersRequest) -> dict[str, Any]:
        conditions = []
        if request.status_in is not None:
            conditions.append(AglWorker.status.in_(request.status_in))
        if request.worker_id_contains is not None:
            conditions.append(_contains(AglWorker.worker_id, request.worker_id_contains))
        query = sa.select(AglWorker).where(
            AglWorker.tenant_id == tenant_id, _combine(conditions, request.filter_logic)
        )
        with self.db.read() as session:
            rows, total = _paged(session, query, AglWorker, request, WORKER_SORT_FIELDS)
            return page([worker_json(r) for r in rows], request.limit, request.offset, total)

    # waiting and statistics -----------------------------------------------------------------------

    def finished(self, tenant_id: int, rollout_ids: Sequence[str]) -> list[dict[str, Any]]:
        """The rollouts among ``rollout_ids`` that have finished (succeeded, failed or cancelled)."""
        self.scan(tenant_id)
        with self.db.read() as session:
            rows = session.scalars(
                sa.select(AglRollout).where(
                    AglRollout.tenant_id == tenant_id,
                    AglRollout.rollout_id.in_(list(rollout_ids)),
                    AglRollout.status.in_(FINISHED),
                )
            ).all()
        by_id = {row.rollout_id: rollout_json(row) for row in rows}
        return [by_id[rid] for rid in rollout_ids if rid in by_id]

    def statistics(self, tenant_id: int, started_at: float) -> dict[str, Any]:
        with self.db.read() as session:
            count = lambda model: int(  # noqa: E731
                session.scalar(
                    sa.select(sa.func.count()).select_from(model).where(model.tenant_id == tenant_id)
                )
                or 0
            )
            return {
                "name": "ResonanceAgentStore",
                "total_rollouts": count(AglRollout),
                "total_attempts": count(AglAttempt),
                "total_spans": count(AglSpan),
                "total_resources": count(AglResources),
                "total_workers": count(AglWorker),
                "uptime": time.time() - started_at,
            }


def _span_owners(
    session: Session, tenant_id: int, rollout_ids: set[str]
) -> tuple[dict[str, AglRollout], dict[tuple[str, str], AglAttempt]]:
    """The tenant's rollouts among ``rollout_ids`` (locked for update: their span counters move) and
    every attempt of them, keyed by ``(rollout_id, attempt_id)``."""
    rollouts = {
        row.rollout_id: row
        for row in session.scalars(
            sa.select(AglRollout)
            .where(AglRollout.tenant_id == tenant_id, AglRollout.rollout_id.in_(rollout_ids))
            .with_for_update()
        )
    }
    attempts = {
        (row.rollout_id, row.attempt_id): row
        for row in session.scalars(
            sa.select(AglAttempt).where(
                AglAttempt.tenant_id == tenant_id, AglAttempt.rollout_id.in_(list(rollouts))
            )
        )
    }
    return rollouts, attempts


def _latest_attempts(attempts: Iterable[AglAttempt]) -> dict[str, AglAttempt]:
    """Each rollout's attempt with the highest ``sequence_id``."""
    latest: dict[str, AglAttempt] = {}
    for attempt in attempts:
        if attempt.rollout_id not in latest or attempt.sequence_id > latest[attempt.rollout_id].sequence_id:
            latest[attempt.rollout_id] = attempt
    return latest


def _unseen_spans(
    session: Session, tenant_id: int, rollout_id: str, attempt_id: str, group: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The spans of ``group`` this attempt has not stored yet, each ``span_id`` once."""
    seen = set(
        session.scalars(
            sa.select(AglSpan.span_id).where(
                AglSpan.tenant_id == tenant_id,
                AglSpan.rollout_id == rollout_id,
                AglSpan.attempt_id == attempt_id,
                AglSpan.span_id.in_({s["span_id"] for s in group}),
            )
        )
    )
    fresh: list[dict[str, Any]] = []
    for span in group:
        if span["span_id"] not in seen:
            seen.add(span["span_id"])
            fresh.append(span)
    return fresh


def _numbered_span_rows(
    tenant_id: int, rollout: AglRollout, attempt_id: str, fresh: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """``AglSpan`` rows for ``fresh``: spans without a ``sequence_id`` are issued the rollout's next ones,
    and its span counter moves past every number used."""
    counter = max([rollout.span_sequence] + [s["sequence_id"] for s in fresh if s["sequence_id"] is not None])
    rows = []
    for span in fresh:
        if span["sequence_id"] is None:
            counter += 1
            span["sequence_id"] = counter
        rows.append(
            {
                "tenant_id": tenant_id,
                "rollout_id": rollout.rollout_id,
                "attempt_id": attempt_id,
                "sequence_id": span["sequence_id"],
                "trace_id": span["trace_id"],
                "span_id": span["span_id"],
                "parent_id": span["parent_id"],
                "name": span["name"],
                "body": json.dumps(span, separators=(",", ":")),
            }
        )
    rollout.span_sequence = counter
    return rows
