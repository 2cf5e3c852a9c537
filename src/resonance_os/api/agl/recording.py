"""The OpenAI endpoint, recorded per rollout: under ``/rollout/{rollout_id}/attempt/{attempt_id}/v1`` (the
prefix Agent Lightning's ``LLMProxy`` and ``ProxyLLM`` serve), ``POST .../chat/completions`` and
``POST .../completions`` answer like their ``/v1`` twins, streamed or not, and store each call as a span
of that attempt (``openai.chat.completion`` or ``openai.completion``) with the exact prompt and response
token ids (``prompt_token_ids``, ``response_token_ids``), the log-probabilities when asked for
(``logprobs.content``), the messages and, for a tenant's adapter, the version that served it
(``resonance.adapter.version``), so an agent needs no tracer of its own: point its OpenAI client's
``base_url`` at the prefix. A W3C ``traceparent`` header puts the span under the agent's own trace. A
streamed call is stored when its last chunk has been sent (a stream the client abandons is not).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.types import Message

from resonance_os.api.agl.auth import store_tenant
from resonance_os.api.agl.otlp import ATTEMPT_ID, ROLLOUT_ID
from resonance_os.api.openai.errors import OpenAIError, from_exception
from resonance_os.api.openai.routes import chat_completions, completions, serving
from resonance_os.api.persistence.tenants import TenantContext
from resonance_os.traces.spans import new_span_record

ROLLOUT_PREFIX = "/rollout/{rollout_id}/attempt/{attempt_id}/v1"
CHAT_SPAN = "openai.chat.completion"
COMPLETION_SPAN = "openai.completion"
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


def _text_logprobs(logprobs: dict[str, Any]) -> list[dict[str, Any]]:
    """``/v1/completions``' log-probabilities in the chat shape the transitions read."""
    tokens, values = logprobs.get("tokens") or [], logprobs.get("token_logprobs") or []
    return [{"token": token, "logprob": value} for token, value in zip(tokens, values)]


def _prompt_attributes(body: dict[str, Any]) -> dict[str, Any]:
    if "messages" in body:
        messages = body.get("messages") or []
        pairs = [(str(m.get("role", "")), _content(m.get("content", ""))) for m in messages]
    else:
        prompt = body.get("prompt")
        pairs = [("user", prompt if isinstance(prompt, str) else json.dumps(prompt))]
    out: dict[str, Any] = {}
    for i, (role, content) in enumerate(pairs):
        out[f"gen_ai.prompt.{i}.role"] = role
        out[f"gen_ai.prompt.{i}.content"] = content
    return out


def completion_span(
    rollout_id: str,
    attempt_id: str,
    body: dict[str, Any],
    reply: dict[str, Any],
    started: float,
    ended: float,
    traceparent: str | None,
    adapter_version: int | None = None,
) -> dict[str, Any]:
    """The call as an Agent Lightning span (``sequence_id`` ``None``: the store issues it). ``reply`` is
    the whole response of either route with ``return_token_ids`` (its first choice is recorded)."""
    chat = "messages" in body
    attributes: dict[str, Any] = {
        "gen_ai.system": "resonance-os",
        "gen_ai.request.type": "chat" if chat else "completion",
        "gen_ai.request.model": str(body.get("model", "")),
        "gen_ai.response.id": reply.get("id", ""),
        "gen_ai.response.model": reply.get("model", ""),
        "gen_ai.request.stream": bool(body.get("stream")),
    }
    if adapter_version is not None:
        attributes["resonance.adapter.version"] = adapter_version
    for name in REQUEST_FIELDS:
        if isinstance(body.get(name), (int, float)) and not isinstance(body.get(name), bool):
            attributes[f"gen_ai.request.{name}"] = body[name]
    attributes.update(_prompt_attributes(body))
    choices = reply.get("choices") or []
    for i, choice in enumerate(choices):
        message = choice.get("message") or {"role": "assistant", "content": choice.get("text") or ""}
        attributes[f"gen_ai.completion.{i}.role"] = str(message.get("role", "assistant"))
        attributes[f"gen_ai.completion.{i}.content"] = _content(message.get("content") or "")
        attributes[f"gen_ai.completion.{i}.finish_reason"] = str(choice.get("finish_reason"))
    usage = reply.get("usage") or {}
    for name in ("prompt_tokens", "completion_tokens", "total_tokens"):
        if name in usage:
            attributes[f"gen_ai.usage.{name}"] = usage[name]
    first = choices[0] if choices else {}
    prompt_ids = reply.get("prompt_token_ids") or first.get("prompt_token_ids") or []
    attributes["prompt_token_ids"] = list(prompt_ids)
    attributes["response_token_ids"] = list(first.get("token_ids") or [])
    logprobs = first.get("logprobs") or None
    if isinstance(logprobs, dict):
        content = logprobs.get("content") if chat else _text_logprobs(logprobs)
        if content is not None:
            attributes["logprobs.content"] = json.dumps(content)
    parent = TRACEPARENT.match((traceparent or "").strip().lower())
    return new_span_record(
        rollout_id,
        attempt_id,
        CHAT_SPAN if chat else COMPLETION_SPAN,
        attributes,
        started,
        ended,
        trace_id=parent.group(1) if parent else None,
        parent_id=parent.group(2) if parent else None,
        resource_attributes={ROLLOUT_ID: rollout_id, ATTEMPT_ID: attempt_id, "service.name": "resonance-os"},
    )


