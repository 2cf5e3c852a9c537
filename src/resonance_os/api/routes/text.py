"""Measuring text: POST /v1/analyze and POST /v1/score."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from resonance_os.api.deps import service, tenant
from resonance_os.api.schemas import AnalyzeRequest, AnalyzeResponse, ScoreRequest, ScoreResponse
from resonance_os.api.service import ResonanceService
from resonance_os.api.tenants import TenantContext

router = APIRouter(prefix="/v1", tags=["text"])


@router.post("/analyze", response_model=AnalyzeResponse)
def analyze(
    body: AnalyzeRequest, _ctx: TenantContext = Depends(tenant), svc: ResonanceService = Depends(service)
) -> dict:
    """The text's HRV (8 dimensions in [0, 1]) and the evidence behind each value."""
    return svc.analyze(body.text, evidence=body.evidence)


@router.post("/score", response_model=ScoreResponse)
def score(
    body: ScoreRequest, ctx: TenantContext = Depends(tenant), svc: ResonanceService = Depends(service)
) -> dict:
    """Resonance of the text with a profile or target HRV, with per-dimension gaps."""
    return svc.score(ctx, body.text, body.profile, body.target_hrv)
