"""The OpenAI API routes: ``GET /v1/models``, ``POST /v1/chat/completions``, ``POST /v1/completions``
and the adapter routes ``GET/POST /v1/adapters``, ``DELETE /v1/adapters/{name}``.

Same tenant keys as the rest of the service (``Authorization: Bearer``). Responses and streamed chunks
(``stream: true``: ``data: {...}`` server-sent events, then ``data: [DONE]``) have OpenAI's shapes;
``return_token_ids: true`` adds vLLM's ``prompt_token_ids`` and ``token_ids``. Every failure, including
auth, limits and malformed bodies, is answered in OpenAI's error shape (:mod:`.errors`).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import jinja2
from fastapi import APIRouter, Depends, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError

from resonance_os import __version__
from resonance_os.api.http.deps import tenant
from resonance_os.api.openai import metrics
from resonance_os.api.openai.errors import OpenAIError, from_exception
from resonance_os.api.openai.limits import Reservation
from resonance_os.api.openai.schemas import (
    AdapterRegistration,
    ChatCompletionRequest,
    CompletionRequest,
    Sampling,
)
from resonance_os.api.openai.serving import OpenAIServing, ServingSettings
from resonance_os.api.persistence.tenants import TenantContext
from resonance_os.llm.errors import ConfigError
from resonance_os.llm.sampling_params import Choice, ChoiceDelta, SamplingParams, TokenLogprob

if TYPE_CHECKING:  # the engine (and torch) load with the first request, not with the app
    from resonance_os.llm.engine import GenerationEngine, RequestHandle

FINGERPRINT = f"resonance-os-{__version__}"
DISCONNECT_POLL_S = 0.5
"""How often a non-streamed request checks that its client is still there (a gone client's sequences
are cancelled; a streamed one stops when the server can no longer send)."""


class OpenAIRoute(APIRoute):
    """A route whose every failure (auth and limits included) is answered in OpenAI's error shape
    (a subclass answers in another shape by overriding :meth:`render`)."""

    @staticmethod
    def render(error: OpenAIError) -> Response:
        return error.response()

    def get_route_handler(self) -> Callable:
        handler = super().get_route_handler()

        async def answer(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestValidationError as exc:
                err = exc.errors()[0] if exc.errors() else {}
                where = ".".join(str(p) for p in err.get("loc", ()) if p not in ("body", "path", "query"))
                return self.render(
                    OpenAIError(400, f"{where or 'request'}: {err.get('msg', 'invalid')}", param=where)
                )
            except Exception as exc:
                converted = from_exception(exc)
                if converted is None:
                    raise
                return self.render(converted)

        return answer


router = APIRouter(prefix="/v1", tags=["openai"], route_class=OpenAIRoute)
_serving_lock = threading.Lock()


def serving(request: Request) -> OpenAIServing:
    """The app's :class:`OpenAIServing`, made from the environment on first use."""
    state = request.app.state
    with _serving_lock:
        if getattr(state, "openai_serving", None) is None:
            service = getattr(state, "service", None)
            state.openai_serving = OpenAIServing(
                ServingSettings.from_env(), db=None if service is None else service.db
            )
    return state.openai_serving


