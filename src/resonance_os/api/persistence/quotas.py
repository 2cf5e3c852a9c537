"""Per-tenant storage quotas: how many rows a tenant stores and how many bytes of text they hold.

Counted rows are the tenant's items (generated and submitted texts), feedback (which copies the texts it
judges), profile versions, reward model versions and the agent store's rows (rollouts, attempts, spans,
resources, workers: :mod:`resonance_os.api.agl.store`); counted bytes are the UTF-8 bytes of their texts,
prompts and descriptions, a reward model version's weights and parameters, and the store rows' JSON
(plus ``AGENT_ROW_BYTES`` each). Each tenant's usage is one ``api_usage`` row, changed by a single conditional
``UPDATE ... SET rows = rows + n WHERE rows + n <= limit AND bytes + b <= limit``: O(1) per write, and
atomic, since concurrent writers of one tenant queue on that row (PostgreSQL re-checks the condition
after the wait; SQLite writes one at a time), so a flood cannot overshoot a limit. Items and feedback are
charged inside the transaction that stores them; a profile write (the profile store's own transaction)
reserves first and gives the reservation back if the write fails. A tenant's row is filled from its
stored data the first time it is needed (databases made before quotas existed).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from resonance_os.api.agl.tables import AglAttempt, AglResources, AglRollout, AglSpan, AglWorker
from resonance_os.api.persistence.db import Database, Feedback, Item, RewardModelVersion, Usage
from resonance_os.core.errors import ResonanceError
from resonance_os.profiles.schema import ProfileRow, ProfileVersionRow


class StorageQuotaError(ResonanceError):
    """Storing this would take the tenant past its storage quota (rows or bytes)."""

    http_status = 507


@dataclass(frozen=True)
class StorageQuota:
    """The most rows and text bytes one tenant may store (``RESONANCE_QUOTA_ROWS``/``_BYTES``)."""

    rows: int = 100_000
    bytes: int = 500_000_000


def text_bytes(*texts: str | None) -> int:
    """UTF-8 bytes of the texts (``None`` counts 0)."""
    return sum(len(t.encode("utf-8")) for t in texts if t)


def _octets(session: Session, column):
    if session.get_bind().dialect.name == "postgresql":
        return sa.func.coalesce(sa.func.octet_length(column), 0)
    return sa.func.coalesce(sa.func.length(sa.cast(column, sa.LargeBinary)), 0)


AGENT_ROW_BYTES = 64
"""Bytes counted for each agent-store row on top of its JSON (ids, times, statuses)."""


def _agent_store_queries(session: Session, tenant_id: int) -> tuple:
    n = lambda column: _octets(session, column)  # noqa: E731
    json_text = lambda column: n(sa.cast(column, sa.Text))  # noqa: E731
    counted = (
        (AglRollout, json_text(AglRollout.input) + json_text(AglRollout.config) + json_text(AglRollout.meta)),
        (AglAttempt, sa.literal(0)),
        (AglSpan, n(AglSpan.body)),
        (AglResources, json_text(AglResources.resources)),
        (AglWorker, sa.literal(0)),
    )
    return tuple(
        sa.select(sa.func.count(), sa.func.sum(size + AGENT_ROW_BYTES)).where(model.tenant_id == tenant_id)
        for model, size in counted
    )


def stored(session: Session, tenant_id: int) -> tuple[int, int]:
    """(rows, bytes) the tenant stores now, counted from the tables themselves."""
    n = lambda column: _octets(session, column)  # noqa: E731
    queries = (
        sa.select(sa.func.count(), sa.func.sum(n(Item.text) + n(Item.prompt))).where(
            Item.tenant_id == tenant_id
        ),
        sa.select(
            sa.func.count(),
            sa.func.sum(n(Feedback.item_a_text) + n(Feedback.item_b_text) + n(Feedback.prompt)),
        ).where(Feedback.tenant_id == tenant_id),
        sa.select(sa.func.count(), sa.func.sum(n(ProfileVersionRow.description)))
        .join(ProfileRow, ProfileVersionRow.profile_id == ProfileRow.id)
        .where(ProfileRow.tenant_id == tenant_id),
        sa.select(
            sa.func.count(),
            sa.func.sum(n(RewardModelVersion.weights) + n(sa.cast(RewardModelVersion.params, sa.Text))),
        ).where(RewardModelVersion.tenant_id == tenant_id),
        *_agent_store_queries(session, tenant_id),
    )
    rows = nbytes = 0
    for query in queries:
        count, total = session.execute(query).one()
        rows, nbytes = rows + int(count), nbytes + int(total or 0)
    return rows, nbytes


def _has_usage_row(session: Session, tenant_id: int) -> bool:
    return session.execute(sa.select(Usage.tenant_id).where(Usage.tenant_id == tenant_id)).first() is not None


def _ensure_usage_row(session: Session, tenant_id: int) -> None:
    if _has_usage_row(session, tenant_id):
        return
    rows, nbytes = stored(session, tenant_id)
    try:
        with session.begin_nested():
            session.execute(sa.insert(Usage).values(tenant_id=tenant_id, rows=rows, bytes=nbytes))
    except IntegrityError:  # another writer filled it first
        pass


def charge(session: Session, tenant_id: int, quota: StorageQuota, rows: int, nbytes: int) -> None:
    """Count ``rows`` more rows and ``nbytes`` more bytes for the tenant in ``session``'s transaction, or
    raise ``StorageQuotaError`` (507) naming the limit when either would pass the quota."""
    _ensure_usage_row(session, tenant_id)
    counted = session.execute(
        sa.update(Usage)
        .where(
            Usage.tenant_id == tenant_id,
            Usage.rows + rows <= quota.rows,
            Usage.bytes + nbytes <= quota.bytes,
        )
        .values(rows=Usage.rows + rows, bytes=Usage.bytes + nbytes)
    ).rowcount
    if counted != 1:
        _refuse_if_over(session, tenant_id, quota, rows, nbytes)


def check_room(db: Database, tenant_id: int, quota: StorageQuota, rows: int, nbytes: int) -> None:
    """Raise ``StorageQuotaError`` (507) now if ``rows`` more rows and ``nbytes`` more bytes cannot fit:
    a check before costly work, such as measuring a submitted text, whose result could not be stored.
    A read once the tenant has a usage row (a tenant refused again and again takes no write lock, which
    every other tenant's writes on SQLite wait for); it creates the row first otherwise. It reserves
    nothing; :func:`charge` still decides when the write happens."""
    with db.read() as session:
        if _has_usage_row(session, tenant_id):
            _refuse_if_over(session, tenant_id, quota, rows, nbytes)
            return
    with db.write() as session:
        _ensure_usage_row(session, tenant_id)
        _refuse_if_over(session, tenant_id, quota, rows, nbytes)


def _refuse_if_over(session: Session, tenant_id: int, quota: StorageQuota, rows: int, nbytes: int) -> None:
    used_rows, used_bytes = session.execute(
        sa.select(Usage.rows, Usage.bytes).where(Usage.tenant_id == tenant_id)
    ).one()
    if used_rows + rows > quota.rows:
        raise StorageQuotaError(
            f"storage quota reached: you store {used_rows:,} of at most {quota.rows:,} rows (generated and "
            "submitted texts, feedback, profile versions, reward model versions); delete profiles you no "
            "longer need, or ask the operator to raise RESONANCE_QUOTA_ROWS"
        )
    if used_bytes + nbytes > quota.bytes:
        raise StorageQuotaError(
            f"storage quota reached: storing {nbytes:,} more bytes of text would take you to "
            f"{used_bytes + nbytes:,} bytes, over your limit of {quota.bytes:,}; store shorter texts, delete "
            "profiles you no longer need, or ask the operator to raise RESONANCE_QUOTA_BYTES"
        )


def release(db: Database, tenant_id: int, rows: int, nbytes: int) -> None:
    """Stop counting ``rows`` rows and ``nbytes`` bytes (they were deleted, or their write failed)."""
    with db.write() as session:
        session.execute(
            sa.update(Usage)
            .where(Usage.tenant_id == tenant_id)
            .values(
                rows=sa.case((Usage.rows > rows, Usage.rows - rows), else_=0),
                bytes=sa.case((Usage.bytes > nbytes, Usage.bytes - nbytes), else_=0),
            )
        )


@contextmanager
def reserved(db: Database, tenant_id: int, quota: StorageQuota, rows: int, nbytes: int) -> Iterator[None]:
    """Charge before a write made in another transaction; give the charge back if the write fails."""
    with db.write() as session:
        charge(session, tenant_id, quota, rows, nbytes)
    try:
        yield
    except BaseException:
        release(db, tenant_id, rows, nbytes)
        raise


def usage(db: Database, tenant_id: int, quota: StorageQuota) -> dict[str, int]:
    """The tenant's counted rows and bytes beside its limits."""
    with db.write() as session:
        _ensure_usage_row(session, tenant_id)
        rows, nbytes = session.execute(
            sa.select(Usage.rows, Usage.bytes).where(Usage.tenant_id == tenant_id)
        ).one()
    return {"rows": rows, "rows_limit": quota.rows, "bytes": nbytes, "bytes_limit": quota.bytes}
