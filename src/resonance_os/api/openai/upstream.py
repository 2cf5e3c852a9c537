"""One model answered by an upstream vLLM server: ``resonance serve``'s OpenAI routes hand the requests
for it on, so tenants reach a model too big for this machine with their usual keys, limits and errors.

Configuration (environment of the server): ``RESONANCE_OPENAI_UPSTREAM``, the upstream's OpenAI base URL
(``http://gpu-box:8000/v1``; a vLLM server, or another ``resonance serve``); ``RESONANCE_OPENAI_UPSTREAM_MODEL``,
the model id there, which is also the id tenants call (listed by ``GET /v1/models`` for every tenant);
``RESONANCE_OPENAI_UPSTREAM_KEY``, the key this server sends (vLLM's ``--api-key``);
``RESONANCE_OPENAI_UPSTREAM_TIMEOUT``, seconds a request may take (600).

A request for that model is validated as any other (same fields, same 400s), counted against the
tenant's limits (``n`` sequences per prompt, ``n x max_tokens`` tokens reserved; what the upstream reports
used is counted when it ends) and sent on with its body as it came (vLLM's extensions included, e.g.
``return_token_ids``); the answer, streamed or not, comes back as the upstream sent it. An upstream that
cannot be reached is a 502, one that does not answer in time a 504, its own 4xx answers come back with
their status and message in OpenAI's error shape, and its 5xx answers are a 502.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
from fastapi.responses import JSONResponse, Response, StreamingResponse

from resonance_os.api.openai.errors import OpenAIError
from resonance_os.api.openai.limits import TenantLedger
from resonance_os.api.openai.schemas import Sampling
from resonance_os.api.persistence.tenants import TenantContext
from resonance_os.llm.openai_wire import error_message

if TYPE_CHECKING:
    from resonance_os.api.openai.serving import OpenAIServing

UPSTREAM_ENV = "RESONANCE_OPENAI_UPSTREAM"


def _prompt_count(body: Sampling) -> int:
    """Prompts of a completion request (a string, strings, token ids or lists of them); 1 for chat."""
    prompt = getattr(body, "prompt", None)
    if isinstance(prompt, list) and prompt and not all(isinstance(x, int) for x in prompt):
        return len(prompt)
    return 1


def _upstream_error(response: httpx.Response) -> OpenAIError:
    """An upstream's error answer as ours: its 4xx with its message, anything else a 502."""
    message = error_message(response)
    if response.status_code in (401, 403):
        return OpenAIError(502, f"the upstream model server refused this server's key ({message}); the "
                           "operator sets RESONANCE_OPENAI_UPSTREAM_KEY", type_="server_error",
                           code="upstream_error")  # fmt: skip
    if 400 <= response.status_code < 500:
        param = None
        try:
            error = response.json().get("error")
            param = error.get("param") if isinstance(error, dict) else None
        except (ValueError, AttributeError):
            pass
        retry = (
            {"Retry-After": response.headers["Retry-After"]} if "Retry-After" in response.headers else None
        )
        return OpenAIError(response.status_code, message, param=param, headers=retry)
    return OpenAIError(502, f"the upstream model server failed ({response.status_code}: {message})",
                       type_="server_error", code="upstream_error")  # fmt: skip