async def parse(request: Request, model: type[BaseModel]) -> Any:
    """The request body as ``model``; a 400 naming the first bad field otherwise."""
    try:
        data = json.loads(await request.body())
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError, ValueError):
        raise OpenAIError(400, "the request body is not valid JSON; send a JSON object") from None
    if not isinstance(data, dict):
        raise OpenAIError(400, f"the request body must be a JSON object, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise OpenAIError(400, f"{where or 'body'}: {err['msg']}", param=where or None) from None


# ------------------------------------------------------------------------------------ models
@router.get("/models")
async def list_models(request: Request, ctx: TenantContext = Depends(tenant)) -> dict:
    """The base model and the caller's adapters."""
    return {"object": "list", "data": serving(request).listed_models(ctx)}


@router.get("/models/{model_id:path}")
async def retrieve_model(model_id: str, request: Request, ctx: TenantContext = Depends(tenant)) -> dict:
    for model in serving(request).listed_models(ctx):
        if model["id"] == model_id:
            return model
    raise OpenAIError(404, f"The model `{model_id}` does not exist or you do not have access to it.",
                      param="model", code="model_not_found")  # fmt: skip


# ------------------------------------------------------------------------------------ adapters
@router.get("/adapters")
async def list_adapters(request: Request, ctx: TenantContext = Depends(tenant)) -> dict:
    """The caller's adapters (each registered one with the ``path`` it was registered from) and the
    folder runs are registered from."""
    svc = serving(request)
    return {"object": "list", "data": svc.adapters(ctx), "runs_folder": str(svc.tenant_runs(ctx))}


@router.post("/adapters", status_code=201)
async def register_adapter(request: Request, ctx: TenantContext = Depends(tenant)) -> dict:
    """Serve a finished run of the caller's (a folder holding a LoRA adapter, under the caller's runs
    folder) as model ``name``; ``replace: true`` swaps the weights of a registered ``name``."""
    body = await parse(request, AdapterRegistration)
    return await serving(request).register(ctx, body.name, body.path, replace=body.replace)


@router.delete("/adapters/{name}")
async def delete_adapter(name: str, request: Request, ctx: TenantContext = Depends(tenant)) -> dict:
    await serving(request).unregister(ctx, name)
    return {"id": name, "object": "model", "deleted": True}


# ------------------------------------------------------------------------------------ completions
def sampling_params(
    body: Sampling, engine: GenerationEngine, svc: OpenAIServing, longest: int, *, max_tokens: int | None,
    logprobs: bool, top_logprobs: int, prompt_field: str,
) -> SamplingParams:  # fmt: skip
    """The engine's sampling parameters for a request body; 400 naming the field or the limit."""
    problem = body.unserved()
    if problem:
        raise OpenAIError(400, problem, param=problem.split(":", 1)[0])
    limit = svc.settings.limits.max_n
    if body.n > limit:
        raise OpenAIError(
            400, f"n={body.n} is more than the {limit} choices a request may ask for", param="n"
        )
    context = svc.context_limit(engine)
    room = context - longest
    if max_tokens is None:
        max_tokens = min(svc.settings.default_max_tokens, room)
    if room < 1 or longest + max_tokens > context:
        raise OpenAIError(
            400, f"this model's maximum context length is {context} tokens; the prompt has {longest} tokens "
            f"and max_tokens is {max_tokens}; shorten the {prompt_field} or lower max_tokens",
            param=prompt_field, code="context_length_exceeded",
        )  # fmt: skip
    stop = [body.stop] if isinstance(body.stop, str) else list(body.stop or [])
    try:
        return SamplingParams(
            max_tokens=max_tokens,
            temperature=1.0 if body.temperature is None else body.temperature,
            top_p=1.0 if body.top_p is None else body.top_p,
            top_k=max(body.top_k or 0, 0),
            n=body.n,
            stop=tuple(s for s in stop if s),
            stop_token_ids=tuple(body.stop_token_ids or ()),
            ignore_eos=body.ignore_eos,
            seed=body.seed,
            logprobs=logprobs,
            top_logprobs=top_logprobs,
            presence_penalty=body.presence_penalty or 0.0,
            frequency_penalty=body.frequency_penalty or 0.0,
        )
    except ConfigError as exc:
        message = str(exc)
        raise OpenAIError(400, message, param=message.split("=", 1)[0]) from None


def _usage(handles: list[RequestHandle]) -> dict[str, int]:
    prompt = sum(len(h.prompt_ids) for h in handles)
    completion = sum(len(c.token_ids) for h in handles for c in h.choices)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


class Job:
    """One API request in the engine: its handles (one per prompt), its reservation, its shape."""

    def __init__(
        self, svc: OpenAIServing, ctx: TenantContext, engine: GenerationEngine, body: Sampling, chat: bool
    ) -> None:
        self.svc, self.ctx, self.engine, self.body, self.chat = svc, ctx, engine, body, chat
        self.id = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
        self.created = int(time.time())
        self.handles: list[RequestHandle] = []
        self.reservation: Reservation | None = None

    def start(self, prompts: list[list[int]], params: SamplingParams, adapter: str | None) -> None:
        worst = sum(len(p) for p in prompts) + params.n * len(prompts) * params.max_tokens
        self.reservation = self.svc.ledger.reserve(self.ctx.tenant_id, params.n * len(prompts), worst)
        try:
            for prompt in prompts:
                self.handles.append(
                    self.engine.submit(prompt, params, adapter=adapter, group=f"tenant-{self.ctx.tenant_id}")
                )
        except BaseException:
            self.end()
            raise

    def end(self) -> None:
        """Cancel what still runs, count the tokens, give the reservation back (once)."""
        for handle in self.handles:
            handle.cancel()
            if handle.done:
                metrics.observe(handle)
        if self.reservation is not None:
            self.svc.ledger.release(self.reservation, _usage(self.handles)["total_tokens"])
            self.reservation = None

    # ---------------------------------------------------------------- shapes
    def _token(self, token_id: int) -> str:
        return self.engine.tokenizer.decode([token_id])

    def _chat_logprobs(self, entries: list[TokenLogprob]) -> dict[str, Any]:
        def one(token_id: int, logprob: float) -> dict[str, Any]:
            text = self._token(token_id)
            return {"token": text, "logprob": logprob, "bytes": list(text.encode())}

        content = [
            {**one(e.token_id, e.logprob), "top_logprobs": [one(t, lp) for t, lp in e.top]} for e in entries
        ]
        return {"content": content, "refusal": None}

    def _text_logprobs(self, entries: list[TokenLogprob], offset: int) -> dict[str, Any]:
        tokens = [self._token(e.token_id) for e in entries]
        offsets, at = [], offset
        for text in tokens:
            offsets.append(at)
            at += len(text)
        return {
            "tokens": tokens,
            "token_logprobs": [e.logprob for e in entries],
            "top_logprobs": [{self._token(t): lp for t, lp in e.top} for e in entries],
            "text_offset": offsets,
        }

    def _index(self, prompt: int, choice: int) -> int:
        return prompt * self.body.n + choice

    def response(self) -> dict[str, Any]:
        """The whole (non-streamed) response."""
        choices = []
        for p, handle in enumerate(self.handles):
            for choice in handle.choices:
                choices.append(self._choice(p, handle, choice))
        out = {
            "id": self.id,
            "object": "chat.completion" if self.chat else "text_completion",
            "created": self.created,
            "model": self.body.model,
            "system_fingerprint": FINGERPRINT,
            "choices": choices,
            "usage": _usage(self.handles),
        }
        if self.chat and self.body.return_token_ids:
            out["prompt_token_ids"] = self.handles[0].prompt_ids
        return out

    def _choice(self, p: int, handle: RequestHandle, choice: Choice) -> dict[str, Any]:
        wants_logprobs = bool(choice.logprobs)
        if self.chat:
            out = {
                "index": choice.index,
                "message": {"role": "assistant", "content": choice.text, "refusal": None},
                "logprobs": self._chat_logprobs(choice.logprobs) if wants_logprobs else None,
                "finish_reason": choice.finish_reason,
            }
        else:
            out = {
                "index": self._index(p, choice.index),
                "text": choice.text,
                "logprobs": self._text_logprobs(choice.logprobs, 0) if wants_logprobs else None,
                "finish_reason": choice.finish_reason,
            }
        if self.body.return_token_ids:
            out["token_ids"] = choice.token_ids
            if not self.chat:
                out["prompt_token_ids"] = handle.prompt_ids
        return out

    def chunk(self, p: int, delta: ChoiceDelta, first: bool, offset: int) -> dict[str, Any]:
        """One streamed chunk for ``delta`` of prompt ``p``'s choice."""
        if self.chat:
            message: dict[str, Any] = (
                {"role": "assistant", "content": delta.text} if first else {"content": delta.text}
            )
            if delta.finish_reason is not None and not delta.text and not first:
                message = {}
            choice: dict[str, Any] = {
                "index": delta.index,
                "delta": message,
                "logprobs": self._chat_logprobs(delta.logprobs) if delta.logprobs else None,
                "finish_reason": delta.finish_reason,
            }
        else:
            choice = {
                "index": self._index(p, delta.index),
                "text": delta.text,
                "logprobs": self._text_logprobs(delta.logprobs, offset) if delta.logprobs else None,
                "finish_reason": delta.finish_reason,
            }
        if self.body.return_token_ids:
            choice["token_ids"] = delta.token_ids
            if first:  # vLLM: the prompt's ids come with each choice's first chunk
                choice["prompt_token_ids"] = self.handles[p].prompt_ids
        return {
            "id": self.id,
            "object": "chat.completion.chunk" if self.chat else "text_completion",
            "created": self.created,
            "model": self.body.model,
            "system_fingerprint": FINGERPRINT,
            "choices": [choice],
        }

    async def events(self) -> AsyncIterator[str]:
        """The server-sent events of a streamed response, ``data: [DONE]`` last."""
        include_usage = bool(self.body.stream_options and self.body.stream_options.include_usage)
        try:
            for p, handle in enumerate(self.handles):
                started: set[int] = set()
                offsets: dict[int, int] = {}
                async for deltas in handle.stream():
                    for delta in deltas:
                        first = delta.index not in started
                        started.add(delta.index)
                        if (
                            not first
                            and not delta.text
                            and delta.finish_reason is None
                            and not delta.logprobs
                        ):
                            if not self.body.return_token_ids:
                                continue
                        yield _sse(self.chunk(p, delta, first, offsets.get(delta.index, 0)))
                        offsets[delta.index] = offsets.get(delta.index, 0) + len(delta.text)
            if include_usage:
                yield _sse({"id": self.id, "object": "chat.completion.chunk" if self.chat else "text_completion",
                            "created": self.created, "model": self.body.model, "system_fingerprint": FINGERPRINT,
                            "choices": [], "usage": _usage(self.handles)})  # fmt: skip
        except Exception as exc:  # the engine failed mid-stream: say so in OpenAI's shape
            converted = from_exception(exc) or OpenAIError(500, "generation failed; the server log has the details",
                                                           type_="server_error")  # fmt: skip
            yield _sse(converted.body())
        finally:
            self.end()
        yield "data: [DONE]\n\n"


def _sse(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data, separators=(',', ':'))}\n\n"


