"""Training jobs: POST /v1/train starts one in a worker process, GET /v1/jobs/{job_id} follows it."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from resonance_os.api import jobs
from resonance_os.api.db import Job
from resonance_os.api.deps import service, tenant
from resonance_os.api.http_errors import ApiError
from resonance_os.api.metrics import JOBS_SUBMITTED
from resonance_os.api.schemas import JobOut, TrainRequest
from resonance_os.api.service import ResonanceService
from resonance_os.api.tenants import TenantContext

router = APIRouter(prefix="/v1", tags=["training"])


def job_out(job: Job) -> dict:
    return {
        "id": job.id,
        "kind": job.kind,
        "state": job.state,
        "progress": job.progress,
        "metrics": job.metrics or {},
        "error": job.error,
        "params": job.params,
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
    """Queue a PPO training job toward a profile or target; poll GET /v1/jobs/{id}."""
    settings = request.app.state.settings
    trainer = settings.trainers.get("ppo")
    if trainer is None:
        raise ApiError(503, "TrainingUnavailableError", "this server has no PPO trainer configured")
    job = svc.start_training(
        ctx,
        trainer,
        profile=body.profile,
        target_hrv=body.target_hrv,
        timesteps=body.timesteps,
        seed=body.seed,
        use_reward_model=body.use_reward_model,
        launch=settings.launch_workers,
    )
    JOBS_SUBMITTED.labels("ppo").inc()
    return job_out(job)


@router.get("/jobs/{job_id}", response_model=JobOut)
def get_job(
    job_id: str, ctx: TenantContext = Depends(tenant), svc: ResonanceService = Depends(service)
) -> dict:
    return job_out(jobs.get(svc.db, ctx.tenant_id, job_id))
