"""Revocable store URLs: ``http://host/agl-key/<token>`` serves one tenant's store to clients that send no
credentials (Agent Lightning's ``LightningStoreClient`` and tracer append ``/v1/agl`` and ``/v1/traces``
to the URL they are given). The token is a secret like an API key: only its keyed hash
(:func:`resonance_os.api.persistence.keys.hash_key`) and a display prefix are stored; revoking it stops the URL.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from resonance_os.api.agl.tables import AglStoreUrl
from resonance_os.api.persistence.db import Database
from resonance_os.api.persistence.keys import display_prefix, hash_key
from resonance_os.api.persistence.tenants import TenantContext
from resonance_os.core.errors import NotFoundError
from resonance_os.profiles.schema import Tenant, utcnow

TOKEN_PREFIX = "aglk_"
URL_PATH = "/agl-key"


@dataclass(frozen=True)
class StoreUrlInfo:
    prefix: str
    created_at: datetime
    revoked_at: datetime | None


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def looks_like_token(value: str) -> bool:
    return value.startswith(TOKEN_PREFIX) and 20 <= len(value) <= 128 and value.isascii()


def store_url(base_url: str, token: str) -> str:
    return f"{base_url.rstrip('/')}{URL_PATH}/{token}"


def create_token(db: Database, tenant_id: int) -> str:
    """A new store token for the tenant (shown once)."""
    token = new_token()
    with db.write() as session:
        session.add(
            AglStoreUrl(tenant_id=tenant_id, token_hash=hash_key(token), prefix=display_prefix(token))
        )
    return token


def tenant_id_named(db: Database, tenant_name: str) -> int:
    """The id of the tenant named ``tenant_name`` (the CLI names tenants)."""
    with db.read() as session:
        tenant_id = session.scalar(sa.select(Tenant.id).where(Tenant.name == tenant_name))
    if tenant_id is None:
        raise NotFoundError(f"no tenant named {tenant_name!r}; create it with `resonance tenants create`")
    return tenant_id


def list_tokens(db: Database, tenant_id: int) -> list[StoreUrlInfo]:
    with db.read() as session:
        rows = session.scalars(
            sa.select(AglStoreUrl).where(AglStoreUrl.tenant_id == tenant_id).order_by(AglStoreUrl.id)
        ).all()
        return [StoreUrlInfo(r.prefix, r.created_at, r.revoked_at) for r in rows]


def revoke_token(db: Database, tenant_id: int, prefix: str) -> int:
    """Revoke the tenant's active store URLs whose token starts with ``prefix``; how many."""
    with db.write() as session:
        rows = session.scalars(
            sa.select(AglStoreUrl).where(AglStoreUrl.tenant_id == tenant_id, AglStoreUrl.revoked_at.is_(None))
        ).all()
        matching = [r for r in rows if r.prefix.startswith(prefix) or prefix.startswith(r.prefix)]
        if not matching:
            raise NotFoundError(f"no active store URL whose token starts with {prefix!r}")
        for row in matching:
            row.revoked_at = utcnow()
        return len(matching)


def authenticate_token(db: Database, token: str) -> TenantContext | None:
    """The tenant behind an unrevoked store token; ``None`` otherwise. The context's ``key_id`` is the
    negated row id, so store URLs never share a rate-limit bucket with API keys."""
    if not looks_like_token(token):
        return None
    with db.engine.connect() as connection:
        row = connection.execute(_AUTH_QUERY, {"token_hash": hash_key(token)}).first()
        connection.rollback()
    if row is None:
        return None
    url_id, prefix, tenant_id, tenant = row
    return TenantContext(tenant_id=tenant_id, tenant=tenant, key_id=-url_id, key_prefix=prefix)


_AUTH_QUERY = (
    sa.select(AglStoreUrl.id, AglStoreUrl.prefix, Tenant.id, Tenant.name)
    .join(Tenant, Tenant.id == AglStoreUrl.tenant_id)
    .where(AglStoreUrl.token_hash == sa.bindparam("token_hash"), AglStoreUrl.revoked_at.is_(None))
)
