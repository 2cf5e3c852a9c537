"""FastAPI dependencies: the app's service objects and the caller's tenant (Bearer auth + rate limit)."""

from __future__ import annotations

import asyncio

from fastapi import Request

from resonance_os.api.http.errors import ApiError
from resonance_os.api.limits.per_address import AddressLimiter
from resonance_os.api.limits.per_key import RateLimiter
from resonance_os.api.persistence.auth_cache import AuthCache
from resonance_os.api.persistence.tenants import TenantContext, authenticate
from resonance_os.api.service import ResonanceService

_BEARER_HINT = "send `Authorization: Bearer <key>` (create a key with `resonance tenants create NAME`)"


def _unauthorized(message: str) -> ApiError:
    return ApiError(401, "Unauthorized", message, {"WWW-Authenticate": "Bearer"})


async def _hold(request: Request, wait_s: float) -> None:
    """Answer a refused client only after its wait (at most the server's ``throttle_max_s``): a client
    that sends again at once is slowed to one request per wait on each connection, and refusing it
    stops costing the event loop, and every other tenant, a request as fast as it can send."""
    await asyncio.sleep(min(wait_s, request.app.state.settings.throttle_max_s))


async def _refused_after_hold(request: Request, wait_s: float, code: str, message: str) -> ApiError:
    """The 429 to raise (``Retry-After``: ``wait_s`` rounded up), once the request was held (:func:`_hold`)."""
    await _hold(request, wait_s)
    return ApiError(429, code, message, {"Retry-After": RateLimiter.retry_after_header(wait_s)})


async def service(request: Request) -> ResonanceService:
    return request.app.state.service


async def tenant(request: Request) -> TenantContext:
    """The tenant behind the request's Bearer key; 401 if missing, malformed or revoked, 429 if over rate
    or if the client address has failed authentication too often (checked first, from memory). A 429
    is answered only after the wait it names, at most ``throttle_max_s`` (:func:`_hold`).

    Runs on the event loop: a key verified in the last ``auth_cache_s`` seconds is taken from memory,
    others cost one indexed point query, cheaper than the hop to the thread pool that sync
    dependencies take."""
    failures: AddressLimiter = request.app.state.auth_failures
    cache: AuthCache = request.app.state.auth_cache
    address = request.client.host if request.client else "unknown"
    header = request.headers.get("authorization")
    scheme, _, token = (header or "").partition(" ")
    token = token.strip()
    blocked = failures.wait(address)
    if blocked > 0 and (not token or cache.cached(token) is None):
        raise await _refused_after_hold(
            request,
            blocked,
            "TooManyFailedLogins",
            f"too many failed authentications from {address}; retry after {blocked:.1f} s with a valid key",
        )
    if header is None:
        failures.take(address)
        raise _unauthorized(f"missing Authorization header; {_BEARER_HINT}")
    if scheme.lower() != "bearer" or not token or " " in token:
        failures.take(address)
        raise _unauthorized(f"malformed Authorization header; {_BEARER_HINT}")
    db = request.app.state.service.db
    context = cache.lookup(token, lambda key: authenticate(db, key))
    if context is None:
        failures.take(address)
        raise _unauthorized("invalid or revoked API key")
    limiter: RateLimiter = request.app.state.rate_limiter
    wait = limiter.acquire(context.key_id)
    if wait > 0:
        raise await _refused_after_hold(
            request,
            wait,
            "RateLimited",
            f"rate limit of {limiter.rate:g} requests/s per key exceeded; retry after {wait:.2f} s",
        )
    return context
