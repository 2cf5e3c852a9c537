"""The tenant's target profiles: /v1/profiles CRUD, history and from-text."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Response

from resonance_os.api.http.deps import service, tenant
from resonance_os.api.http.schemas import (
    ProfileCreate,
    ProfileFromText,
    ProfileHistory,
    ProfileList,
    ProfileOut,
    ProfileUpdate,
)
from resonance_os.api.persistence.tenants import TenantContext
from resonance_os.api.service import ResonanceService

router = APIRouter(prefix="/v1/profiles", tags=["profiles"])


@router.get("", response_model=ProfileList)
def list_profiles(ctx: TenantContext = Depends(tenant), svc: ResonanceService = Depends(service)) -> dict:
    return {"profiles": svc.list_profiles(ctx)}


OverwriteQuery = Query(
    False,
    description="Replace a profile of the same name: the new values become its next version (the "
    "earlier ones stay in its history). Without it an existing name answers 409.",
)


@router.post("", response_model=ProfileOut, status_code=201)
def create_profile(
    body: ProfileCreate,
    overwrite: bool = OverwriteQuery,
    ctx: TenantContext = Depends(tenant),
    svc: ResonanceService = Depends(service),
) -> dict:
    """Create a profile from 8 values (409 if the name exists, unless ``?overwrite=true``)."""
    return svc.save_profile(
        ctx, body.name, body.hrv, body.description, must_exist=None if overwrite else False
    )


@router.post("/from-text", response_model=ProfileOut, status_code=201)
def profile_from_text(
    body: ProfileFromText,
    overwrite: bool = OverwriteQuery,
    ctx: TenantContext = Depends(tenant),
    svc: ResonanceService = Depends(service),
) -> dict:
    """Measure a sample of the voice you want and save it as a profile (409 if the name exists, unless
    ``?overwrite=true``); ``warnings`` says when the sample is too short to measure a voice."""
    return svc.profile_from_text(ctx, body.name, body.text, body.description, overwrite=overwrite)


@router.get("/{name}", response_model=ProfileOut)
def get_profile(
    name: str, ctx: TenantContext = Depends(tenant), svc: ResonanceService = Depends(service)
) -> dict:
    return svc.get_profile(ctx, name)


@router.put("/{name}", response_model=ProfileOut)
def update_profile(
    name: str,
    body: ProfileUpdate,
    ctx: TenantContext = Depends(tenant),
    svc: ResonanceService = Depends(service),
) -> dict:
    """Store a new version of an existing profile (earlier versions stay in its history)."""
    return svc.save_profile(ctx, name, body.hrv, body.description, must_exist=True)


@router.delete("/{name}", status_code=204, response_class=Response)
def delete_profile(
    name: str, ctx: TenantContext = Depends(tenant), svc: ResonanceService = Depends(service)
) -> Response:
    svc.delete_profile(ctx, name)
    return Response(status_code=204)


@router.get("/{name}/history", response_model=ProfileHistory)
def profile_history(
    name: str, ctx: TenantContext = Depends(tenant), svc: ResonanceService = Depends(service)
) -> dict:
    return {"name": name, "versions": svc.profile_history(ctx, name)}
