"""uvicorn's HTTP protocol with a deadline for request headers and a limit on new connections per address.

uvicorn closes idle keep-alive connections but waits forever for a request whose headers trickle in
(or never come after the connection opens): a few hundred such connections hold sockets and memory.
:class:`HeaderTimeoutProtocol` gives every request ``$RESONANCE_HEADER_TIMEOUT_S`` seconds (default
:data:`HEADER_TIMEOUT_S`) from the connection opening, or from its first byte on a kept-alive
connection, until its headers are complete; then it answers 408 and closes. Slow bodies are the job of
:class:`~resonance_os.api.http.middleware.BodyLimitMiddleware`'s body timeout.

A client address may open ``$RESONANCE_NEW_CONNECTIONS_PER_S`` new connections a second (default
:data:`NEW_CONNECTIONS_PER_S`) after a burst of ``$RESONANCE_NEW_CONNECTIONS_BURST``
(:data:`NEW_CONNECTIONS_BURST`); past that, a new connection is not read at all, and is answered 429
and closed after :data:`REFUSED_HOLD_S` (:class:`~resonance_os.api.limits.per_address.AddressLimiter`),
so a client that opens a connection per request is slowed like one refused on a kept-alive
connection (``deps.tenant`` answers a 429 only after its wait).
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections import Counter

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from resonance_os.api.limits.per_address import AddressLimiter
from resonance_os.api.settings import env_float

HEADER_TIMEOUT_S = 10.0
NEW_CONNECTIONS_PER_S = 200.0
NEW_CONNECTIONS_BURST = 400.0
REFUSED_HOLD_S = 1.0
"""A connection refused at the door is answered only after this long, so a client that reconnects as
soon as it is refused waits too (a tarpit); at most MAX_HELD_PER_ADDRESS are held at once per address."""
MAX_HELD_PER_ADDRESS = 64
_held: Counter[str] = Counter()
"""Refused connections held now, per client address (event loop only)."""


def _closing_response(status: str, type_: str, message: str, extra_headers: bytes = b"") -> bytes:
    """A whole HTTP/1.1 response in the service's error shape that closes the connection."""
    body = json.dumps({"error": {"type": type_, "message": message}}).encode()
    return (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\nconnection: close\r\n".encode()
        + extra_headers
        + f"content-length: {len(body)}\r\n\r\n".encode()
        + body
    )


_TIMEOUT_RESPONSE = _closing_response(
    "408 Request Timeout", "RequestTimeout", "request headers were not received in time; send them at once"
)
_TOO_MANY_RESPONSE = _closing_response(
    "429 Too Many Requests",
    "TooManyConnections",
    "too many new connections from this address; keep connections alive and reuse them",
    b"retry-after: 1\r\n",
)


@functools.cache
def new_connections() -> AddressLimiter:
    """This process's buckets of new connections per client address (from the environment, once)."""
    return AddressLimiter(
        env_float("RESONANCE_NEW_CONNECTIONS_PER_S", NEW_CONNECTIONS_PER_S),
        env_float("RESONANCE_NEW_CONNECTIONS_BURST", NEW_CONNECTIONS_BURST),
    )


def header_timeout_s() -> float:
    """The header deadline from ``$RESONANCE_HEADER_TIMEOUT_S`` (seconds), else the default."""
    return env_float("RESONANCE_HEADER_TIMEOUT_S", HEADER_TIMEOUT_S)


class HeaderTimeoutProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` plus the header deadline and the door limit described in the module docstring."""

    _header_timer: asyncio.TimerHandle | None = None
    _refusal_timer: asyncio.TimerHandle | None = None
    _held_address: str | None = None
    _refused = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple) and peer:
            limiter, address = new_connections(), str(peer[0])
            if limiter.wait(address) > 0:
                self._refuse_at_the_door(address)
                return
            limiter.take(address)
        self._arm_header_timer()

    def _refuse_at_the_door(self, address: str) -> None:
        """Read nothing; answer 429 and close after REFUSED_HOLD_S (at once past MAX_HELD_PER_ADDRESS)."""
        self._refused = True
        # uvloop starts reading after connection_made returns, so pause once it has
        self.loop.call_soon(self._pause_refused)
        if _held[address] >= MAX_HELD_PER_ADDRESS:
            self._answer_refused()
            return
        _held[address] += 1
        self._held_address = address
        self._refusal_timer = self.loop.call_later(REFUSED_HOLD_S, self._answer_refused)

    def _pause_refused(self) -> None:
        if not self.transport.is_closing():
            self.transport.pause_reading()

    def data_received(self, data: bytes) -> None:
        if not self._refused:
            super().data_received(data)

    def _answer_refused(self) -> None:
        self._refusal_timer = None
        if not self.transport.is_closing():
            self.transport.write(_TOO_MANY_RESPONSE)
            self.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm_header_timer()

    def on_headers_complete(self) -> None:
        self._cancel_header_timer()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        if self._refusal_timer is not None:
            self._refusal_timer.cancel()
            self._refusal_timer = None
        if self._held_address is not None:
            _held[self._held_address] -= 1
            if not _held[self._held_address]:
                del _held[self._held_address]
            self._held_address = None
        super().connection_lost(exc)

    def _arm_header_timer(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(header_timeout_s(), self._headers_timed_out)

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_timed_out(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            self.transport.write(_TIMEOUT_RESPONSE)
            self.transport.close()
