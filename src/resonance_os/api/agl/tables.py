"""The store's tables, one tenant's rows apart from another's (every row has ``tenant_id``, every query
filters on it). Created by migration ``0006``; registered on the one metadata by :mod:`resonance_os.api.persistence.db`.

- ``api_agl_rollouts``    a task and its state; ``queued_at`` orders the queue (set while ``queuing`` or
                          ``requeuing``); ``span_sequence`` is the last span sequence id issued.
- ``api_agl_attempts``    each try at a rollout, with its worker and heartbeat.
- ``api_agl_spans``       stored spans, the full Agent Lightning ``Span`` JSON in ``body``; unique per
                          (tenant, rollout, attempt, span id), so a span sent twice is stored once.
- ``api_agl_resources``   versioned named resources (LLM endpoints, prompt templates).
- ``api_agl_workers``     runners and their heartbeats.
- ``api_agl_store_urls``  revocable store URLs (``/agl-key/<token>``): only an HMAC of the token is kept.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from resonance_os.profiles.schema import Base, Tenant, utcnow

ID = sa.String(64)
SPAN_PK = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _tenant_id() -> Mapped[int]:
    return mapped_column(sa.ForeignKey(Tenant.id, ondelete="CASCADE"))


class AglRollout(Base):
    __tablename__ = "api_agl_rollouts"
    __table_args__ = (
        sa.UniqueConstraint("tenant_id", "rollout_id", name="uq_api_agl_rollouts_tenant_rollout"),
        sa.Index("ix_api_agl_rollouts_queue", "tenant_id", "queued_at"),
        sa.Index("ix_api_agl_rollouts_status", "tenant_id", "status"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = _tenant_id()
    rollout_id: Mapped[str] = mapped_column(ID)
    input: Mapped[Any] = mapped_column(sa.JSON, nullable=True)
    start_time: Mapped[float] = mapped_column(sa.Float)
    end_time: Mapped[float | None] = mapped_column(sa.Float)
    mode: Mapped[str | None] = mapped_column(sa.String(8))
    resources_id: Mapped[str | None] = mapped_column(ID)
    status: Mapped[str] = mapped_column(sa.String(16))
    config: Mapped[dict[str, Any]]
    meta: Mapped[dict[str, Any] | None] = mapped_column("metadata", sa.JSON)
    queued_at: Mapped[float | None] = mapped_column(sa.Float)
    span_sequence: Mapped[int] = mapped_column(default=0)


class AglAttempt(Base):
    __tablename__ = "api_agl_attempts"
    __table_args__ = (
        sa.UniqueConstraint("tenant_id", "rollout_id", "attempt_id", name="uq_api_agl_attempts_ids"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = _tenant_id()
    rollout_id: Mapped[str] = mapped_column(ID)
    attempt_id: Mapped[str] = mapped_column(ID)
    sequence_id: Mapped[int]
    start_time: Mapped[float] = mapped_column(sa.Float)
    end_time: Mapped[float | None] = mapped_column(sa.Float)
    status: Mapped[str] = mapped_column(sa.String(16))
    worker_id: Mapped[str | None] = mapped_column(sa.String(256))
    last_heartbeat_time: Mapped[float | None] = mapped_column(sa.Float)
    meta: Mapped[dict[str, Any] | None] = mapped_column("metadata", sa.JSON)


class AglSpan(Base):
    __tablename__ = "api_agl_spans"
    __table_args__ = (
        sa.UniqueConstraint("tenant_id", "rollout_id", "attempt_id", "span_id", name="uq_api_agl_spans_ids"),
        sa.Index("ix_api_agl_spans_order", "tenant_id", "rollout_id", "sequence_id"),
    )

    id: Mapped[int] = mapped_column(SPAN_PK, primary_key=True, autoincrement=True)
    tenant_id: Mapped[int] = _tenant_id()
    rollout_id: Mapped[str] = mapped_column(ID)
    attempt_id: Mapped[str] = mapped_column(ID)
    sequence_id: Mapped[int]
    trace_id: Mapped[str] = mapped_column(sa.String(32))
    span_id: Mapped[str] = mapped_column(sa.String(16))
    parent_id: Mapped[str | None] = mapped_column(sa.String(16))
    name: Mapped[str] = mapped_column(sa.Text)
    body: Mapped[str] = mapped_column(sa.Text)


class AglResources(Base):
    __tablename__ = "api_agl_resources"
    __table_args__ = (sa.UniqueConstraint("tenant_id", "resources_id", name="uq_api_agl_resources_ids"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = _tenant_id()
    resources_id: Mapped[str] = mapped_column(ID)
    create_time: Mapped[float] = mapped_column(sa.Float)
    update_time: Mapped[float] = mapped_column(sa.Float)
    version: Mapped[int]
    resources: Mapped[dict[str, Any]]


class AglWorker(Base):
    __tablename__ = "api_agl_workers"
    __table_args__ = (sa.UniqueConstraint("tenant_id", "worker_id", name="uq_api_agl_workers_ids"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = _tenant_id()
    worker_id: Mapped[str] = mapped_column(sa.String(256))
    status: Mapped[str] = mapped_column(sa.String(16))
    heartbeat_stats: Mapped[dict[str, Any] | None] = mapped_column(sa.JSON)
    last_heartbeat_time: Mapped[float | None] = mapped_column(sa.Float)
    last_dequeue_time: Mapped[float | None] = mapped_column(sa.Float)
    last_busy_time: Mapped[float | None] = mapped_column(sa.Float)
    last_idle_time: Mapped[float | None] = mapped_column(sa.Float)
    current_rollout_id: Mapped[str | None] = mapped_column(ID)
    current_attempt_id: Mapped[str | None] = mapped_column(ID)


class AglStoreUrl(Base):
    __tablename__ = "api_agl_store_urls"

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(sa.ForeignKey(Tenant.id, ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(sa.String(64), unique=True)
    prefix: Mapped[str] = mapped_column(sa.String(16))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column()
