"""The OpenAI endpoint, recorded per rollout: ``POST /rollout/{rollout_id}/attempt/{attempt_id}/v1/chat/completions``
(the prefix Agent Lightning's ``LLMProxy`` and ``ProxyLLM`` serve) answers like ``/v1/chat/completions``
and stores the call as an ``openai.chat.completion`` span of that attempt, with the exact prompt and
response token ids (``prompt_token_ids``, ``response_token_ids``), the log-probabilities when asked for
(``logprobs.content``) and the messages, so an agent needs no tracer of its own: point its OpenAI
client's ``base_url`` at the prefix. A W3C ``traceparent`` header puts the span under the agent's own
trace. Calls are recorded whole: ``stream=true`` is refused there.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from starlette.types import Message

from resonance_os.api.agl.auth import store_tenant
from resonance_os.api.agl.otlp import ATTEMPT_ID, ROLLOUT_ID
from resonance_os.api.openai.errors import OpenAIError, from_exception
from resonance_os.api.openai.routes import chat_completions

ROLLOUT_PREFIX = "/rollout/{rollout_id}/attempt/{attempt_id}/v1"
LLM_SPAN = "openai.chat.completion"
TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")
REQUEST_FIELDS = ("temperature", "top_p", "max_tokens", "max_completion_tokens", "seed", "n")


def _with_body(request: Request, body: dict[str, Any]) -> Request:
    """``request`` with another JSON body (disconnects still come through)."""
    data = json.dumps(body).encode()
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": data, "more_body": False}
        return await request.receive()

    return Request(request.scope, receive)


def _content(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def completion_span(
    rollout_id: str,
    attempt_id: str,
    body: dict[str, Any],
    reply: dict[str, Any],
    started: float,
    ended: float,
    traceparent: str | None,
) -> dict[str, Any]:
    """The call as an Agent Lightning span (``sequence_id`` ``None``: the store issues it)."""
    attributes: dict[str, Any] = {
        "gen_ai.system": "resonance-os",
        "gen_ai.request.type": "chat",
        "gen_ai.request.model": str(body.get("model", "")),
        "gen_ai.response.id": reply.get("id", ""),
        "gen_ai.response.model": reply.get("model", ""),
    }
    for name in REQUEST_FIELDS:
        if isinstance(body.get(name), (int, float)) and not isinstance(body.get(name), bool):
            attributes[f"gen_ai.request.{name}"] = body[name]
    for i, message in enumerate(body.get("messages") or []):
        attributes[f"gen_ai.prompt.{i}.role"] = str(message.get("role", ""))
        attributes[f"gen_ai.prompt.{i}.content"] = _content(message.get("content", ""))
    choices = reply.get("choices") or []
    for i, choice in enumerate(choices):
        message = choice.get("message") or {}
        attributes[f"gen_ai.completion.{i}.role"] = str(message.get("role", "assistant"))
        attributes[f"gen_ai.completion.{i}.content"] = _content(message.get("content") or "")
        attributes[f"gen_ai.completion.{i}.finish_reason"] = str(choice.get("finish_reason"))
    usage = reply.get("usage") or {}
    for name in ("prompt_tokens", "completion_tokens", "total_tokens"):
        if name in usage:
            attributes[f"gen_ai.usage.{name}"] = usage[name]
    attributes["prompt_token_ids"] = list(reply.get("prompt_token_ids") or [])
    attributes["response_token_ids"] = list(choices[0].get("token_ids") or []) if choices else []
    logprobs = (choices[0].get("logprobs") or {}).get("content") if choices else None
    if logprobs is not None:
        attributes["logprobs.content"] = json.dumps(logprobs)
    parent = TRACEPARENT.match((traceparent or "").strip().lower())
    trace_id = parent.group(1) if parent else secrets.token_hex(16)
    span_id = secrets.token_hex(8)
    context = {"trace_id": trace_id, "span_id": span_id, "is_remote": False, "trace_state": {}}
    return {
        "rollout_id": rollout_id,
        "attempt_id": attempt_id,
        "sequence_id": None,
        "trace_id": trace_id,
        "span_id": span_id,
        "parent_id": parent.group(2) if parent else None,
        "name": LLM_SPAN,
        "status": {"status_code": "OK", "description": None},
        "attributes": attributes,
        "events": [],
        "links": [],
        "start_time": started,
        "end_time": ended,
        "context": context,
        "parent": None,
        "resource": {
            "attributes": {ROLLOUT_ID: rollout_id, ATTEMPT_ID: attempt_id, "service.name": "resonance-os"},
            "schema_url": "",
        },
    }


def _strip_token_ids(reply: dict[str, Any]) -> dict[str, Any]:
    reply.pop("prompt_token_ids", None)
    for choice in reply.get("choices") or []:
        choice.pop("token_ids", None)
        choice.pop("prompt_token_ids", None)
    return reply


async def _json_body(request: Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.body())
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError, ValueError):
        raise OpenAIError(400, "the request body is not valid JSON; send a JSON object") from None
    if not isinstance(body, dict):
        raise OpenAIError(400, f"the request body must be a JSON object, got {type(body).__name__}")
    return body


def recording_router() -> APIRouter:
    api = APIRouter(tags=["agent store"])

    @api.post(ROLLOUT_PREFIX + "/chat/completions")
    async def recorded_chat_completions(rollout_id: str, attempt_id: str, request: Request) -> Response:
        """``/v1/chat/completions``, recorded as a span of the rollout's attempt (OpenAI's error shape)."""
        store = request.app.state.agl_store
        try:
            ctx = await store_tenant(request)
            body = await _json_body(request)
            if body.get("stream"):
                raise OpenAIError(
                    400,
                    "stream: calls under /rollout/.../v1 are recorded whole; send stream=false",
                    param="stream",
                )
            await run_in_threadpool(store.require_attempt, ctx.tenant_id, rollout_id, attempt_id)
            started = time.time()
            response = await chat_completions(_with_body(request, {**body, "return_token_ids": True}), ctx)
            ended = time.time()
            if response.status_code != 200:
                return response
            reply = json.loads(response.body)
            span = completion_span(
                rollout_id, attempt_id, body, reply, started, ended, request.headers.get("traceparent")
            )
            await run_in_threadpool(store.add_spans, ctx.tenant_id, [span])
        except Exception as exc:
            converted = from_exception(exc)
            if converted is None:
                raise
            return converted.response()
        return JSONResponse(reply if body.get("return_token_ids") else _strip_token_ids(reply))

    return api
