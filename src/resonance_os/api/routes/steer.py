"""Steering the local writer along HRV dimensions (the Studio's sliders): GET /v1/steer/dimensions and
POST /v1/steer. The work runs in the tenant's turn at the text workers (``api.text.steering``)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from resonance_os.api.http.deps import service, tenant
from resonance_os.api.http.schemas import SteerDimensions, SteerRequest, SteerResponse
from resonance_os.api.persistence.tenants import TenantContext
from resonance_os.api.routes.generate import in_writer_budget
from resonance_os.api.service import ResonanceService

router = APIRouter(prefix="/v1/steer", tags=["steering"])


@router.get("/dimensions", response_model=SteerDimensions)
async def steer_dimensions(
    ctx: TenantContext = Depends(tenant), svc: ResonanceService = Depends(service)
) -> dict:
    """Every HRV dimension: whether the writer can be steered along it and, for those that can, the
    held-out dose-response it was shipped with (mean measured value at strengths -1 ... 1, Spearman
    rho, fluency at +-0.5 over unsteered, the strengths over which it moves one way); for the others,
    why not. ``available`` is false, with the fix, when the server does not write with its local model."""
    return await run_in_threadpool(svc.workers.run, ctx.tenant_id, "steerable", counted=False)


@router.post("", response_model=SteerResponse)
async def steer(
    body: SteerRequest,
    request: Request,
    ctx: TenantContext = Depends(tenant),
    svc: ResonanceService = Depends(service),
) -> dict:
    """Write ``paragraph`` again (or a paragraph about ``topic``) with the local model steered by
    ``steer`` (``{dimension: strength in [-1, 1]}``): one reply sampled with ``seed`` (the same request
    gives the same text; all strengths 0 is the unsteered model), its measured HRV and the paragraph's.
    Model work: it takes turns at the writer with generation (same per-tenant limits and time budget:
    429, 503). 422 for a dimension that cannot be steered or a strength outside [-1, 1]; 409 when the
    server does not write with its local model."""
    return await in_writer_budget(
        request, svc.workers.run, ctx.tenant_id, "steer", body.steer, body.paragraph, body.topic, body.seed
    )
