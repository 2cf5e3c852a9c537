"""Human feedback and the per-tenant reward model trained from it."""

from __future__ import annotations

import threading
from typing import Any

import sqlalchemy as sa

from resonance_os.api.db import Database, Feedback, Item, RewardModelVersion
from resonance_os.api.quotas import charge, text_bytes
from resonance_os.api.tenants import TenantContext
from resonance_os.core.errors import NotFoundError, ValidationError
from resonance_os.evolution.resonance_reward_model import (
    PreferenceExample,
    RatingExample,
    ResonanceRewardModel,
)

_models: dict[tuple[str, int, int], ResonanceRewardModel] = {}
"""Fitted models by (database URL, tenant id, version): versions are immutable, so caching is safe."""
_models_lock = threading.Lock()


def record(
    service,
    ctx: TenantContext,
    *,
    kind: str,
    item: Item,
    other: Item | None,
    rating: int | None,
    preferred: str | None,
    target_hrv: list[float] | None,
    prompt: str | None = None,
) -> Feedback:
    """Store a rating of ``item`` or a preference between ``item`` ("a") and ``other`` ("b"), with a copy
    of their text and HRV. The target and the prompt default to the item's own (then ``other``'s).
    Items not stored yet (``ResonanceService.measure_submitted``) are stored in the same transaction."""
    target = target_hrv or item.target_hrv or (other.target_hrv if other is not None else None)
    prompt = prompt or item.prompt or (other.prompt if other is not None else None)
    if target is None:
        target, _ = service.resolve_target(ctx, None, None)
    with service.db.write() as session:
        new_items = [i for i in (item, other) if i is not None and sa.inspect(i).transient]
        stored_texts = [t for i in new_items for t in (i.text, i.prompt)]
        copied_texts = [item.text, None if other is None else other.text, prompt]
        charge(
            session,
            ctx.tenant_id,
            service.quota,
            1 + len(new_items),
            text_bytes(*stored_texts, *copied_texts),
        )
        for new in new_items:
            session.add(new)
        session.flush()
        if other is not None and item.id == other.id:
            raise ValidationError("a preference compares two different items; item and other are the same")
        row = Feedback(
            tenant_id=ctx.tenant_id,
            kind=kind,
            rating=rating,
            preferred=preferred,
            target_hrv=list(target),
            item_a_id=item.id,
            item_a_text=item.text,
            item_a_hrv=list(item.hrv),
            item_b_id=None if other is None else other.id,
            item_b_text=None if other is None else other.text,
            item_b_hrv=None if other is None else list(other.hrv),
            prompt=prompt,
        )
        session.add(row)
        session.flush()
        return row


def _examples(db: Database, tenant_id: int) -> tuple[list[RatingExample], list[PreferenceExample]]:
    with db.read() as session:
        rows = session.scalars(
            sa.select(Feedback)
            .where(Feedback.tenant_id == tenant_id)
            .order_by(Feedback.created_at, Feedback.id)
        ).all()
    ratings = [
        RatingExample(r.item_a_text, r.item_a_hrv, r.target_hrv, r.rating, r.prompt)
        for r in rows
        if r.kind == "rating"
    ]
    preferences = [
        PreferenceExample(
            r.item_a_text, r.item_b_text, r.item_a_hrv, r.item_b_hrv, r.target_hrv, r.preferred, r.prompt
        )
        for r in rows
        if r.kind == "preference"
    ]
    return ratings, preferences


def train(service, ctx: TenantContext, *, holdout_fraction: float, seed: int) -> RewardModelVersion:
    """Fit a new reward model version on all of the tenant's feedback and store it."""
    ratings, preferences = _examples(service.db, ctx.tenant_id)
    model = ResonanceRewardModel(extractor=service.extractor)
    model.fit(ratings, preferences, holdout_fraction=holdout_fraction, seed=seed)
    with service.db.write() as session:
        latest = session.scalar(
            sa.select(sa.func.max(RewardModelVersion.version)).where(
                RewardModelVersion.tenant_id == ctx.tenant_id
            )
        )
        model.version = (latest or 0) + 1
        params, weights = model.to_state()
        row = RewardModelVersion(
            tenant_id=ctx.tenant_id,
            version=model.version,
            params=params,
            weights=weights,
            metrics=model.metrics,
        )
        session.add(row)
        session.flush()
    with _models_lock:
        _models[(service.db.url, ctx.tenant_id, model.version)] = model
    return row


def latest_version(db: Database, tenant_id: int) -> RewardModelVersion | None:
    with db.read() as session:
        return session.scalar(
            sa.select(RewardModelVersion)
            .where(RewardModelVersion.tenant_id == tenant_id)
            .order_by(RewardModelVersion.version.desc())
            .limit(1)
        )


def latest_model(db: Database, tenant_id: int, extractor=None) -> ResonanceRewardModel | None:
    """The tenant's newest reward model (cached per process), or ``None`` before the first training."""
    with db.read() as session:
        version = session.scalar(
            sa.select(sa.func.max(RewardModelVersion.version)).where(
                RewardModelVersion.tenant_id == tenant_id
            )
        )
    if version is None:
        return None
    with _models_lock:
        cached = _models.get((db.url, tenant_id, version))
    if cached is not None:
        return cached
    row = latest_version(db, tenant_id)
    model = ResonanceRewardModel.from_state(row.params, row.weights, extractor=extractor)
    with _models_lock:
        _models[(db.url, tenant_id, row.version)] = model
    return model


def load_version(db: Database, tenant_id: int, version: int, extractor=None) -> ResonanceRewardModel:
    """Version ``version`` of the tenant's reward model (``NotFoundError`` if it does not exist)."""
    with db.read() as session:
        row = session.scalar(
            sa.select(RewardModelVersion).where(
                RewardModelVersion.tenant_id == tenant_id, RewardModelVersion.version == version
            )
        )
    if row is None:
        raise NotFoundError(f"no reward model version {version} for this tenant")
    return ResonanceRewardModel.from_state(row.params, row.weights, extractor=extractor)


def describe(db: Database, tenant_id: int) -> dict[str, Any]:
    row = latest_version(db, tenant_id)
    if row is None:
        raise NotFoundError("no reward model yet; send feedback and POST /v1/reward-model/train")
    return {"version": row.version, "created_at": row.created_at, "metrics": row.metrics}