async def run(
    request: Request, job: Job, prompts: list[list[int]], params: SamplingParams, adapter: str | None
) -> Response:
    """Submit the prompts and answer with the whole response or the event stream."""
    job.start(prompts, params, adapter)
    if job.body.stream:
        return StreamingResponse(
            job.events(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
    try:
        waiting = asyncio.ensure_future(asyncio.gather(*(handle.aresult() for handle in job.handles)))
        while not waiting.done():
            await asyncio.wait({waiting}, timeout=DISCONNECT_POLL_S)
            if not waiting.done() and await request.is_disconnected():
                waiting.cancel()  # the client gave up (a timeout): its sequences leave the batch
                return Response(status_code=499)
        waiting.result()
        return JSONResponse(job.response())
    finally:
        job.end()


@router.post("/chat/completions")
async def chat_completions(request: Request, ctx: TenantContext = Depends(tenant)) -> Response:
    """Chat completions with the model's chat template (OpenAI's ``/v1/chat/completions``)."""
    body: ChatCompletionRequest = await parse(request, ChatCompletionRequest)
    svc = serving(request)
    if (upstream := svc.upstream_for(body.model)) is not None:
        return await upstream.forward("chat/completions", body, ctx, svc)
    engine, adapter = await svc.resolve(ctx, body.model)
    if body.top_logprobs and not body.logprobs:
        raise OpenAIError(400, "top_logprobs needs logprobs=true", param="top_logprobs")
    try:
        prompt = engine.encode_chat([m.as_template_message() for m in body.messages])
    except jinja2.TemplateError as exc:
        raise OpenAIError(
            400, f"the model's chat template refused these messages: {exc}", param="messages"
        ) from None
    params = sampling_params(
        body, engine, svc, len(prompt), max_tokens=body.max_completion_tokens or body.max_tokens,
        logprobs=body.logprobs, top_logprobs=body.top_logprobs or 0, prompt_field="messages",
    )  # fmt: skip
    return await run(request, Job(svc, ctx, engine, body, chat=True), [prompt], params, adapter)


@router.post("/completions")
async def completions(request: Request, ctx: TenantContext = Depends(tenant)) -> Response:
    """Text completions of one or more prompts (strings or token ids; OpenAI's ``/v1/completions``)."""
    body: CompletionRequest = await parse(request, CompletionRequest)
    svc = serving(request)
    if (upstream := svc.upstream_for(body.model)) is not None:
        return await upstream.forward("completions", body, ctx, svc)
    engine, adapter = await svc.resolve(ctx, body.model)
    raw = body.prompt
    if isinstance(raw, str):
        prompts = [engine.encode(raw)]
    elif raw and all(isinstance(x, int) for x in raw):
        prompts = [list(raw)]
    else:
        prompts = [engine.encode(x) if isinstance(x, str) else list(x) for x in raw]
    if not prompts or any(not p for p in prompts):
        raise OpenAIError(400, "prompt: every prompt needs at least one token", param="prompt")
    if any(not 0 <= t < engine.vocab_size for p in prompts for t in p):
        raise OpenAIError(400, f"prompt: token ids must be in [0, {engine.vocab_size})", param="prompt")
    params = sampling_params(
        body, engine, svc, max(len(p) for p in prompts), max_tokens=body.max_tokens,
        logprobs=body.logprobs is not None, top_logprobs=body.logprobs or 0, prompt_field="prompt",
    )  # fmt: skip
    return await run(request, Job(svc, ctx, engine, body, chat=False), prompts, params, adapter)
