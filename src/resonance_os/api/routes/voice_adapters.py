"""A profile's voice adapter: POST /v1/profiles/{name}/adapter trains it as a job from your paragraphs,
GET /v1/profiles/{name}/adapter says whether it has one (``api.jobs.voice_adapters``)."""

from __future__ import annotations

import json

from fastapi import APIRouter, Depends, Request
from pydantic import Field

from resonance_os.api.http.deps import service, tenant
from resonance_os.api.http.schemas import Body, JobOut, Text
from resonance_os.api.jobs.voice_adapters import (
    RUNS_SUBFOLDER,
    VOICE_ADAPTER_KIND,
    VOICE_ADAPTER_TRAINER,
    profile_adapter_dir,
)
from resonance_os.api.persistence.tenants import TenantContext
from resonance_os.api.routes.jobs import accepted
from resonance_os.api.service import ResonanceService
from resonance_os.core.errors import NotFoundError

router = APIRouter(prefix="/v1/profiles", tags=["profiles"])


class VoiceAdapterRequest(Body):
    text: Text = Field(
        description="The writer's own prose, paragraphs separated by blank lines: at least one of 25 "
        "words (a few thousand words are better); the 48 nearest the profile are learned from."
    )
    sft_steps: int = Field(18, ge=1, le=200, description="Supervised steps on the paragraphs.")
    grpo_steps: int = Field(
        12, ge=0, le=60, description="HR-GRPO steps toward the profile after them (0: none)."
    )
    seed: int = Field(0, ge=0, le=2**32 - 1)


@router.post("/{name}/adapter", response_model=JobOut, status_code=202)
def train_voice_adapter(
    name: str,
    body: VoiceAdapterRequest,
    request: Request,
    ctx: TenantContext = Depends(tenant),
    svc: ResonanceService = Depends(service),
) -> dict:
    """Queue the training of your profile's voice adapter on your paragraphs: 202 and the job (kind
    ``voice_adapter``; GET /v1/jobs/{id} follows it). When it succeeds, /v1/generate toward the profile
    drafts with the adapter, and POST /v1/adapters {"name", "path": "voice-adapters/<name>"} serves it.
    404 for a profile you do not have, 422 without a paragraph of 25 words, 507 without storage room,
    429 when your job queue is full."""
    trainer = request.app.state.settings.trainers.get(VOICE_ADAPTER_KIND, VOICE_ADAPTER_TRAINER)
    job = svc.start_voice_adapter_training(
        ctx,
        name,
        body.text,
        trainer,
        sft_steps=body.sft_steps,
        grpo_steps=body.grpo_steps,
        seed=body.seed,
        limits=request.app.state.job_limits,
    )
    return accepted(request, svc, ctx, job)


@router.get("/{name}/adapter")
def get_voice_adapter(
    name: str, ctx: TenantContext = Depends(tenant), svc: ResonanceService = Depends(service)
) -> dict:
    """Your profile's voice adapter: what it was trained toward and how, and the ``path`` to serve it
    with POST /v1/adapters; 404 when it has none yet."""
    svc.get_profile(ctx, name)  # 404 for a profile you do not have
    voice = profile_adapter_dir(svc.db, ctx.tenant, name) / "voice.json"
    try:
        info = json.loads(voice.read_text())
    except (OSError, ValueError):
        raise NotFoundError(
            f"profile {name!r} has no voice adapter yet; POST /v1/profiles/{name}/adapter with your "
            "paragraphs trains one"
        ) from None
    return {
        "profile": name,
        "target_hrv": info.get("target_hrv"),
        "training": info.get("training", {}),
        "path": f"{RUNS_SUBFOLDER}/{name}",
    }
