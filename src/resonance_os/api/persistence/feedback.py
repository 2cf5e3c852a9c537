"""Human feedback and the per-tenant reward model trained from it.

Fitting a reward model measures every judged text and searches regularisers: seconds to minutes of
CPU. It runs as a job (kind :data:`REWARD_MODEL_KIND`, trainer :func:`fit_reward_model`) in a job
worker at the lowest CPU priority, within the job limits and fair share of :mod:`resonance_os.api.jobs.queue`,
never in a request handler (four concurrent fits in the server process had taken another tenant's
p50 from 2.5 to 47 ms). Each stored version counts one row and its bytes against the tenant's storage
quota.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import sqlalchemy as sa

from resonance_os.api.jobs.report import JobReport, TrainingResult
from resonance_os.api.persistence.db import Database, Feedback, Item, RewardModelVersion
from resonance_os.api.persistence.quotas import StorageQuota, charge, text_bytes
from resonance_os.api.persistence.tenants import TenantContext
from resonance_os.api.settings import Settings
from resonance_os.core.errors import NotFoundError, ValidationError
from resonance_os.evolution.resonance_reward_model import (
    MIN_PREFERENCES,
    MIN_RATINGS,
    PreferenceExample,
    RatingExample,
    ResonanceRewardModel,
)

REWARD_MODEL_KIND = "reward_model"
"""The job kind of a reward-model fit."""
REWARD_MODEL_TRAINER = "reward_model"
"""The name (``api.jobs.trainers``) of the trainer a reward-model job runs, :func:`fit_reward_model`
(``RESONANCE_TRAINERS`` may name another for the kind)."""

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


def check_trainable(db: Database, tenant_id: int) -> None:
    """Raise ``ValidationError`` (422) now, before a job is queued, when the tenant's feedback is too
    little to fit a reward model (the fit's own rule: 10 preferences or 10 ratings)."""
    with db.read() as session:
        counts = dict(
            session.execute(
                sa.select(Feedback.kind, sa.func.count())
                .where(Feedback.tenant_id == tenant_id)
                .group_by(Feedback.kind)
            ).all()
        )
    preferences, ratings = counts.get("preference", 0), counts.get("rating", 0)
    if preferences < MIN_PREFERENCES and ratings < MIN_RATINGS:
        raise ValidationError(
            f"need at least {MIN_PREFERENCES} preferences or {MIN_RATINGS} ratings to train a reward "
            f"model, have {preferences} preferences and {ratings} ratings; send more feedback"
        )


def version_bytes(params: dict[str, Any], weights: bytes) -> int:
    """The bytes a stored reward model version counts against the storage quota."""
    return len(weights) + len(json.dumps(params).encode())


def train(
    db: Database,
    tenant_id: int,
    quota: StorageQuota,
    *,
    holdout_fraction: float,
    seed: int,
    extractor=None,
) -> RewardModelVersion:
    """Fit a new reward model version on all of the tenant's feedback and store it, charged to its
    storage quota in the same transaction (``StorageQuotaError`` when it cannot fit; nothing stored)."""
    ratings, preferences = _examples(db, tenant_id)
    model = ResonanceRewardModel(extractor=extractor)
    model.fit(ratings, preferences, holdout_fraction=holdout_fraction, seed=seed)
    with db.write() as session:
        latest = session.scalar(
            sa.select(sa.func.max(RewardModelVersion.version)).where(
                RewardModelVersion.tenant_id == tenant_id
            )
        )
        model.version = (latest or 0) + 1
        params, weights = model.to_state()
        charge(session, tenant_id, quota, 1, version_bytes(params, weights))
        row = RewardModelVersion(
            tenant_id=tenant_id, version=model.version, params=params, weights=weights, metrics=model.metrics
        )
        session.add(row)
        session.flush()
    with _models_lock:
        _models[(db.url, tenant_id, model.version)] = model
    return row


def fit_reward_model(params: dict, report: JobReport) -> TrainingResult:
    """The job trainer of :data:`REWARD_MODEL_KIND` (runs in a job worker): :func:`train` with the
    job's ``holdout_fraction`` and ``seed`` under the server's storage quota (its environment); the
    job's metrics are the new version's held-out metrics and ``reward_model_version``."""
    settings = Settings.from_env()
    row = train(
        report.db,
        report.tenant_id,
        StorageQuota(rows=settings.quota_rows, bytes=settings.quota_bytes),
        holdout_fraction=float(params["holdout_fraction"]),
        seed=int(params["seed"]),
    )
    return TrainingResult(metrics={"reward_model_version": row.version, **row.metrics})


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
        raise NotFoundError(
            "no reward model yet; send feedback, POST /v1/reward-model/train and wait for its job"
        )
    return {"version": row.version, "created_at": row.created_at, "metrics": row.metrics}
