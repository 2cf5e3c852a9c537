"""Unauthenticated operational routes: liveness and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response

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
def prometheus_metrics(svc: ResonanceService = Depends(service)) -> Response:
    body, content_type = metrics.render(svc.db)
    return Response(body, media_type=content_type)
