"""Writing: POST /hr_generate (ResonanceOS's documented call) and POST /v1/generate."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from resonance_os.api.deps import service, tenant
from resonance_os.api.schemas import GenerateRequest, GenerateResponse, HrGenerateRequest, HrGenerateResponse
from resonance_os.api.service import ResonanceService
from resonance_os.api.tenants import TenantContext
from resonance_os.core.errors import ProfileNotFoundError

router = APIRouter(tags=["generation"])


@router.post("/hr_generate", response_model=HrGenerateResponse)
def hr_generate(
    body: HrGenerateRequest, ctx: TenantContext = Depends(tenant), svc: ResonanceService = Depends(service)
) -> HrGenerateResponse:
    """Write toward ``tenant/profile_name``; ``tenant`` must be the key's own tenant (else 404)."""
    if body.tenant != ctx.tenant:
        raise ProfileNotFoundError(f"no profile {body.profile_name!r} for tenant {body.tenant!r}")
    result = svc.generate(ctx, body.prompt, profile=body.profile_name)
    return HrGenerateResponse(article=result["article"], hrv_feedback=result["hrv"])


@router.post("/v1/generate", response_model=GenerateResponse)
def generate(
    body: GenerateRequest, ctx: TenantContext = Depends(tenant), svc: ResonanceService = Depends(service)
) -> dict:
    """Write an article toward a profile or target HRV; the response's ``id`` is for /v1/feedback."""
    return svc.generate(
        ctx,
        body.prompt,
        profile=body.profile,
        target_hrv=body.target_hrv,
        paragraphs=body.paragraphs,
        seed=body.seed,
        policy=body.policy,
    )
