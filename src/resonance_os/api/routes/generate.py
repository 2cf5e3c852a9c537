"""Writing: POST /hr_generate (the original ResonanceOS's documented call) and POST /v1/generate."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from resonance_os.api.http.deps import service, tenant
from resonance_os.api.http.schemas import (
    GenerateProgress,
    GenerateRequest,
    GenerateResponse,
    HrGenerateRequest,
    HrGenerateResponse,
)
from resonance_os.api.persistence.tenants import TenantContext
from resonance_os.api.service import ResonanceService
from resonance_os.core.errors import ProfileNotFoundError, ResonanceError
from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.rl.errors import RLError

router = APIRouter(tags=["generation"])
log = logging.getLogger("resonance_os.api")


class ClientGoneError(ResonanceError):
    """The client of a streamed generation disconnected; the writer stops between paragraphs."""


async def in_writer_budget(request: Request, write: Callable[..., dict], *args, **kwargs) -> dict:
    """``write`` (``svc.generate`` or ``svc.refine``) in the thread pool within the request's time
    budget (from its arrival).

    The service shares the writer fairly between tenants, paragraph by paragraph
    (:class:`~resonance_os.api.text.turns.WriterTurns`), and answers 503 when the budget runs out."""
    deadline = time.monotonic() + request.app.state.settings.generate_budget_s
    return await run_in_threadpool(write, *args, deadline=deadline, **kwargs)


async def _generate_in_turn(request: Request, svc: ResonanceService, *args, **kwargs) -> dict:
    return await in_writer_budget(request, svc.generate, *args, **kwargs)


@router.post("/hr_generate", response_model=HrGenerateResponse)
async def hr_generate(
    body: HrGenerateRequest,
    request: Request,
    ctx: TenantContext = Depends(tenant),
    svc: ResonanceService = Depends(service),
) -> HrGenerateResponse:
    """Write toward ``tenant/profile_name``; ``tenant`` (default: the key's own) must be the key's own
    tenant (else 404); without ``profile_name``, toward the default profile; judged by the writing
    reward ``reward`` (fast or lm) as ``POST /v1/generate`` is."""
    if body.tenant is not None and body.tenant != ctx.tenant:
        raise ProfileNotFoundError(
            f"no profile {body.profile_name or 'default'!r} for tenant {body.tenant!r}: this API key "
            f"belongs to tenant {ctx.tenant!r}; omit tenant to use it"
        )
    result = await _generate_in_turn(
        request, svc, ctx, body.prompt, profile=body.profile_name, reward=body.reward
    )
    return HrGenerateResponse(
        article=result["article"],
        hrv_feedback=[result["hrv"][name] for name in HRV_DIMENSIONS],
        hrv=result["hrv"],
        reward=result["reward"],
    )


@router.post("/v1/generate", response_model=GenerateResponse)
async def generate(
    body: GenerateRequest,
    request: Request,
    ctx: TenantContext = Depends(tenant),
    svc: ResonanceService = Depends(service),
) -> dict:
    """Write an article toward a profile or target HRV; the response's ``id`` is for /v1/feedback."""
    return await _generate_in_turn(request, svc, ctx, body.prompt, **_writing_options(body))


def _writing_options(body: GenerateRequest) -> dict:
    """What a ``GenerateRequest`` asks of ``ResonanceService.generate`` besides the prompt."""
    return {
        "profile": body.profile,
        "target_hrv": body.target_hrv,
        "paragraphs": body.paragraphs,
        "seed": body.seed,
        "policy": body.policy,
        "adapter": body.adapter,
        "reward": body.reward,
    }


STREAM_DESCRIPTION = f"""Server-sent events (``text/event-stream``), each a JSON ``data`` line:

* ``progress``: ``{{"paragraph": k, "paragraphs": n, "expected_s": s}}`` when paragraph k of n starts
  (``expected_s``: about how long it takes, null if not known yet)
  ({", ".join(GenerateProgress.model_fields)});
* ``result``: the body ``POST /v1/generate`` returns (the article, its HRV, reward and item ``id``), last;
* ``error``: ``{{"error": {{"type", "message"}}}}`` when the writing fails after the stream began, last.

Errors found before writing starts (validation, unknown profile or policy, 401, 429, 503) are ordinary
JSON error responses with their status code."""


def _event(name: str, data: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def _error_data(exc: BaseException) -> dict:
    if isinstance(exc, (ResonanceError, RLError)):  # user errors carry their own type and message
        return {"error": {"type": exc.type_name, "message": str(exc)}}
    log.error("internal error in a streamed generation", exc_info=exc)
    return {
        "error": {"type": "InternalError", "message": "internal server error; the server log has the details"}
    }


@router.post(
    "/v1/generate/stream",
    response_class=StreamingResponse,
    responses={200: {"description": STREAM_DESCRIPTION, "content": {"text/event-stream": {}}}},
)
async def generate_stream(
    body: GenerateRequest,
    request: Request,
    ctx: TenantContext = Depends(tenant),
    svc: ResonanceService = Depends(service),
) -> StreamingResponse:
    """``POST /v1/generate`` with its progress streamed: the same body, auth and writing path; the
    response starts once the writer has taken the request (so errors before that keep their status)."""
    loop = asyncio.get_running_loop()
    events: asyncio.Queue[tuple[str, object]] = asyncio.Queue()
    gone = False

    def progress(paragraph: int, paragraphs: int) -> None:
        if gone:
            raise ClientGoneError("the client disconnected; writing stopped")
        expected = svc.workers.paragraph_seconds()
        data = GenerateProgress(paragraph=paragraph, paragraphs=paragraphs, expected_s=expected).model_dump()
        loop.call_soon_threadsafe(events.put_nowait, ("progress", data))

    async def write() -> None:
        try:
            result = await _generate_in_turn(
                request, svc, ctx, body.prompt, **_writing_options(body), progress=progress
            )
        except Exception as exc:  # reported to the client, as a status or as an error event
            events.put_nowait(("error", exc))
        else:
            events.put_nowait(("result", GenerateResponse(**result).model_dump(mode="json")))

    task = asyncio.create_task(write())
    first = await events.get()
    if first[0] == "error":
        raise first[1]

    async def stream() -> AsyncIterator[bytes]:
        nonlocal gone
        name, data = first
        try:
            while True:
                yield _event(name, _error_data(data) if name == "error" else data)
                if name != "progress":
                    return
                name, data = await events.get()
        finally:
            gone = not task.done()

    return StreamingResponse(
        stream(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
