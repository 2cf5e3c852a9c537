"""Per-key token-bucket rate limiting (in memory, per server process)."""

from __future__ import annotations

import math
import threading
import time


class RateLimiter:
    """``rate`` tokens per second refill a bucket of ``burst``; each request takes one.

    ``acquire(key)`` returns 0.0 when the request may go ahead, else the seconds to wait (for
    ``Retry-After``). With N server workers a key can get up to N times the rate.
    """

    def __init__(self, rate: float, burst: float) -> None:
        self.rate = rate
        self.burst = max(burst, 1.0)
        self._buckets: dict[object, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def acquire(self, key: object) -> float:
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / self.rate

    @staticmethod
    def retry_after_header(wait_s: float) -> str:
        return str(max(1, math.ceil(wait_s)))
