"""Pure-ASGI middleware: request-body size limit (413), NUL in the URL (422) and Prometheus request metrics."""

from __future__ import annotations

import asyncio
import json
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from resonance_os.api.http.metrics import REQUEST_LATENCY, REQUESTS


def _error_body(type_: str, message: str) -> bytes:
    return json.dumps({"error": {"type": type_, "message": message}}).encode()


class BodyLimitMiddleware:
    """Read the request body here, before the app sees it: 413 when over ``max_bytes`` (by
    ``Content-Length`` up front, else as it arrives), 408 when it has not all arrived within
    ``timeout_s`` seconds (a stalled or trickling upload would otherwise hold the request forever).

    Both answers close the connection (``connection: close``): the rest of the body was never read, so
    the connection cannot carry another request, and a kept-alive one would stay open for the
    keep-alive time while the client trickles on (472 of 600 trickling connections were still
    established 60 s after their 408)."""

    def __init__(self, app: ASGIApp, max_bytes: int, timeout_s: float = 30.0) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = next((v for k, v in scope.get("headers", ()) if k == b"content-length"), None)
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            await self._reject(send)
            return
        try:
            async with asyncio.timeout(self.timeout_s):
                buffered = await self._read_body(receive)
        except TimeoutError:
            await send_error(
                send,
                408,
                "RequestTimeout",
                f"the request body did not arrive within {self.timeout_s:g} s; send it at once",
                close=True,
            )
            return
        if buffered is None:
            await self._reject(send)
            return

        async def replay() -> Message:
            return buffered.pop(0) if buffered else await receive()

        await self.app(scope, replay, send)

    async def _read_body(self, receive: Receive) -> list[Message] | None:
        """The body's messages up to its end (or a disconnect); ``None`` past ``max_bytes``."""
        buffered: list[Message] = []
        size = 0
        while True:
            message = await receive()
            buffered.append(message)
            if message["type"] != "http.request":
                return buffered
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                return None
            if not message.get("more_body", False):
                return buffered

    async def _reject(self, send: Send) -> None:
        await send_error(
            send,
            413,
            "PayloadTooLarge",
            f"request body is larger than {self.max_bytes} bytes; send less text per request",
            close=True,
        )


class NulGuardMiddleware:
    """Refuse with 422 a path or query string holding a NUL character (``%00``): ids and names in the URL
    reach the database, and PostgreSQL cannot store or compare NUL (request bodies are checked by
    their schemas)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (
            "\x00" in scope.get("path", "") or b"%00" in scope.get("query_string", b"")
        ):
            await send_error(
                send,
                422,
                "RequestValidationError",
                "the URL contains a NUL character (%00); remove it from the id or name",
            )
            return
        await self.app(scope, receive, send)


async def send_error(send: Send, status: int, type_: str, message: str, *, close: bool = False) -> None:
    """Answer with the service's error body without calling the app; with ``close``, the server closes
    the connection after the answer (uvicorn honours ``connection: close`` from the app)."""
    body = _error_body(type_, message)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class MetricsMiddleware:
    """Count requests and time them per route template (``/v1/jobs/{job_id}``, never the raw path)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def recording_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            REQUESTS.labels(scope["method"], template, str(status)).inc()
            REQUEST_LATENCY.labels(scope["method"], template).observe(time.perf_counter() - start)
