"""Per-key token-bucket rate limiting: in memory for one server process, or in a shared file that every
worker of one ``resonance serve --workers N`` locks and updates, so that a key gets the configured rate
however its requests are spread over the workers."""

from __future__ import annotations

import math
import mmap
import os
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class RateLimiter:
    """``rate`` tokens per second refill a bucket of ``burst``; each request takes one.

    ``acquire(key)`` returns 0.0 when the request may go ahead, else the seconds to wait (for
    ``Retry-After``). Buckets live in this process; see :class:`SharedRateLimiter` for several.
    """

    def __init__(self, rate: float, burst: float) -> None:
        self.rate = rate
        self.burst = max(burst, 1.0)
        self._buckets: dict[int, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def acquire(self, key: int) -> float:
        now = time.monotonic()
        with self._locked():
            where, tokens, last = self._load(key, now)
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                self._store(where, key, tokens - 1.0, now)
                return 0.0
            self._store(where, key, tokens, now)
            return (1.0 - tokens) / self.rate

    @staticmethod
    def retry_after_header(wait_s: float) -> str:
        return str(max(1, math.ceil(wait_s)))

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with self._lock:
            yield

    def _load(self, key: int, now: float) -> tuple[int, float, float]:
        """(where the bucket is kept, its tokens, the time of its last update); a new key's bucket is full."""
        return (key, *self._buckets.get(key, (self.burst, now)))

    def _store(self, where: int, key: int, tokens: float, now: float) -> None:
        self._buckets[where] = (tokens, now)


_RECORD = struct.Struct("<qdd")  # key id (0 = free slot), tokens, time of the last update
SLOTS = 4096
PROBES = 8


class SharedRateLimiter(RateLimiter):
    """Buckets in a memory-mapped file shared by processes on one host, updated under ``flock``.

    ``time.monotonic`` is one system-wide clock on Linux, so bucket times agree across processes. A key
    id hashes to a slot with a few probes; when all are taken the least recently used bucket is
    reused (a bucket idle for ``burst / rate`` seconds is full anyway, so nothing is lost by it).
    """

    def __init__(self, rate: float, burst: float, path: str | os.PathLike[str]) -> None:
        import fcntl

        super().__init__(rate, burst)
        self._flock = fcntl.flock
        self._exclusive, self._unlock = fcntl.LOCK_EX, fcntl.LOCK_UN
        self.path = Path(path)
        size = SLOTS * _RECORD.size
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        with self._locked():
            if os.fstat(self._fd).st_size < size:
                os.ftruncate(self._fd, size)
        self._map = mmap.mmap(self._fd, size)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with self._lock:  # threads of this process, then other processes
            self._flock(self._fd, self._exclusive)
            try:
                yield
            finally:
                self._flock(self._fd, self._unlock)

    def _slot(self, key: int) -> int:
        """The slot holding ``key``: its own, else a free one, else the least recently used probe."""
        start = key % SLOTS
        oldest, oldest_time = start, math.inf
        for probe in range(PROBES):
            slot = (start + probe) % SLOTS
            owner, _, last = _RECORD.unpack_from(self._map, slot * _RECORD.size)
            if owner == key or owner == 0:
                return slot
            if last < oldest_time:
                oldest, oldest_time = slot, last
        return oldest

    def _load(self, key: int, now: float) -> tuple[int, float, float]:
        slot = self._slot(key)
        owner, tokens, last = _RECORD.unpack_from(self._map, slot * _RECORD.size)
        return (slot, tokens, last) if owner == key else (slot, self.burst, now)

    def _store(self, where: int, key: int, tokens: float, now: float) -> None:
        _RECORD.pack_into(self._map, where * _RECORD.size, key, tokens, now)
