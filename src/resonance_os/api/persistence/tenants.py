"""Tenants and their API keys: create, list, revoke, rotate, and authenticate a presented key."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from resonance_os.api.persistence.db import ApiKey, Database
from resonance_os.api.persistence.keys import display_prefix, hash_key, looks_like_key, new_key
from resonance_os.core.errors import AlreadyExistsError, NotFoundError
from resonance_os.profiles.names import validate_name
from resonance_os.profiles.schema import Tenant, utcnow


@dataclass(frozen=True)
class TenantContext:
    """Who is calling: the tenant behind a valid, unrevoked key."""

    tenant_id: int
    tenant: str
    key_id: int
    key_prefix: str


@dataclass(frozen=True)
class TenantInfo:
    name: str
    created_at: datetime
    active_keys: list[str]
    revoked_keys: int


def _tenant(session, name: str) -> Tenant:
    tenant = session.scalar(sa.select(Tenant).where(Tenant.name == name))
    if tenant is None:
        known = session.scalars(sa.select(Tenant.name).order_by(Tenant.name)).all()
        raise NotFoundError(f"no tenant named {name!r}; existing tenants: {', '.join(known) or 'none'}")
    return tenant


def _issue_key(session, tenant: Tenant) -> str:
    key = new_key()
    session.add(ApiKey(tenant_id=tenant.id, key_hash=hash_key(key), prefix=display_prefix(key)))
    return key


def create_tenant(db: Database, name: str) -> str:
    """Create tenant ``name`` and return its first API key (shown once; only its hash is stored)."""
    validate_name(name, "tenant")
    with db.write() as session:
        if session.scalar(sa.select(Tenant.id).where(Tenant.name == name)) is not None:
            raise AlreadyExistsError(
                f"tenant {name!r} already exists; use `resonance tenants rotate-key {name}`"
            )
        tenant = Tenant(name=name)
        session.add(tenant)
        session.flush()
        return _issue_key(session, tenant)


def list_tenants(db: Database) -> list[TenantInfo]:
    with db.read() as session:
        result = []
        for tenant in session.scalars(sa.select(Tenant).order_by(Tenant.name)):
            keys = session.scalars(sa.select(ApiKey).where(ApiKey.tenant_id == tenant.id)).all()
            result.append(
                TenantInfo(
                    name=tenant.name,
                    created_at=tenant.created_at,
                    active_keys=[k.prefix for k in keys if k.revoked_at is None],
                    revoked_keys=sum(k.revoked_at is not None for k in keys),
                )
            )
        return result


def revoke_keys(db: Database, name: str, prefix: str | None = None) -> int:
    """Revoke tenant ``name``'s active keys (only the one starting with ``prefix`` if given); return how many."""
    with db.write() as session:
        tenant = _tenant(session, name)
        query = sa.select(ApiKey).where(ApiKey.tenant_id == tenant.id, ApiKey.revoked_at.is_(None))
        keys = session.scalars(query).all()
        if prefix is not None:
            keys = [k for k in keys if k.prefix.startswith(prefix) or prefix.startswith(k.prefix)]
            if not keys:
                raise NotFoundError(f"tenant {name!r} has no active key starting with {prefix!r}")
        now = utcnow()
        for key in keys:
            key.revoked_at = now
        return len(keys)


def rotate_key(db: Database, name: str) -> str:
    """Revoke every active key of tenant ``name`` and return a new one, in one transaction."""
    with db.write() as session:
        tenant = _tenant(session, name)
        session.execute(
            sa.update(ApiKey)
            .where(ApiKey.tenant_id == tenant.id, ApiKey.revoked_at.is_(None))
            .values(revoked_at=utcnow())
        )
        return _issue_key(session, tenant)


def authenticate(db: Database, presented: str) -> TenantContext | None:
    """The caller behind ``presented`` if it is a valid, unrevoked key; ``None`` otherwise."""
    if not looks_like_key(presented):
        return None
    with db.engine.connect() as connection:  # Core, no ORM session: this runs on every request
        row = connection.execute(_AUTH_QUERY, {"key_hash": hash_key(presented)}).first()
        connection.rollback()
    if row is None:
        return None
    key_id, prefix, tenant_id, tenant = row
    return TenantContext(tenant_id=tenant_id, tenant=tenant, key_id=key_id, key_prefix=prefix)


_AUTH_QUERY = (
    sa.select(ApiKey.id, ApiKey.prefix, Tenant.id, Tenant.name)
    .join(Tenant, Tenant.id == ApiKey.tenant_id)
    .where(ApiKey.key_hash == sa.bindparam("key_hash"), ApiKey.revoked_at.is_(None))
)
