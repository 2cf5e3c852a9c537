"""Unauthenticated operational routes: liveness, readiness and Prometheus metrics.

``GET /health`` answers 200 whenever the server is up (liveness), with ``status`` ``"starting"`` while
the text workers load the language model and ``"ready"`` after; ``GET /health/ready`` has the same body
and answers 503 (with ``Retry-After``) while starting, 200 once ready: a load balancer's readiness probe."""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse

from resonance_os import __version__
from resonance_os.api.http import metrics
from resonance_os.api.http.deps import service
from resonance_os.api.http.schemas import Health
from resonance_os.api.service import ResonanceService

router = APIRouter(tags=["operations"])


def _health(svc: ResonanceService) -> Health:
    workers = svc.workers.readiness()
    return Health(
        status="ready" if workers["ready"] else "starting",
        version=__version__,
        database=svc.db.redacted_url.split("://", 1)[0],
        workers={**workers, "paragraph_s": svc.workers.paragraph_seconds()},
    )


@router.get("/health", response_model=Health)
async def health(svc: ResonanceService = Depends(service)) -> Health:
    """Liveness: 200 while the server is up; ``status`` says whether the text workers are ready."""
    return _health(svc)


@router.get(
    "/health/ready",
    response_model=Health,
    responses={503: {"model": Health, "description": "The text workers are still starting."}},
)
async def ready(svc: ResonanceService = Depends(service)) -> Response:
    """Readiness: 200 once the text workers are ready, else 503 with ``Retry-After``."""
    body = _health(svc)
    if body.status == "ready":
        return JSONResponse(body.model_dump())
    return JSONResponse(body.model_dump(), status_code=503, headers={"Retry-After": "5"})


@router.get("/metrics", response_class=Response)
def prometheus_metrics(request: Request, svc: ResonanceService = Depends(service)) -> Response:
    """Request counts and latencies by route template (no key needed, nothing per tenant); training
    jobs by state too when sent ``Authorization: Bearer $RESONANCE_METRICS_TOKEN`` (the operator's)."""
    token = request.app.state.settings.metrics_token
    presented = request.headers.get("authorization", "")
    operator = bool(token) and hmac.compare_digest(presented.encode(), f"Bearer {token}".encode())
    body, content_type = metrics.render(svc.db, include_jobs=operator)
    return Response(body, media_type=content_type)
