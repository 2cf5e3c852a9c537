"""The service's database: its SQLAlchemy 2 models and engine set-up.

The service shares one database, one metadata and one ``tenants`` table with the profile store (see
:mod:`resonance_os.profiles.schema`, whose Alembic migrations create every table). Its own tables are
prefixed ``api_``; every row belongs to one tenant (``tenant_id`` -> ``tenants.id``) and every query
filters on ``tenant_id``:

- ``api_keys``           only an HMAC-SHA256 of each key (see :mod:`resonance_os.api.persistence.keys`) and a short
                         display prefix; a key is revoked by stamping ``revoked_at``.
- ``api_items``          generated (or submitted) texts with measured HRV, target HRV and resonance.
- ``api_feedback``       a 1-5 rating of one item or a preference between two; the items' text and HRV
                         and the prompt they answer are copied into the row so feedback survives
                         changes to items.
- ``api_reward_models``  versioned fitted reward models (JSON parameters + safetensors weights).
- ``api_jobs``           background training jobs: state, progress, metrics, worker pid and heartbeat,
                         the timesteps of the newest checkpoint and of the one the attempt resumed from,
                         the learning curve (the training metrics, one point per update).
- ``api_usage``          per tenant, the stored rows and text bytes counted against its storage quota
                         (see :mod:`resonance_os.api.persistence.quotas`).

The embedded default is the SQLite file ``resonance.db`` (WAL mode) in the data home
``$RESONANCE_HOME`` (default ``~/.resonance_os``), shared with the profile commands; any SQLAlchemy URL works,
PostgreSQL as ``postgresql+psycopg://user:pass@host:port/db``. :meth:`Database.migrate` brings a
database to the newest revision.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.orm import Mapped, Session, mapped_column, sessionmaker

from resonance_os.core.errors import StorageError
from resonance_os.core.home import classify_location, default_database, prepare_location
from resonance_os.profiles.schema import Base, Tenant, utcnow
from resonance_os.profiles.storage import WRITE_OPTION, configure_sqlite, migrate


def new_id() -> str:
    """A random 32-hex-digit public id (items, feedback, jobs): unguessable, so ids leak nothing."""
    return uuid.uuid4().hex


def tenant_id_column() -> Mapped[int]:
    """The owning tenant (rows go with it)."""
    return mapped_column(sa.ForeignKey(Tenant.id, ondelete="CASCADE"), index=True)


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = tenant_id_column()
    key_hash: Mapped[str] = mapped_column(sa.String(64), unique=True)
    prefix: Mapped[str] = mapped_column(sa.String(16))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column()


class Item(Base):
    __tablename__ = "api_items"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True, default=new_id)
    tenant_id: Mapped[int] = tenant_id_column()
    source: Mapped[str] = mapped_column(sa.String(16))  # "generated" or "submitted"
    prompt: Mapped[str | None] = mapped_column(sa.Text)
    text: Mapped[str] = mapped_column(sa.Text)
    hrv: Mapped[list[float]]
    target_hrv: Mapped[list[float] | None]
    profile_name: Mapped[str | None] = mapped_column(sa.String(64))
    resonance: Mapped[float | None] = mapped_column(sa.Float)
    policy: Mapped[str | None] = mapped_column(sa.String(32))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Feedback(Base):
    __tablename__ = "api_feedback"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True, default=new_id)
    tenant_id: Mapped[int] = tenant_id_column()
    kind: Mapped[str] = mapped_column(sa.String(16))  # "rating" or "preference"
    rating: Mapped[int | None]
    preferred: Mapped[str | None] = mapped_column(sa.String(1))  # "a" or "b" for a preference
    target_hrv: Mapped[list[float]]
    item_a_id: Mapped[str | None] = mapped_column(sa.String(32))
    item_a_text: Mapped[str] = mapped_column(sa.Text)
    item_a_hrv: Mapped[list[float]]
    item_b_id: Mapped[str | None] = mapped_column(sa.String(32))
    item_b_text: Mapped[str | None] = mapped_column(sa.Text)
    item_b_hrv: Mapped[list[float] | None]
    prompt: Mapped[str | None] = mapped_column(sa.Text)  # what the texts answer (the topic term's prompt)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class RewardModelVersion(Base):
    __tablename__ = "api_reward_models"
    __table_args__ = (
        sa.UniqueConstraint("tenant_id", "version", name="uq_api_reward_models_tenant_version"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = tenant_id_column()
    version: Mapped[int]
    params: Mapped[dict[str, Any]]
    weights: Mapped[bytes] = mapped_column(sa.LargeBinary)
    metrics: Mapped[dict[str, Any]]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Job(Base):
    __tablename__ = "api_jobs"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True, default=new_id)
    tenant_id: Mapped[int] = tenant_id_column()
    kind: Mapped[str] = mapped_column(sa.String(32))
    trainer: Mapped[str] = mapped_column(sa.String(200))  # "module:function", chosen by the server
    state: Mapped[str] = mapped_column(sa.String(16), index=True)
    params: Mapped[dict[str, Any]]
    progress: Mapped[float] = mapped_column(sa.Float, default=0.0)
    metrics: Mapped[dict[str, Any]] = mapped_column(default=dict)
    error: Mapped[str | None] = mapped_column(sa.Text)
    artifact: Mapped[bytes | None] = mapped_column(sa.LargeBinary)
    pid: Mapped[int | None]
    host: Mapped[str | None] = mapped_column(sa.String(255))
    attempts: Mapped[int] = mapped_column(default=0)
    checkpoint_timesteps: Mapped[int | None]
    resumed_from: Mapped[int | None]
    curve: Mapped[list[dict[str, float]] | None] = mapped_column(sa.JSON)
    heartbeat_at: Mapped[datetime | None] = mapped_column()
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column()
    finished_at: Mapped[datetime | None] = mapped_column()


class Usage(Base):
    __tablename__ = "api_usage"

    tenant_id: Mapped[int] = mapped_column(sa.ForeignKey(Tenant.id, ondelete="CASCADE"), primary_key=True)
    rows: Mapped[int] = mapped_column(sa.BigInteger)
    bytes: Mapped[int] = mapped_column(sa.BigInteger)


def resolve_db_url(value: str | os.PathLike[str] | None = None) -> str:
    """The SQLAlchemy URL for ``value``: a URL as is, a SQLite file, or a data home's ``resonance.db``.

    ``None`` falls back to ``$RESONANCE_DB``, then ``$RESONANCE_HOME`` (default ``~/.resonance_os``):
    the one database the profile commands use too (:mod:`resonance_os.core.home`).
    """
    location = classify_location(os.fspath(value) if value is not None else default_database())
    if location.url is not None:
        try:
            make_url(location.url)
        except ArgumentError as exc:
            raise StorageError(f"cannot parse the database URL {location.url!r}: {exc}") from None
        return location.url
    return f"sqlite:///{prepare_location(location).resolve()}"


class Database:
    """An engine plus session factories: ``read()`` for queries, ``write()`` for changes.

    Both are context managers that commit on success and roll back on error.
    """

    def __init__(self, url: str | os.PathLike[str] | None = None) -> None:
        self.url = resolve_db_url(url)
        self.is_sqlite = make_url(self.url).get_backend_name() == "sqlite"
        try:
            if self.is_sqlite:
                self.engine = sa.create_engine(
                    self.url, pool_size=20, max_overflow=20, pool_pre_ping=False, hide_parameters=True
                )
                configure_sqlite(self.engine)
            else:
                self.engine = sa.create_engine(
                    self.url, pool_size=10, max_overflow=20, pool_pre_ping=True, hide_parameters=True
                )
        except (ArgumentError, ImportError) as exc:
            raise StorageError(
                f"cannot open the database {self.redacted_url}: {exc} "
                "(PostgreSQL needs `pip install resonance-os[postgres]` and a postgresql+psycopg:// URL)"
            ) from None
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @property
    def redacted_url(self) -> str:
        """The URL with any password hidden, safe for logs and error messages."""
        return make_url(self.url).render_as_string(hide_password=True)

    @contextmanager
    def read(self) -> Iterator[Session]:
        with self._sessions() as session, session.begin():
            yield session

    @contextmanager
    def write(self) -> Iterator[Session]:
        with self._sessions() as session:
            session.connection(execution_options={WRITE_OPTION: True})
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    def migrate(self) -> str:
        """Apply every pending migration; return the revision the database is at."""
        return migrate(self.engine)

    def dispose(self) -> None:
        self.engine.dispose()
