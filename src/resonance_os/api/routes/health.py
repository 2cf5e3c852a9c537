"""Unauthenticated operational routes: liveness and Prometheus metrics."""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Depends, Request, Response

from resonance_os import __version__
from resonance_os.api import metrics
from resonance_os.api.deps import service
from resonance_os.api.schemas import Health
from resonance_os.api.service import ResonanceService

router = APIRouter(tags=["operations"])


@router.get("/health", response_model=Health)
async def health(svc: ResonanceService = Depends(service)) -> Health:
    return Health(status="ok", version=__version__, database=svc.db.redacted_url.split("://", 1)[0])


@router.get("/metrics", response_class=Response)
def prometheus_metrics(request: Request, svc: ResonanceService = Depends(service)) -> Response:
    """Request counts and latencies by route template (no key needed, nothing per tenant); training
    jobs by state too when sent ``Authorization: Bearer $RESONANCE_METRICS_TOKEN`` (the operator's)."""
    token = request.app.state.settings.metrics_token
    presented = request.headers.get("authorization", "")
    operator = bool(token) and hmac.compare_digest(presented.encode(), f"Bearer {token}".encode())
    body, content_type = metrics.render(svc.db, include_jobs=operator)
    return Response(body, media_type=content_type)
