"""OpenAI's error body, ``{"error": {"message", "type", "param", "code"}}``, for every failure on the
OpenAI routes (auth, limits and validation included), so the official SDKs raise their usual errors."""

from __future__ import annotations

import re

from fastapi.responses import JSONResponse

from resonance_os.api.http.errors import ApiError
from resonance_os.core.errors import ResonanceError
from resonance_os.rl.errors import RLError

INVALID = "invalid_request_error"


class OpenAIError(Exception):
    """A failure answered in OpenAI's shape: ``status``, ``message``, ``type``, ``param``, ``code``."""

    def __init__(
        self, status: int, message: str, *, type_: str = INVALID, param: str | None = None,
        code: str | None = None, headers: dict[str, str] | None = None,
    ) -> None:  # fmt: skip
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = status, message, type_, param, code
        self.headers = headers or {}

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


def model_not_found(model: str) -> OpenAIError:
    return OpenAIError(
        404,
        f"The model `{model}` does not exist or you do not have access to it; GET /v1/models lists yours.",
        param="model",
        code="model_not_found",
    )


def _param_of(message: str) -> str | None:
    """The field a ``name=value must be ...`` message is about."""
    found = re.match(r"(\w+)=", message)
    return found.group(1) if found else None


def from_exception(exc: Exception) -> OpenAIError | None:
    """The OpenAI-shaped error for an exception of the service or the engine (None: not a user error)."""
    if isinstance(exc, OpenAIError):
        return exc
    if isinstance(exc, ApiError):
        code = {401: "invalid_api_key", 429: "rate_limit_exceeded", 413: "request_too_large"}.get(exc.status)
        type_ = "requests" if exc.status == 429 else INVALID
        return OpenAIError(exc.status, exc.message, type_=type_, code=code, headers=exc.headers)
    if isinstance(exc, (ResonanceError, RLError)):
        status = exc.http_status
        status = 400 if status == 422 else status
        message = str(exc)
        code = "context_length_exceeded" if type(exc).__name__ == "PromptTooLongError" else None
        type_ = INVALID if status < 500 else "server_error"
        return OpenAIError(status, message, type_=type_, param=_param_of(message), code=code)
    return None
