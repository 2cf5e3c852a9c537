"""One error shape for every failure: ``{"error": {"type", "message"}}`` with the right status code.

User errors (``ResonanceError``/``RLError``) carry their own ``http_status``; request validation
(including malformed JSON) is 422 naming the fields; anything else is a 500 that hides internals.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from resonance_os.core.errors import ResonanceError
from resonance_os.rl.errors import RLError

log = logging.getLogger("resonance_os.api")

BODY_PARSE_ERROR = "There was an error parsing the body"
"""FastAPI's 400 detail for a body it cannot decode; the service reports malformed JSON as 422."""


class ApiError(Exception):
    """An HTTP-level failure raised by the service itself (auth, rate limit, body size, not wired)."""

    def __init__(self, status: int, type_: str, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.type = type_
        self.message = message
        self.headers = headers or {}


def error_response(
    status: int, type_: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse({"error": {"type": type_, "message": message}}, status_code=status, headers=headers)


def _field(loc: tuple | list) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header")]
    return ".".join(parts) or "body"


def describe_validation(exc: RequestValidationError) -> str:
    messages = []
    for err in exc.errors():
        if err.get("type") == "json_invalid":
            ctx = err.get("ctx") or {}
            messages.append(f"request body is not valid JSON ({ctx.get('error', 'parse error')})")
        else:
            messages.append(f"{_field(err.get('loc', ()))}: {err.get('msg', 'invalid value')}")
    return "; ".join(messages) or "invalid request"


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.type, exc.message, exc.headers)

    @app.exception_handler(ResonanceError)
    async def _resonance_error(_request: Request, exc: ResonanceError) -> JSONResponse:
        return error_response(exc.http_status, exc.type_name, str(exc))

    @app.exception_handler(RLError)
    async def _rl_error(_request: Request, exc: RLError) -> JSONResponse:
        return error_response(exc.http_status, exc.type_name, str(exc))

    @app.exception_handler(RequestValidationError)
    async def _validation(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(422, "RequestValidationError", describe_validation(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and exc.detail == BODY_PARSE_ERROR:  # e.g. bytes that are not UTF-8
            return error_response(
                422, "RequestValidationError", "request body is not valid JSON (not UTF-8 text)"
            )
        return error_response(
            exc.status_code, "HTTPException", str(exc.detail), getattr(exc, "headers", None)
        )

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> JSONResponse:
        log.exception("internal error on %s %s", request.method, request.url.path)
        return error_response(500, "InternalError", "internal server error; the server log has the details")
