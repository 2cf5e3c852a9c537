"""Writing: POST /hr_generate (the original ResonanceOS's documented call) and POST /v1/generate."""

from __future__ import annotations

import time

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
    """``svc.generate`` in the thread pool within the request's time budget (from its arrival).

    The service shares the writer fairly between tenants, paragraph by paragraph
    (:class:`~resonance_os.api.turns.WriterTurns`), and answers 503 when the budget runs out."""
    deadline = time.monotonic() + request.app.state.settings.generate_budget_s
    return await run_in_threadpool(svc.generate, *args, deadline=deadline, **kwargs)


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
