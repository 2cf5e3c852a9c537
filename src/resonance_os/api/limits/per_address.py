"""Token buckets per client address, checked from memory before any other work on a request.

Two allowances use them: failed authentications (a flood of bad keys would cost an HMAC and a database
query each; past the allowance the request is refused with 429 before either) and new connections
(``api.http.protocol``: a client that opens a connection per request is refused at the door). Each is
``burst`` at once, then ``rate`` a second. For logins, successful requests take nothing, and a key
verified recently (still in the :class:`~resonance_os.api.persistence.auth_cache.AuthCache`) keeps working from a
blocked address, so one bad client behind a shared address does not lock out good keys. Buckets live
in this process and are used from the event loop only (no lock needed); with ``resonance serve
--workers N`` each worker keeps its own.
"""

from __future__ import annotations

import time


class AddressLimiter:
    """Token buckets by client address (failed logins, new connections); see the module docstring."""

    def __init__(self, rate: float, burst: float, max_addresses: int = 100_000) -> None:
        self.rate = rate
        self.burst = max(burst, 1.0)
        self.max_addresses = max_addresses
        self._buckets: dict[str, tuple[float, float]] = {}

    def _tokens(self, address: str, now: float) -> float:
        tokens, last = self._buckets.get(address, (self.burst, now))
        return min(self.burst, tokens + (now - last) * self.rate)

    def wait(self, address: str) -> float:
        """0.0 while ``address`` has allowance left; else the seconds until it has again."""
        tokens = self._tokens(address, time.monotonic())
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.rate

    def take(self, address: str) -> None:
        """Count one failed authentication (or new connection) from ``address``."""
        now = time.monotonic()
        tokens = self._tokens(address, now)
        if len(self._buckets) >= self.max_addresses and address not in self._buckets:
            self._buckets.clear()
        self._buckets[address] = (tokens - 1.0, now)
