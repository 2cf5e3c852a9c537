"""Measuring text: POST /v1/analyze and POST /v1/score."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from resonance_os.api.http.deps import service, tenant
from resonance_os.api.http.schemas import (
    AnalyzeRequest,
    AnalyzeResponse,
    RefineApplyRequest,
    RefineApplyResponse,
    RefineRequest,
    RefineResponse,
    ScoreRequest,
    ScoreResponse,
)
from resonance_os.api.persistence.tenants import TenantContext
from resonance_os.api.routes.generate import in_writer_budget
from resonance_os.api.service import ResonanceService

router = APIRouter(prefix="/v1", tags=["text"])

INLINE_TEXT_CHARS = 5_000
"""Texts up to this long (~900 words, about a millisecond to measure) are measured on the event loop,
which costs less than the hop to the thread pool; longer ones are measured in the tenant's turn at
the text workers, so that they never hold up other requests."""


@router.post("/analyze", response_model=AnalyzeResponse)
async def analyze(
    body: AnalyzeRequest, ctx: TenantContext = Depends(tenant), svc: ResonanceService = Depends(service)
) -> dict:
    """The text's HRV (8 dimensions in [0, 1]) and the evidence behind each value."""
    if len(body.text) <= INLINE_TEXT_CHARS:
        return svc.analyze(body.text, evidence=body.evidence)
    return await run_in_threadpool(svc.analyze, body.text, evidence=body.evidence, ctx=ctx)


@router.post("/score", response_model=ScoreResponse)
def score(
    body: ScoreRequest, ctx: TenantContext = Depends(tenant), svc: ResonanceService = Depends(service)
) -> dict:
    """The writing reward (``reward``: fast or lm) of the text toward a profile or target HRV:
    resonance, fluency, coherence, topic (with ``prompt``), repetition and the combined reward, with
    per-dimension gaps."""
    return svc.score(ctx, body.text, body.profile, body.target_hrv, body.prompt, body.reward)


@router.post("/refine", response_model=RefineResponse)
async def refine(
    body: RefineRequest,
    request: Request,
    ctx: TenantContext = Depends(tenant),
    svc: ResonanceService = Depends(service),
) -> dict:
    """Edit your text toward a profile or target HRV (default: the default profile) as ``resonance
    refine`` does, keeping only edits that close the style gap without costing writing quality: the
    edited text, the kept edits, a word diff, and the HRV, reward and terms before and after (the
    writing reward ``reward``: fast or lm). It takes turns at the writer with generation (same limits
    and time budget: 429, 503)."""
    return await in_writer_budget(
        request,
        svc.refine,
        ctx,
        body.text,
        profile=body.profile,
        target_hrv=body.target_hrv,
        seed=body.seed,
        reward=body.reward,
    )


@router.post("/refine/apply", response_model=RefineApplyResponse)
def refine_apply(body: RefineApplyRequest, ctx: TenantContext = Depends(tenant)) -> dict:
    """Apply the suggestions you accepted from ``POST /v1/refine`` (by id, in order) to the original
    text; an accepted edit of a sentence that a rejected one wrote is skipped and listed as such."""
    from resonance_os.generation.text_refine import Suggestion, apply_suggestions

    suggestions = [Suggestion(s.id, s.paragraph, s.edit, s.before, s.after) for s in body.suggestions]
    text, applied, skipped = apply_suggestions(body.text, suggestions, set(body.accept))
    return {"text": text, "applied": applied, "skipped": skipped}
