"""Human feedback and the reward model: POST /v1/feedback, POST /v1/reward-model/train (a job),
GET /v1/reward-model."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from resonance_os.api.http.deps import service, tenant
from resonance_os.api.http.schemas import (
    FeedbackRequest,
    FeedbackResponse,
    ItemRef,
    JobOut,
    RewardModelOut,
    RewardTrainRequest,
)
from resonance_os.api.persistence import feedback
from resonance_os.api.persistence.tenants import TenantContext
from resonance_os.api.routes.jobs import accepted
from resonance_os.api.service import ResonanceService

router = APIRouter(prefix="/v1", tags=["feedback"])


def _item(svc: ResonanceService, ctx: TenantContext, ref: ItemRef, target: list[float] | None):
    """The item by id, or the text measured into an item that ``feedback.record`` stores with the row."""
    return svc.get_item(ctx, ref.id) if ref.id is not None else svc.measure_submitted(ctx, ref.text, target)


@router.post("/feedback", response_model=FeedbackResponse, status_code=201)
def post_feedback(
    body: FeedbackRequest, ctx: TenantContext = Depends(tenant), svc: ResonanceService = Depends(service)
) -> dict:
    """Rate an item 1-5, or prefer item ("a") or other ("b"); items by id or as text to be measured.
    Texts become items in the same transaction as the feedback: a refused request stores nothing."""
    target = None
    if body.profile is not None or body.target_hrv is not None:
        target, _ = svc.resolve_target(ctx, body.profile, body.target_hrv)
    item = _item(svc, ctx, body.item, target)
    other = None if body.other is None else _item(svc, ctx, body.other, target)
    row = feedback.record(
        svc,
        ctx,
        kind=body.kind,
        item=item,
        other=other,
        rating=body.rating,
        preferred=body.preferred,
        target_hrv=target,
        prompt=body.prompt,
    )
    return {"id": row.id, "kind": row.kind, "item_ids": [i.id for i in (item, other) if i is not None]}


@router.post("/reward-model/train", response_model=JobOut, status_code=202)
def train_reward_model(
    body: RewardTrainRequest,
    request: Request,
    ctx: TenantContext = Depends(tenant),
    svc: ResonanceService = Depends(service),
) -> dict:
    """Queue a fit of a new reward model version on all of your feedback: 202 and the job (kind
    ``reward_model``); follow it at GET /v1/jobs/{id} (its metrics name ``reward_model_version``),
    then GET /v1/reward-model. 422 with too little feedback, 507 without storage room, 429 when your
    job queue is full."""
    trainer = request.app.state.settings.trainers.get(
        feedback.REWARD_MODEL_KIND, feedback.REWARD_MODEL_TRAINER
    )
    job = svc.start_reward_model_training(
        ctx,
        trainer,
        holdout_fraction=body.holdout_fraction,
        seed=body.seed,
        limits=request.app.state.job_limits,
    )
    return accepted(request, svc, ctx, job)


@router.get("/reward-model", response_model=RewardModelOut)
def get_reward_model(ctx: TenantContext = Depends(tenant), svc: ResonanceService = Depends(service)) -> dict:
    return feedback.describe(svc.db, ctx.tenant_id)
