"""Turns at the writer: one paragraph is written at a time per server process, tenants take turns.

Writing is CPU-bound, so running two articles at once only splits the core between them. A request
holds the writer for one paragraph, then passes it on when anyone is waiting: waiting tenants are
served round-robin, so a tenant asking for twelve long paragraphs delays another tenant's one-paragraph
request by at most one paragraph, not by the whole article. Every request has a deadline; past it a
request stops (waiting or between paragraphs) with :class:`BusyError` (HTTP 503) rather than holding
the queue. A tenant may have ``per_tenant`` requests in progress (more: 429) and the process
``total`` (more: 503), which also bounds the threads that sit waiting.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from resonance_os.core.errors import BusyError


class TooManyRequestsError(BusyError):
    """This tenant already has as many generations in progress as it may."""

    http_status = 429


class _Ticket:
    """One request's place: identity matters, not value."""

    def __init__(self, tenant_id: int) -> None:
        self.tenant_id = tenant_id


class WriterTurns:
    """Round-robin turns between tenants; see the module docstring."""

    def __init__(self, per_tenant: int = 2, total: int = 16) -> None:
        self.per_tenant = per_tenant
        self.total = total
        self._cond = threading.Condition()
        self._holder: _Ticket | None = None
        self._waiting: dict[int, deque[_Ticket]] = {}  # insertion order is the rotation order
        self._in_progress: Counter[int] = Counter()  # counted turns, for the limits
        self._present: Counter[int] = Counter()  # every turn

    @contextmanager
    def turn(
        self, tenant_id: int, deadline: float | None = None, *, counted: bool = True
    ) -> Iterator[Callable[[], None]]:
        """Hold the writer (waiting for it if needed) until the block ends; the yielded function passes
        the turn on to a waiting tenant and waits for the next one (call it between paragraphs).

        ``deadline`` is a ``time.monotonic()`` instant (``None``: no limit). Raises
        :class:`TooManyRequestsError` or :class:`BusyError` at once when over the limits, and
        :class:`BusyError` when the deadline passes while waiting or passing the turn. A turn that is
        not ``counted`` (measuring or scoring one text: bounded work) waits in the same rotation but
        is not held against the generation limits."""
        deadline = math.inf if deadline is None else deadline
        if counted:
            self._admit(tenant_id)
        ticket = _Ticket(tenant_id)
        with self._cond:
            self._present[tenant_id] += 1
        try:
            with self._cond:
                self._wait(ticket, deadline)
            try:
                yield lambda: self._pass(ticket, deadline)
            finally:
                with self._cond:
                    if self._holder is ticket:
                        self._hand_over()
        finally:
            with self._cond:
                for counter in (self._in_progress, self._present) if counted else (self._present,):
                    counter[tenant_id] -= 1
                    if not counter[tenant_id]:
                        del counter[tenant_id]

    def waiting(self) -> int:
        """Requests waiting for a turn now."""
        with self._cond:
            return sum(len(q) for q in self._waiting.values())

    def tenants(self) -> set[int]:
        """The tenants with a request here now (holding the writer or waiting for it)."""
        with self._cond:
            return set(self._present)

    def _admit(self, tenant_id: int) -> None:
        with self._cond:
            if self._in_progress[tenant_id] >= self.per_tenant:
                raise TooManyRequestsError(
                    f"you already have {self.per_tenant} generations in progress; wait for one to "
                    "finish before sending another"
                )
            if sum(self._in_progress.values()) >= self.total:
                raise BusyError(
                    f"the writer has {self.total} generations in progress or waiting; retry in a minute"
                )
            self._in_progress[tenant_id] += 1

    def _wait(self, ticket: _Ticket, deadline: float) -> None:
        """Take the writer when it is free and nobody waits, else queue and wait (caller holds the lock)."""
        if self._holder is None and not self._waiting:
            self._holder = ticket
            return
        self._waiting.setdefault(ticket.tenant_id, deque()).append(ticket)
        while self._holder is not ticket:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                queue = self._waiting[ticket.tenant_id]
                queue.remove(ticket)
                if not queue:
                    del self._waiting[ticket.tenant_id]
                raise BusyError(
                    "the writer was busy with other requests until this request's time budget ran "
                    "out; retry later or ask for fewer paragraphs"
                )
            self._cond.wait(None if remaining == math.inf else remaining)

    def _pass(self, ticket: _Ticket, deadline: float) -> None:
        if time.monotonic() >= deadline:
            raise BusyError(
                "the article did not finish within this request's time budget; ask for fewer "
                "paragraphs or a shorter prompt"
            )
        with self._cond:
            if not self._waiting:
                return
            self._hand_over()
            self._wait(ticket, deadline)

    def _hand_over(self) -> None:
        """Give the writer to the first waiting tenant in rotation, which then moves to the back; the
        tenant that held it goes behind every other waiting tenant (its other requests included)."""
        previous = self._holder
        self._holder = None
        if previous is not None and previous.tenant_id in self._waiting:
            self._waiting[previous.tenant_id] = self._waiting.pop(previous.tenant_id)
        if self._waiting:
            tenant_id = next(iter(self._waiting))
            queue = self._waiting.pop(tenant_id)
            self._holder = queue.popleft()
            if queue:
                self._waiting[tenant_id] = queue
        self._cond.notify_all()
