"""Acknowledged requests as rows of ``tinker_futures``, and the wake-ups that end a long poll.

:func:`submit` stores a request and returns its id; a retry of the same (queue, seq_id) returns the
first one's id (retries are idempotent). :class:`Waiters` lets ``retrieve_future`` sleep until the
worker finishes the future (or its long-poll window ends).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from resonance_os.api.persistence.db import Database
from resonance_os.api.tinker.store import DONE, FAILED, PENDING, RUNNING, TinkerFuture
from resonance_os.profiles.schema import utcnow


class QueueFull(Exception):
    """The tenant has ``limit`` requests waiting already."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"{limit} requests of this tenant are waiting; retry when some have finished")


def submit(
    db: Database,
    tenant_id: int,
    queue: str,
    seq_id: int | None,
    kind: str,
    request: bytes | dict[str, Any],
    max_queued: int,
) -> int:
    """Store a pending request; return its id (the existing one for a repeated (queue, seq_id))."""
    body = request if isinstance(request, bytes) else json.dumps(request).encode()
    if seq_id is not None:
        existing = _find(db, queue, seq_id)
        if existing is not None:
            return existing
    with db.read() as session:
        waiting = session.scalar(
            sa.select(sa.func.count())
            .select_from(TinkerFuture)
            .where(TinkerFuture.tenant_id == tenant_id, TinkerFuture.state.in_((PENDING, RUNNING)))
        )
    if waiting >= max_queued:
        raise QueueFull(max_queued)
    try:
        with db.write() as session:
            row = TinkerFuture(
                tenant_id=tenant_id, queue=queue, seq_id=seq_id, kind=kind, request=body, state=PENDING
            )
            session.add(row)
            session.flush()
            return row.id
    except IntegrityError:  # a concurrent retry inserted it first
        existing = _find(db, queue, seq_id)
        if existing is None:
            raise
        return existing


def _find(db: Database, queue: str, seq_id: int | None) -> int | None:
    with db.read() as session:
        return session.scalar(
            sa.select(TinkerFuture.id).where(TinkerFuture.queue == queue, TinkerFuture.seq_id == seq_id)
        )


def finish(db: Database, future_id: int, result: bytes | dict[str, Any], fmt: str) -> None:
    body = result if isinstance(result, bytes) else json.dumps(result).encode()
    with db.write() as session:
        session.execute(
            sa.update(TinkerFuture)
            .where(TinkerFuture.id == future_id)
            .values(state=DONE, result=body, result_format=fmt, finished_at=utcnow())
        )


def fail(db: Database, future_id: int, message: str, category: str) -> None:
    with db.write() as session:
        session.execute(
            sa.update(TinkerFuture)
            .where(TinkerFuture.id == future_id)
            .values(state=FAILED, error=message, category=category, finished_at=utcnow())
        )


def lookup(db: Database, tenant_id: int, future_id: int) -> TinkerFuture | None:
    """The tenant's future (another tenant's id reads as unknown)."""
    with db.read() as session:
        return session.scalar(
            sa.select(TinkerFuture).where(TinkerFuture.id == future_id, TinkerFuture.tenant_id == tenant_id)
        )


class Waiters:
    """asyncio events per future id, set from the worker thread when a future finishes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: dict[int, list[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = defaultdict(list)

    @contextmanager
    def watch(self, future_id: int) -> Iterator[asyncio.Event]:
        """An event set when ``future_id`` finishes; watch before reading the row, so no finish is missed."""
        entry = (asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            self._events[future_id].append(entry)
        try:
            yield entry[1]
        finally:
            with self._lock:
                entries = self._events.get(future_id, [])
                if entry in entries:
                    entries.remove(entry)
                if not entries:
                    self._events.pop(future_id, None)

    def notify(self, future_id: int) -> None:
        with self._lock:
            entries = list(self._events.get(future_id, ()))
        for loop, event in entries:
            loop.call_soon_threadsafe(event.set)