@dataclass
class Upstream:
    """The upstream server and the model it answers (see the module docstring)."""

    url: str
    model: str
    key: str | None = None
    timeout: float = 600.0

    @classmethod
    def from_env(cls) -> Upstream | None:
        url = os.environ.get(UPSTREAM_ENV)
        if not url:
            return None
        model = os.environ.get("RESONANCE_OPENAI_UPSTREAM_MODEL")
        if not url.startswith(("http://", "https://")) or not model:
            raise OpenAIError(503, f"the server's {UPSTREAM_ENV}={url!r} needs an http(s) base URL ending in /v1 "
                              "and RESONANCE_OPENAI_UPSTREAM_MODEL, the model id it serves; the operator sets them",
                              type_="server_error", code="upstream_misconfigured")  # fmt: skip
        try:
            timeout = float(os.environ.get("RESONANCE_OPENAI_UPSTREAM_TIMEOUT") or cls.timeout)
        except ValueError:
            raise OpenAIError(503, "the server's RESONANCE_OPENAI_UPSTREAM_TIMEOUT must be a number of seconds",
                              type_="server_error", code="upstream_misconfigured") from None  # fmt: skip
        return cls(url.rstrip("/"), model, os.environ.get("RESONANCE_OPENAI_UPSTREAM_KEY") or None, timeout)

    def card(self, created: int) -> dict[str, Any]:
        """The model as ``GET /v1/models`` lists it."""
        return {"id": self.model, "object": "model", "created": created, "owned_by": "upstream"}

    def _client(self) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        return httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(self.timeout, connect=10.0))

    async def forward(self, route: str, body: Sampling, ctx: TenantContext, svc: OpenAIServing) -> Response:
        """Send ``body`` to the upstream's ``route`` and answer with what it returns (after the checks
        and the tenant's limits every request passes here)."""
        problem = body.unserved()
        if problem:
            raise OpenAIError(400, problem, param=problem.split(":", 1)[0])
        limits, ledger = svc.settings.limits, svc.ledger
        if body.n > limits.max_n:
            raise OpenAIError(400, f"n={body.n} is more than the {limits.max_n} choices a request may ask for",
                              param="n")  # fmt: skip
        sequences = body.n * _prompt_count(body)
        max_tokens = (
            getattr(body, "max_completion_tokens", None) or body.max_tokens or svc.settings.default_max_tokens
        )
        reservation = ledger.reserve(ctx.tenant_id, sequences, sequences * max_tokens)
        used = sequences * max_tokens  # counted unless the upstream reports its usage
        client = self._client()
        response: httpx.Response | None = None
        relayed = False  # once the stream is handed on, the relay releases and closes
        try:
            request = client.build_request(
                "POST", f"{self.url}/{route}", json=body.model_dump(exclude_unset=True)
            )
            try:
                response = await client.send(request, stream=True)
            except httpx.TimeoutException:
                raise OpenAIError(504, f"the upstream model server did not answer within {self.timeout:g} s",
                                  type_="server_error", code="upstream_timeout") from None  # fmt: skip
            except httpx.TransportError as exc:
                raise OpenAIError(502, f"the upstream model server for {self.model!r} cannot be reached "
                                  f"({type(exc).__name__}); try again later", type_="server_error",
                                  code="upstream_unavailable") from None  # fmt: skip
            if response.status_code != 200:
                await response.aread()
                raise _upstream_error(response)
            if body.stream:
                relayed = True
                return StreamingResponse(
                    self._relay(client, response, ledger, reservation, used),
                    media_type="text/event-stream",
                    headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
                )
            try:
                answer = json.loads(await response.aread())
                used = int((answer.get("usage") or {}).get("total_tokens") or used)
            except (ValueError, AttributeError, TypeError):
                raise OpenAIError(502, "the upstream model server's answer is not an OpenAI completion",
                                  type_="server_error", code="upstream_error") from None  # fmt: skip
            return JSONResponse(answer)
        finally:
            if not relayed:
                ledger.release(reservation, used)
                if response is not None:
                    await response.aclose()
                await client.aclose()

    @staticmethod
    async def _relay(
        client: httpx.AsyncClient, response: httpx.Response, ledger: TenantLedger, reservation: Any, used: int
    ) -> AsyncIterator[bytes]:
        """The upstream's event stream as it comes; the reservation is released when it ends."""
        try:
            async for chunk in response.aiter_raw():
                yield chunk
        except httpx.HTTPError as exc:  # the upstream broke off mid-stream: say so in OpenAI's shape
            error = OpenAIError(502, f"the upstream model server broke off the stream ({type(exc).__name__})",
                                type_="server_error", code="upstream_error")  # fmt: skip
            yield f"\n\ndata: {json.dumps(error.body())}\n\ndata: [DONE]\n\n".encode()
        finally:
            ledger.release(reservation, used)
            await response.aclose()
            await client.aclose()
