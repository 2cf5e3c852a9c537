"""Pure-ASGI middleware: request-body size limit (413) and Prometheus request metrics."""

from __future__ import annotations

import json
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from resonance_os.api.metrics import REQUEST_LATENCY, REQUESTS


def _error_body(type_: str, message: str) -> bytes:
    return json.dumps({"error": {"type": type_, "message": message}}).encode()


class BodyLimitMiddleware:
    """Reject request bodies over ``max_bytes`` with 413: by ``Content-Length`` up front; a body without
    one (chunked) is read here, up to the limit, before the app sees it."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = next((v for k, v in scope.get("headers", ()) if k == b"content-length"), None)
        if length is not None:
            try:
                too_big = int(length) > self.max_bytes
            except ValueError:
                too_big = False
            if too_big:
                await self._reject(send)
                return
            await self.app(scope, receive, send)
            return
        buffered: list[Message] = []
        size = 0
        while True:
            message = await receive()
            buffered.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                await self._reject(send)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return buffered.pop(0) if buffered else await receive()

        await self.app(scope, replay, send)

    async def _reject(self, send: Send) -> None:
        body = _error_body(
            "PayloadTooLarge",
            f"request body is larger than {self.max_bytes} bytes; send less text per request",
        )
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
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
