"""Who is calling the store: the tenant behind a Bearer API key (``/v1/agl``, ``/v1/traces``) or behind
the token of a store URL (``/agl-key/<token>/v1/...``).

Agent Lightning's client treats every 4xx as final and has no notion of ``Retry-After``, so a store
caller over its key's rate is paced rather than refused: its request waits for the rate's next token,
up to ``PACE_MAX_S`` seconds, and only then is refused with 429.
"""

from __future__ import annotations

import asyncio

from fastapi import Request

from resonance_os.api.agl.store_urls import authenticate_token
from resonance_os.api.http.deps import tenant as bearer_tenant
from resonance_os.api.http.errors import ApiError
from resonance_os.api.limits.per_key import RateLimiter
from resonance_os.api.persistence.tenants import TenantContext

PACE_MAX_S = 5.0
STORE_TOKEN_PARAM = "store_token"


async def _paced(request: Request, context: TenantContext) -> TenantContext:
    limiter: RateLimiter = request.app.state.rate_limiter
    waited = 0.0
    while (wait := limiter.acquire(context.key_id)) > 0:
        if waited + wait > PACE_MAX_S:
            raise ApiError(
                429,
                "RateLimited",
                f"rate limit of {limiter.rate:g} requests/s per key exceeded; retry after {wait:.2f} s",
                {"Retry-After": limiter.retry_after_header(wait)},
            )
        await asyncio.sleep(wait)
        waited += wait
    return context


async def token_tenant(request: Request) -> TenantContext:
    """The tenant of the store URL's token; 401 if it is unknown or revoked (failed attempts count
    against the address like failed API keys)."""
    token = request.path_params.get(STORE_TOKEN_PARAM, "")
    failures = request.app.state.auth_failures
    address = request.client.host if request.client else "unknown"
    blocked = failures.wait(address)
    if blocked > 0:
        raise ApiError(
            429,
            "TooManyFailedLogins",
            f"too many failed authentications from {address}; retry after {blocked:.1f} s",
            {"Retry-After": RateLimiter.retry_after_header(blocked)},
        )
    db = request.app.state.service.db
    context = request.app.state.auth_cache.lookup(token, lambda value: authenticate_token(db, value))
    if context is None:
        failures.take(address)
        raise ApiError(
            401,
            "Unauthorized",
            "invalid or revoked store URL; create one with `POST /v1/agl-store-urls` or "
            "`resonance tenants store-url NAME`",
        )
    return await _paced(request, context)


async def store_tenant(request: Request) -> TenantContext:
    """The caller of a store route: by store-URL token when the path has one, else by Bearer key."""
    if STORE_TOKEN_PARAM in request.path_params:
        return await token_tenant(request)
    return await bearer_tenant(request)
