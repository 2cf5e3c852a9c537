"""Recently verified API keys, so that the hot path does not ask the database on every request."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable

from resonance_os.api.persistence.tenants import TenantContext


class AuthCache:
    """Valid keys remembered for ``ttl_s`` seconds (by their SHA-256, never in the clear).

    The database lookup costs about as much as measuring a paragraph, so ``/v1/analyze`` skips it for a
    key seen in the last ``ttl_s`` seconds. The price: a key revoked or rotated elsewhere (the CLI,
    another worker) keeps working on a server for at most ``ttl_s`` seconds. ``ttl_s=0`` asks the
    database every time. Unknown and revoked keys are never remembered, so a new key works at once.
    Used from the event loop only (no lock needed).
    """

    def __init__(self, ttl_s: float, max_entries: int = 10_000) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._entries: dict[bytes, tuple[TenantContext, float]] = {}

    def cached(self, presented: str) -> TenantContext | None:
        """The caller behind ``presented`` if it was verified within ``ttl_s``, without verifying it."""
        digest = hashlib.sha256(presented.encode("utf-8", "surrogatepass")).digest()
        entry = self._entries.get(digest)
        if entry is not None and time.monotonic() - entry[1] < self.ttl_s:
            return entry[0]
        return None

    def lookup(self, presented: str, verify: Callable[[str], TenantContext | None]) -> TenantContext | None:
        """The caller behind ``presented``: from memory if verified within ``ttl_s``, else ``verify(key)``."""
        if self.ttl_s <= 0:
            return verify(presented)
        digest = hashlib.sha256(presented.encode("utf-8", "surrogatepass")).digest()
        now = time.monotonic()
        entry = self._entries.get(digest)
        if entry is not None and now - entry[1] < self.ttl_s:
            return entry[0]
        context = verify(presented)
        if context is None:
            self._entries.pop(digest, None)
            return None
        if len(self._entries) >= self.max_entries:
            self._entries.clear()
        self._entries[digest] = (context, now)
        return context
