"""Writing: POST /hr_generate (the original ResonanceOS's documented call) and POST /v1/generate."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from resonance_os.api.deps import service, tenant
from resonance_os.api.schemas import GenerateRequest, GenerateResponse, HrGenerateRequest, HrGenerateResponse
from resonance_os.api.service import ResonanceService
from resonance_os.api.tenants import TenantContext
from resonance_os.core.errors import ProfileNotFoundError
from resonance_os.core.hrv_constants import HRV_DIMENSIONS

router = APIRouter(tags=["generation"])


async def _generate_in_turn(request: Request, svc: ResonanceService, *args, **kwargs) -> dict:
    """``svc.generate`` in the thread pool, one request at a time per process, first come first served.

    Writing is CPU-bound, so running several at once only splits the core between them; queueing
    here (an asyncio lock is fair) keeps every request's wait close to the mean, where threads
    contending for the writer lock left some waiting seconds while later ones went through."""
    queue: asyncio.Lock = request.app.state.generation_queue
    async with queue:
        return await run_in_threadpool(svc.generate, *args, **kwargs)


@router.post("/hr_generate", response_model=HrGenerateResponse)
async def hr_generate(
    body: HrGenerateRequest,
    request: Request,
    ctx: TenantContext = Depends(tenant),
    svc: ResonanceService = Depends(service),
) -> HrGenerateResponse:
    """Write toward ``tenant/profile_name``; ``tenant`` (default: the key's own) must be the key's own
    tenant (else 404); without ``profile_name``, toward the default profile."""
    if body.tenant is not None and body.tenant != ctx.tenant:
        raise ProfileNotFoundError(
            f"no profile {body.profile_name or 'default'!r} for tenant {body.tenant!r}: this API key "
            f"belongs to tenant {ctx.tenant!r}; omit tenant to use it"
        )
    result = await _generate_in_turn(request, svc, ctx, body.prompt, profile=body.profile_name)
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
    return await _generate_in_turn(
        request,
        svc,
        ctx,
        body.prompt,
        profile=body.profile,
        target_hrv=body.target_hrv,
        paragraphs=body.paragraphs,
        seed=body.seed,
        policy=body.policy,
    )
