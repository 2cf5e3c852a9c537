"""uvicorn's HTTP protocol with a deadline for request headers, so stalled connections are dropped.

uvicorn closes idle keep-alive connections but waits forever for a request whose headers trickle in
(or never come after the connection opens): a few hundred such connections hold sockets and memory.
:class:`HeaderTimeoutProtocol` gives every request ``$RESONANCE_HEADER_TIMEOUT_S`` seconds (default
:data:`HEADER_TIMEOUT_S`) from the connection opening, or from its first byte on a kept-alive
connection, until its headers are complete; then it answers 408 and closes. Slow bodies are the job of
:class:`~resonance_os.api.middleware.BodyLimitMiddleware`'s body timeout.

It also holds a client to the ``Retry-After`` it was given: a request refused with 429 by a rate limit
records how long to wait in its scope (:func:`throttle_connection`), and the connection is not read
again until that time has passed (at most the server's ``throttle_max_s``). A client that floods on
kept-alive connections is slowed to one request per wait on each of them, instead of costing the
event loop (and every other tenant) a refusal per request as fast as it can send.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
from collections.abc import MutableMapping
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

HEADER_TIMEOUT_S = 10.0
THROTTLE_SCOPE_KEY = "resonance.throttle_s"
"""Scope entry: seconds the connection that carried this request waits before it is read again."""

_TIMEOUT_BODY = json.dumps(
    {
        "error": {
            "type": "RequestTimeout",
            "message": "request headers were not received in time; send them at once",
        }
    }
).encode()
_TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
    + f"content-length: {len(_TIMEOUT_BODY)}\r\n\r\n".encode()
    + _TIMEOUT_BODY
)


def header_timeout_s() -> float:
    """The header deadline from ``$RESONANCE_HEADER_TIMEOUT_S`` (seconds), else the default."""
    raw = os.environ.get("RESONANCE_HEADER_TIMEOUT_S")
    return float(raw) if raw else HEADER_TIMEOUT_S


def throttle_connection(scope: MutableMapping[str, Any], seconds: float) -> None:
    """Do not read the connection of the request with ``scope`` for ``seconds`` after its response."""
    scope[THROTTLE_SCOPE_KEY] = seconds


class HeaderTimeoutProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` plus the header deadline and the throttle described in the module docstring."""

    _header_timer: asyncio.TimerHandle | None = None
    _throttle_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm_header_timer()

    def on_headers_complete(self) -> None:
        self._cancel_header_timer()
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and cycle.on_response == self.on_response_complete:
            cycle.on_response = functools.partial(self._response_sent, cycle.scope)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        if self._throttle_timer is not None:
            self._throttle_timer.cancel()
            self._throttle_timer = None
        super().connection_lost(exc)

    def _response_sent(self, scope: dict[str, Any]) -> None:
        pause = scope.get(THROTTLE_SCOPE_KEY, 0.0)
        if pause <= 0.0 or self.transport.is_closing():
            self.on_response_complete()
            return
        self.transport.pause_reading()
        self._throttle_timer = self.loop.call_later(pause, self._throttle_over)

    def _throttle_over(self) -> None:
        self._throttle_timer = None
        if not self.transport.is_closing():
            self.transport.resume_reading()
            self.on_response_complete()

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
