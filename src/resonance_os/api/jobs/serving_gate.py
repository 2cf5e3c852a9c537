"""Training yields the machine to requests: a server's requests in flight, seen by its job workers.

A job worker runs at nice 19, so the scheduler already gives a request the CPU when it asks; what a
running job still takes from another tenant's request is the machine it shares while both run (caches,
memory bandwidth, the host's cores below a VM: ``benchmarks/README.md``, abuse.py). So a server process
counts its HTTP requests in flight in a small shared file (:class:`ServingGate`, one per server
process, named in its workers' ``RESONANCE_SERVING_GATE``), and the training loop of each worker it
launched waits while that count is above zero (:class:`RequestYield`, called before every env step and
every optimiser step).

The wait is bounded so requests cannot stall training: at most ``max_wait_s`` per call, and waiting
is paid from an allowance that grows at ``max_share`` of the wall time and banks at most ``window_s``
of it, so over any stretch of ``T`` seconds a job waits at most ``max_share * (T + window_s)`` (a job
that trained undisturbed for an hour has not saved up an hour of waiting); none once the server that
owns the gate is gone (a crashed server cannot leave its workers waiting on a count nobody will lower).

The server's ``training_yield_share`` setting (``RESONANCE_TRAINING_YIELD_SHARE``) is ``max_share``;
it travels in the gate file, so a worker waits as its own server says. At 0 the server makes no gate
and training runs at nice 19 alone.

File layout: 24 bytes, little-endian: signed 64-bit ``in_flight``, the owner's pid, then ``max_share``
as a double. Only the owner writes ``in_flight``, from its event loop (one thread), and an aligned
8-byte read is atomic, so no lock is needed.
"""

from __future__ import annotations

import mmap
import os
import struct
import time
from pathlib import Path

from resonance_os.api.jobs.processes import pid_alive

GATE_ENV = "RESONANCE_SERVING_GATE"
"""Environment variable that names a job worker's gate file (set by ``jobs.launch``)."""
_LAYOUT = struct.Struct("<qqd")
_COUNT = struct.Struct("<q")
MAX_WAIT_S = 0.25
"""Longest one :class:`RequestYield` call waits."""
MAX_SHARE = 0.75
"""Largest share of a job's wall time spent waiting for requests: a flood of requests slows training
to a quarter at worst, never stops it."""
WINDOW_S = 10.0
"""Wall time over which the share is kept: at most ``MAX_SHARE * WINDOW_S`` seconds of waiting bank up."""
POLL_S = 0.001
OWNER_CHECK_S = 1.0


class ServingGate:
    """Requests in flight in one server process, in a file its job workers map read-only."""

    def __init__(self, path: Path, buffer: mmap.mmap, owner: bool) -> None:
        self.path, self._buffer, self.owner = path, buffer, owner

    @classmethod
    def create(cls, folder: Path, max_share: float = MAX_SHARE) -> ServingGate:
        """A new gate owned by this process (``in_flight`` 0) in ``folder``, telling its workers to
        wait at most ``max_share`` of their time; gates of dead owners there are removed."""
        if not 0.0 < max_share < 1.0:
            raise ValueError(f"max_share must be in (0, 1), got {max_share!r}")
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob("gate-*"):
            opened = cls.open(stale)
            if opened is None:
                continue
            alive = opened.owner_alive()
            opened.close()
            if not alive:
                stale.unlink(missing_ok=True)
        path = folder / f"gate-{os.getpid()}-{time.monotonic_ns()}"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, _LAYOUT.pack(0, os.getpid(), max_share))
            buffer = mmap.mmap(fd, _LAYOUT.size)
        finally:
            os.close(fd)
        return cls(path, buffer, owner=True)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> ServingGate | None:
        """The gate at ``path`` for reading, or None when there is no readable gate there."""
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return None
        try:
            if os.fstat(fd).st_size < _LAYOUT.size:
                return None
            buffer = mmap.mmap(fd, _LAYOUT.size, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
        return cls(Path(path), buffer, owner=False)

    @property
    def in_flight(self) -> int:
        return _COUNT.unpack_from(self._buffer)[0]

    @property
    def owner_pid(self) -> int:
        return _LAYOUT.unpack_from(self._buffer)[1]

    @property
    def max_share(self) -> float:
        """The share of a job's wall time its worker may spend waiting (the owner's setting)."""
        return _LAYOUT.unpack_from(self._buffer)[2]

    def owner_alive(self) -> bool:
        return pid_alive(self.owner_pid)

    def _add(self, delta: int) -> None:
        _COUNT.pack_into(self._buffer, 0, max(0, self.in_flight + delta))

    def enter(self) -> None:
        """A request started (owner only)."""
        self._add(+1)

    def leave(self) -> None:
        """A request ended (owner only)."""
        self._add(-1)

    def close(self) -> None:
        """Unmap; the owner also removes the file."""
        self._buffer.close()
        if self.owner:
            self.path.unlink(missing_ok=True)


class ServingGateMiddleware:
    """Counts the app's HTTP requests in ``app.state.serving_gate`` while they run (no gate: no count)."""

    def __init__(self, app, state) -> None:
        self.app, self.state = app, state

    async def __call__(self, scope, receive, send) -> None:
        gate: ServingGate | None = getattr(self.state, "serving_gate", None)
        if scope["type"] != "http" or gate is None:
            await self.app(scope, receive, send)
            return
        gate.enter()
        try:
            await self.app(scope, receive, send)
        finally:
            gate.leave()


class RequestYield:
    """Call it between units of training work: it returns at once unless the gate's server has requests
    in flight, then waits until it has none, ``max_wait_s`` passed, or its allowance is spent (the
    allowance grows at ``max_share`` of the wall time, up to ``max_share * window_s``; ``max_share``
    defaults to the gate's)."""

    def __init__(
        self,
        gate: ServingGate,
        max_wait_s: float = MAX_WAIT_S,
        max_share: float | None = None,
        window_s: float = WINDOW_S,
    ) -> None:
        self.gate, self.max_wait_s = gate, max_wait_s
        self.max_share = gate.max_share if max_share is None else max_share
        self.max_allowance = self.max_share * window_s
        self.allowance = 0.0
        self.waited_s = 0.0
        self._accrued_at = self._owner_checked = time.monotonic()
        self._owner_alive = True

    def __call__(self, *_args: object) -> None:
        if not self._owner_alive or self.gate.in_flight <= 0:
            return
        now = time.monotonic()
        if now - self._owner_checked > OWNER_CHECK_S:
            self._owner_checked, self._owner_alive = now, self.gate.owner_alive()
            if not self._owner_alive:
                return
        self.allowance = min(self.max_allowance, self.allowance + self.max_share * (now - self._accrued_at))
        self._accrued_at = now
        deadline = now + min(self.max_wait_s, self.allowance)
        while self.gate.in_flight > 0 and time.monotonic() < deadline:
            time.sleep(POLL_S)
        waited = time.monotonic() - now
        self.allowance -= waited
        self.waited_s += waited


def request_yield_from_env() -> RequestYield | None:
    """The :class:`RequestYield` for the gate named in ``RESONANCE_SERVING_GATE`` (None without one)."""
    path = os.environ.get(GATE_ENV)
    gate = ServingGate.open(path) if path else None
    return None if gate is None else RequestYield(gate)
