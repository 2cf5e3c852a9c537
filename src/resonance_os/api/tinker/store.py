"""The Tinker service's tables (in the one database, on the service's metadata) and their queries.

- ``tinker_sessions``    an SDK ``ServiceClient``: tags, metadata, last heartbeat.
- ``tinker_models``      a training run (one LoRA adapter on a base model): its id is the SDK's
                         ``"{session_id}:train:{model_seq_id}"``, its LoRA settings, its state.
- ``tinker_futures``     every acknowledged request: kind, body, state, result or error. UNIQUE
                         (``queue``, ``seq_id``) makes a retried request the same future; ``queue`` is the
                         model id (training) or the sampling session id (sampling).
- ``tinker_checkpoints`` saved training states and sampler weights (files under the data home).
- ``tinker_samplers``    sampling sessions: the base model and the weights they sample from.

Every row carries ``tenant_id`` and every query filters on it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from resonance_os.api.persistence.db import tenant_id_column
from resonance_os.profiles.schema import Base, utcnow

PENDING, RUNNING, DONE, FAILED = "pending", "running", "done", "failed"


class TinkerSession(Base):
    __tablename__ = "tinker_sessions"

    id: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    tenant_id: Mapped[int] = tenant_id_column()
    tags: Mapped[dict[str, Any]]
    user_metadata: Mapped[dict[str, Any]]
    sdk_version: Mapped[str | None] = mapped_column(sa.String(32))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    heartbeat_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column()


class TinkerModel(Base):
    __tablename__ = "tinker_models"

    id: Mapped[str] = mapped_column(sa.String(128), primary_key=True)
    tenant_id: Mapped[int] = tenant_id_column()
    session_id: Mapped[str] = mapped_column(sa.String(64), index=True)
    base_model: Mapped[str] = mapped_column(sa.String(200))
    lora: Mapped[dict[str, Any]]
    state: Mapped[str] = mapped_column(sa.String(16))  # pending, ready, failed, lost
    user_metadata: Mapped[dict[str, Any]]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_request_at: Mapped[datetime] = mapped_column(default=utcnow)


class TinkerFuture(Base):
    __tablename__ = "tinker_futures"
    __table_args__ = (sa.UniqueConstraint("queue", "seq_id", name="uq_tinker_futures_queue_seq"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = tenant_id_column()
    queue: Mapped[str] = mapped_column(sa.String(128), index=True)
    seq_id: Mapped[int | None]
    kind: Mapped[str] = mapped_column(sa.String(32))
    request: Mapped[bytes] = mapped_column(sa.LargeBinary)
    state: Mapped[str] = mapped_column(sa.String(16), index=True)
    result: Mapped[bytes | None] = mapped_column(sa.LargeBinary)
    result_format: Mapped[str | None] = mapped_column(sa.String(8))  # "json" or "proto"
    error: Mapped[str | None] = mapped_column(sa.Text)
    category: Mapped[str | None] = mapped_column(sa.String(16))  # "user" or "server"
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column()


class TinkerCheckpoint(Base):
    __tablename__ = "tinker_checkpoints"
    __table_args__ = (sa.UniqueConstraint("model_id", "kind", "name", name="uq_tinker_checkpoints_name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = tenant_id_column()
    model_id: Mapped[str] = mapped_column(sa.String(128), index=True)
    kind: Mapped[str] = mapped_column(sa.String(16))  # "training" or "sampler"
    name: Mapped[str] = mapped_column(sa.String(128))
    folder: Mapped[str] = mapped_column(sa.Text)
    size_bytes: Mapped[int] = mapped_column(sa.BigInteger)
    user_metadata: Mapped[dict[str, Any]]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime | None] = mapped_column()


class TinkerSampler(Base):
    __tablename__ = "tinker_samplers"

    id: Mapped[str] = mapped_column(sa.String(160), primary_key=True)
    tenant_id: Mapped[int] = tenant_id_column()
    session_id: Mapped[str] = mapped_column(sa.String(64), index=True)
    base_model: Mapped[str] = mapped_column(sa.String(200))
    model_path: Mapped[str | None] = mapped_column(sa.Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
