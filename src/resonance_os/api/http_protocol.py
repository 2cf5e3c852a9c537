"""uvicorn's HTTP protocol with a deadline for request headers, so stalled connections are dropped.

uvicorn closes idle keep-alive connections but waits forever for a request whose headers trickle in
(or never come after the connection opens): a few hundred such connections hold sockets and memory.
:class:`HeaderTimeoutProtocol` gives every request ``$RESONANCE_HEADER_TIMEOUT_S`` seconds (default
:data:`HEADER_TIMEOUT_S`) from the connection opening, or from its first byte on a kept-alive
connection, until its headers are complete; then it answers 408 and closes. Slow bodies are the job of
:class:`~resonance_os.api.middleware.BodyLimitMiddleware`'s body timeout.
"""

from __future__ import annotations

import asyncio
import json
import os

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

HEADER_TIMEOUT_S = 10.0

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


class HeaderTimeoutProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` plus the header deadline described in the module docstring."""

    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm_header_timer()

    def on_headers_complete(self) -> None:
        self._cancel_header_timer()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
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
