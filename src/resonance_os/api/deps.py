"""FastAPI dependencies: the app's service objects and the caller's tenant (Bearer auth + rate limit)."""

from __future__ import annotations

from fastapi import Request

from resonance_os.api.http_errors import ApiError
from resonance_os.api.ratelimit import RateLimiter
from resonance_os.api.service import ResonanceService
from resonance_os.api.tenants import TenantContext, authenticate

_BEARER_HINT = "send `Authorization: Bearer <key>` (create a key with `resonance tenants create NAME`)"


def _unauthorized(message: str) -> ApiError:
    return ApiError(401, "Unauthorized", message, {"WWW-Authenticate": "Bearer"})


async def service(request: Request) -> ResonanceService:
    return request.app.state.service


async def tenant(request: Request) -> TenantContext:
    """The tenant behind the request's Bearer key; 401 if missing, malformed or revoked, 429 if over rate.

    Runs on the event loop: a key verified in the last ``auth_cache_s`` seconds is taken from memory,
    others cost one indexed point query, cheaper than the hop to the thread pool that sync
    dependencies take."""
    header = request.headers.get("authorization")
    if header is None:
        raise _unauthorized(f"missing Authorization header; {_BEARER_HINT}")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        raise _unauthorized(f"malformed Authorization header; {_BEARER_HINT}")
    db = request.app.state.service.db
    context = request.app.state.auth_cache.lookup(token, lambda key: authenticate(db, key))
    if context is None:
        raise _unauthorized("invalid or revoked API key")
    limiter: RateLimiter = request.app.state.rate_limiter
    wait = limiter.acquire(context.key_id)
    if wait > 0:
        raise ApiError(
            429,
            "RateLimited",
            f"rate limit of {limiter.rate:g} requests/s per key exceeded; retry after {wait:.2f} s",
            {"Retry-After": limiter.retry_after_header(wait)},
        )
    return context
