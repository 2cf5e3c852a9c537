"""Training jobs: POST /v1/train queues one for a worker process (POST /v1/reward-model/train another
kind, see routes.feedback), GET /v1/jobs lists yours,
GET /v1/jobs/{job_id} follows one and GET /v1/jobs/{job_id}/metrics gives its learning curve,
DELETE /v1/jobs/{job_id} (or POST /v1/jobs/{job_id}/cancel) cancels it."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, Query, Request

from resonance_os.api.http.deps import service, tenant
from resonance_os.api.http.errors import ApiError
from resonance_os.api.http.metrics import JOBS_SUBMITTED
from resonance_os.api.http.schemas import JobCurve, JobList, JobOut, JobState, TrainRequest
from resonance_os.api.jobs import queue, trainers
from resonance_os.api.persistence.db import Job
from resonance_os.api.persistence.tenants import TenantContext
from resonance_os.api.service import ResonanceService

router = APIRouter(prefix="/v1", tags=["training"])

JobKind = Literal["ppo", "reward_model", "voice_adapter"]


def job_out(job: Job) -> dict:
    return {
        "id": job.id,
        "kind": job.kind,
        "state": job.state,
        "progress": job.progress,
        "metrics": job.metrics or {},
        "error": job.error,
        "params": job.params,
        "attempts": job.attempts,
        "checkpoint_timesteps": job.checkpoint_timesteps,
        "resumed_from": job.resumed_from,
        "created_at": job.created_at,
        "started_at": job.started_at,
        "finished_at": job.finished_at,
    }


@router.post("/train", response_model=JobOut, status_code=202)
def train(
    body: TrainRequest,
    request: Request,
    ctx: TenantContext = Depends(tenant),
    svc: ResonanceService = Depends(service),
) -> dict:
    """Queue a PPO training job toward a profile or target; poll GET /v1/jobs/{id}.

    429 when you already have the most jobs waiting that one tenant may (or the server's queue is full).
    """
    settings = request.app.state.settings
    trainer = settings.trainers.get("ppo")
    if trainer is None:
        raise ApiError(503, "TrainingUnavailableError", "this server has no PPO trainer configured")
    job = svc.start_training(
        ctx,
        trainer,
        profile=body.profile,
        target_hrv=body.target_hrv,
        timesteps=trainers.whole_updates(trainer, body.timesteps),
        seed=body.seed,
        use_reward_model=body.use_reward_model,
        reward=body.reward,
        limits=request.app.state.job_limits,
    )
    return accepted(request, svc, ctx, job)


def accepted(request: Request, svc: ResonanceService, ctx: TenantContext, job: Job) -> dict:
    """The body of a 202 for a job just queued: counted, admitted now if a slot is free (the runner's
    own tick would, within a second), then read back."""
    JOBS_SUBMITTED.labels(job.kind).inc()
    runner = request.app.state.job_runner
    if runner is not None:
        runner.tick()
    return job_out(queue.get(svc.db, ctx.tenant_id, job.id))


@router.get("/jobs", response_model=JobList)
def list_jobs(
    state: list[JobState] | None = Query(
        None, description="Only jobs in these states (repeat the parameter for several)."
    ),
    kind: list[JobKind] | None = Query(
        None,
        description="Only jobs of these kinds: ppo (policies), reward_model (reward-model fits), "
        "voice_adapter (profiles' voice adapters).",
    ),
    limit: int = Query(50, ge=1, le=200, description="At most this many jobs."),
    ctx: TenantContext = Depends(tenant),
    svc: ResonanceService = Depends(service),
) -> dict:
    """Your jobs, newest first (``?kind=ppo&state=succeeded`` for the policies you can write with)."""
    found = queue.list_jobs(svc.db, ctx.tenant_id, state, limit, kinds=kind)
    return {"jobs": [job_out(job) for job in found]}


@router.get("/jobs/{job_id}/metrics", response_model=JobCurve)
def job_metrics(
    job_id: str, ctx: TenantContext = Depends(tenant), svc: ResonanceService = Depends(service)
) -> dict:
    """Your job's learning curve: its training metrics, one point per update, so far."""
    job = queue.get(svc.db, ctx.tenant_id, job_id)
    return {"id": job.id, "state": job.state, "progress": job.progress, "points": job.curve or []}


@router.get("/jobs/{job_id}", response_model=JobOut)
def get_job(
    job_id: str, ctx: TenantContext = Depends(tenant), svc: ResonanceService = Depends(service)
) -> dict:
    return job_out(queue.get(svc.db, ctx.tenant_id, job_id))


@router.delete("/jobs/{job_id}", response_model=JobOut)
def delete_job(
    job_id: str, ctx: TenantContext = Depends(tenant), svc: ResonanceService = Depends(service)
) -> dict:
    """Cancel your job (same as POST /v1/jobs/{id}/cancel); the job stays listed as ``cancelled``."""
    return job_out(queue.cancel(svc.db, ctx.tenant_id, job_id))


@router.post("/jobs/{job_id}/cancel", response_model=JobOut)
def cancel_job(
    job_id: str, ctx: TenantContext = Depends(tenant), svc: ResonanceService = Depends(service)
) -> dict:
    """Cancel your queued or running job: it never starts, or its worker is stopped. 409 if it ended."""
    return job_out(queue.cancel(svc.db, ctx.tenant_id, job_id))
