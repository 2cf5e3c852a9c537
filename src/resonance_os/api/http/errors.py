"""One error shape for every failure: ``{"error": {"type", "message"}}`` with the right status code.

User errors (``ResonanceError``/``RLError``) carry their own ``http_status``; request validation
(including malformed JSON) is 422 naming the fields; anything else is a 500 that hides internals.
"""

from __future__ import annotations

import logging
import sys
import traceback
from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import SQLAlchemyError
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


def api_error_response(exc: ApiError) -> JSONResponse:
    return error_response(exc.status, exc.type, exc.message, exc.headers)


def _field(loc: tuple | list) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header")]
    return ".".join(parts) or "body"


def describe_body_error(cause: BaseException | None) -> str:
    """Why a body that is not ``JSONDecodeError``-invalid still could not be parsed, and the fix."""
    if isinstance(cause, RecursionError):
        return "request body is nested too deeply to parse; request bodies are at most a few levels deep"
    if isinstance(cause, ValueError) and "digits" in str(cause):
        return (
            f"request body has a number with more than {sys.get_int_max_str_digits()} digits; "
            "send numbers of ordinary size"
        )
    if isinstance(cause, UnicodeDecodeError):
        return "request body is not valid JSON (not UTF-8 text)"
    return "request body is not valid JSON"


def describe_validation(exc: RequestValidationError) -> str:
    messages = []
    for err in exc.errors():
        if err.get("type") == "json_invalid":
            ctx = err.get("ctx") or {}
            messages.append(f"request body is not valid JSON ({ctx.get('error', 'parse error')})")
        else:
            messages.append(f"{_field(err.get('loc', ()))}: {err.get('msg', 'invalid value')}")
    return "; ".join(messages) or "invalid request"


def describe_database_error(exc: SQLAlchemyError) -> str:
    """The error's class, the driver's class and SQLSTATE: never its message, which may quote values."""
    orig = getattr(exc, "orig", None)
    if orig is None:
        return type(exc).__name__
    sqlstate = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    driver = f"{type(orig).__module__}.{type(orig).__name__}"
    return f"{type(exc).__name__} from {driver}" + (f" (SQLSTATE {sqlstate})" if sqlstate else "")


def install_error_handlers(
    app: FastAPI, authenticate: Callable[[Request], Awaitable[object]] | None = None
) -> None:
    """Answer every failure in the service's error shape. ``authenticate`` (the routes' tenant
    dependency) also runs for a body too malformed to reach the route (FastAPI parses the body before
    it checks the key): such a request takes its key's rate allowance, or counts as a failed login,
    like any other request, so a flood of broken JSON is limited too."""

    async def _refused_unread(request: Request, response: JSONResponse) -> JSONResponse:
        if authenticate is not None:
            try:
                await authenticate(request)
            except ApiError as exc:
                return api_error_response(exc)
        return response

    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return api_error_response(exc)

    @app.exception_handler(ResonanceError)
    async def _resonance_error(_request: Request, exc: ResonanceError) -> JSONResponse:
        return error_response(exc.http_status, exc.type_name, str(exc))

    @app.exception_handler(RLError)
    async def _rl_error(_request: Request, exc: RLError) -> JSONResponse:
        return error_response(exc.http_status, exc.type_name, str(exc))

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        response = error_response(422, "RequestValidationError", describe_validation(exc))
        if any(err.get("type") == "json_invalid" for err in exc.errors()):
            return await _refused_unread(request, response)
        return response

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and exc.detail == BODY_PARSE_ERROR:
            response = error_response(422, "RequestValidationError", describe_body_error(exc.__cause__))
            return await _refused_unread(request, response)
        return error_response(
            exc.status_code, "HTTPException", str(exc.detail), getattr(exc, "headers", None)
        )

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> JSONResponse:
        if isinstance(exc, SQLAlchemyError):  # its message can quote the statement's values: tenant text
            log.error(
                "database error on %s %s: %s\n%s",
                request.method,
                request.url.path,
                describe_database_error(exc),
                "".join(traceback.format_tb(exc.__traceback__)),
            )
        else:
            log.exception("internal error on %s %s", request.method, request.url.path)
        return error_response(500, "InternalError", "internal server error; the server log has the details")
