"""The one database schema: a shared SQLAlchemy metadata, the one ``tenants`` table, and the profile tables.

Every table of ResonanceOS is declared on :class:`Base` and created by the Alembic migrations in
``resonance_os/profiles/migrations`` (applied by :func:`resonance_os.profiles.storage.migrate`):

- ``tenants``           a content team (profile store and service alike); ``name`` is unique.
- ``profiles``          the current version of each tenant's target HRV profile.
- ``profile_versions``  every saved version of a profile, the current one included (append-only).
- ``api_keys``, ``api_items``, ``api_feedback``, ``api_reward_models``, ``api_jobs``: the service's
  tables, declared in :mod:`resonance_os.api.persistence.db` on this same ``Base``, each row owned by one tenant
  through ``tenant_id`` -> ``tenants.id`` (``ON DELETE CASCADE``).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

NAME_MAX_LENGTH = 64
"""Longest tenant or profile name."""


def utcnow() -> datetime:
    """Now, timezone-aware UTC (every time we store is UTC)."""
    return datetime.now(timezone.utc)


class UTCDateTime(sa.TypeDecorator):
    """A timezone-aware UTC timestamp on every backend (SQLite hands back naive datetimes)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return value

    def process_result_value(self, value: datetime | None, dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return value


class Base(DeclarativeBase):
    """The declarative base of every table (one metadata for profiles and the service)."""

    type_annotation_map = {
        dict[str, Any]: sa.JSON,
        list[float]: sa.JSON,
        datetime: UTCDateTime,
    }


class Tenant(Base):
    """A tenant: owns profiles and, in the service, API keys, items, feedback, reward models and jobs."""

    __tablename__ = "tenants"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(NAME_MAX_LENGTH), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    profiles: Mapped[list[ProfileRow]] = relationship(
        back_populates="tenant", cascade="all, delete-orphan", passive_deletes=True
    )


class ProfileRow(Base):
    """The current version of a profile."""

    __tablename__ = "profiles"
    __table_args__ = (sa.UniqueConstraint("tenant_id", "name", name="uq_profile_tenant_name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(sa.ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(sa.String(NAME_MAX_LENGTH))
    description: Mapped[str | None] = mapped_column(sa.Text)
    hrv: Mapped[list[float]]
    version: Mapped[int]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]

    tenant: Mapped[Tenant] = relationship(back_populates="profiles")
    versions: Mapped[list[ProfileVersionRow]] = relationship(
        back_populates="profile",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="ProfileVersionRow.version",
    )


class ProfileVersionRow(Base):
    """Every saved version of a profile, the current one included (append-only)."""

    __tablename__ = "profile_versions"
    __table_args__ = (sa.UniqueConstraint("profile_id", "version", name="uq_profile_version"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    profile_id: Mapped[int] = mapped_column(sa.ForeignKey("profiles.id", ondelete="CASCADE"), index=True)
    version: Mapped[int]
    description: Mapped[str | None] = mapped_column(sa.Text)
    hrv: Mapped[list[float]]
    created_at: Mapped[datetime]

    profile: Mapped[ProfileRow] = relationship(back_populates="versions")