class StreamedReply:
    """The whole reply a stream's chunks add up to (its first choice: what is recorded)."""

    def __init__(self) -> None:
        self.reply: dict[str, Any] = {"choices": []}
        self.text: list[str] = []
        self.token_ids: list[int] = []
        self.prompt_token_ids: list[int] = []
        self.chat_logprobs: list[dict[str, Any]] = []
        self.text_logprobs: dict[str, list[Any]] = {"tokens": [], "token_logprobs": []}
        self.finish_reason: str | None = None
        self.role = "assistant"

    def add(self, chunk: dict[str, Any]) -> None:
        self.reply.setdefault("id", chunk.get("id", ""))
        self.reply.setdefault("model", chunk.get("model", ""))
        if chunk.get("usage"):
            self.reply["usage"] = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if choice.get("index") != 0:
                continue
            delta = choice.get("delta")
            self.text.append((delta.get("content") if delta is not None else choice.get("text")) or "")
            self.role = (delta or {}).get("role", self.role)
            self.token_ids += choice.get("token_ids") or []
            self.prompt_token_ids = choice.get("prompt_token_ids") or self.prompt_token_ids
            logprobs = choice.get("logprobs") or {}
            self.chat_logprobs += logprobs.get("content") or []
            for key in self.text_logprobs:
                self.text_logprobs[key] += logprobs.get(key) or []
            self.finish_reason = choice.get("finish_reason") or self.finish_reason

    def whole(self, chat: bool) -> dict[str, Any]:
        text = "".join(self.text)
        logprobs: dict[str, Any] | None
        if chat:
            logprobs = {"content": self.chat_logprobs} if self.chat_logprobs else None
            choice: dict[str, Any] = {"message": {"role": self.role, "content": text}}
        else:
            logprobs = self.text_logprobs if self.text_logprobs["tokens"] else None
            choice = {"text": text}
        choice.update(
            finish_reason=self.finish_reason,
            token_ids=self.token_ids,
            prompt_token_ids=self.prompt_token_ids,
            logprobs=logprobs,
        )
        return {**self.reply, "choices": [choice]}


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


def _strip_chunk(event: str) -> str:
    """A streamed event without the token ids the recording asked for (the client did not)."""
    chunk = json.loads(event[len("data: ") :])
    for choice in chunk.get("choices") or []:
        choice.pop("token_ids", None)
        choice.pop("prompt_token_ids", None)
    return f"data: {json.dumps(chunk, separators=(',', ':'))}\n\n"


class RecordedCall:
    """One call under a rollout's prefix: answered by the ``/v1`` route, stored as a span."""

    def __init__(
        self, request: Request, ctx: TenantContext, rollout_id: str, attempt_id: str, body: dict[str, Any]
    ) -> None:
        self.request, self.ctx, self.body = request, ctx, body
        self.rollout_id, self.attempt_id = rollout_id, attempt_id
        self.chat = "messages" in body
        self.started = time.time()
        self.version = serving(request).adapter_version(ctx, str(body.get("model", "")))

    async def store(self, reply: dict[str, Any]) -> None:
        span = completion_span(
            self.rollout_id, self.attempt_id, self.body, reply, self.started, time.time(),
            self.request.headers.get("traceparent"), self.version,
        )  # fmt: skip
        await run_in_threadpool(self.request.app.state.agl_store.add_spans, self.ctx.tenant_id, [span])

    async def stream(self, events: AsyncIterator[str | bytes]) -> AsyncIterator[str]:
        """The events as the client asked for them; the span is stored before ``[DONE]`` is sent."""
        whole = StreamedReply()
        wants_ids = bool(self.body.get("return_token_ids"))
        async for raw in events:
            event = raw.decode() if isinstance(raw, bytes) else raw
            if event.startswith("data: [DONE]"):
                if whole.finish_reason is not None:
                    await self.store(whole.whole(self.chat))
            elif event.startswith("data: "):
                chunk = json.loads(event[len("data: ") :])
                whole.add(chunk)
                if not wants_ids:
                    event = _strip_chunk(event)
            yield event


def recording_router() -> APIRouter:
    api = APIRouter(tags=["agent store"])

    async def recorded(rollout_id: str, attempt_id: str, request: Request, route: Any) -> Response:
        """``route`` (a ``/v1`` completion route), recorded as a span of the attempt (OpenAI's errors)."""
        try:
            ctx = await store_tenant(request)
            body = await _json_body(request)
            store = request.app.state.agl_store
            await run_in_threadpool(store.require_attempt, ctx.tenant_id, rollout_id, attempt_id)
            call = RecordedCall(request, ctx, rollout_id, attempt_id, body)
            response = await route(_with_body(request, {**body, "return_token_ids": True}), ctx)
            if isinstance(response, StreamingResponse):
                return StreamingResponse(
                    call.stream(response.body_iterator),
                    media_type=response.media_type,
                    headers={k: v for k, v in response.headers.items() if k.lower() != "content-length"},
                )
            if response.status_code != 200:
                return response
            reply = json.loads(response.body)
            await call.store(reply)
        except Exception as exc:
            converted = from_exception(exc)
            if converted is None:
                raise
            return converted.response()
        return JSONResponse(reply if body.get("return_token_ids") else _strip_token_ids(reply))

    @api.post(ROLLOUT_PREFIX + "/chat/completions")
    async def recorded_chat_completions(rollout_id: str, attempt_id: str, request: Request) -> Response:
        """``/v1/chat/completions``, recorded as an ``openai.chat.completion`` span of the attempt."""
        return await recorded(rollout_id, attempt_id, request, chat_completions)

    @api.post(ROLLOUT_PREFIX + "/completions")
    async def recorded_completions(rollout_id: str, attempt_id: str, request: Request) -> Response:
        """``/v1/completions``, recorded as an ``openai.completion`` span of the attempt."""
        return await recorded(rollout_id, attempt_id, request, completions)

    return api
