"""What a job's trainer gets and returns: :class:`JobReport` (progress, checkpoints, its work folder)
and :class:`TrainingResult` (final metrics, the trained policy as bytes)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from resonance_os.api.persistence.db import Database, Job, utcnow

MAX_CURVE_POINTS = 500
"""A job's stored learning curve keeps at most this many points (evenly spaced, the last one always)."""


def curve_points(rows: list[dict[str, Any]], limit: int = MAX_CURVE_POINTS) -> list[dict[str, float]]:
    """The numeric fields of each metrics row, thinned to at most ``limit`` evenly spaced rows (the
    first and last kept): what ``GET /v1/jobs/{id}/metrics`` returns as the learning curve."""
    if len(rows) > limit:
        step = (len(rows) - 1) / (limit - 1)
        rows = [rows[round(i * step)] for i in range(limit)]
    return [
        {
            key: float(value)
            for key, value in row.items()
            if isinstance(value, (int, float)) and not isinstance(value, bool)
        }
        for row in rows
    ]


@dataclass
class TrainingResult:
    """What a trainer returns: final metrics and, optionally, the trained policy as bytes (a zip)."""

    metrics: dict[str, Any] = field(default_factory=dict)
    artifact: bytes | None = None


class JobReport:
    """What a trainer gets besides its params: progress reporting (at most every ``min_interval_s``
    seconds), the job's ``work_dir`` (kept across attempts) and how often to checkpoint."""

    def __init__(
        self,
        db: Database,
        job_id: str,
        tenant_id: int,
        min_interval_s: float = 0.5,
        *,
        work_dir: Path | None = None,
        checkpoint_every: int = 1,
    ) -> None:
        self.db = db
        self.job_id = job_id
        self.tenant_id = tenant_id
        self.min_interval_s = min_interval_s
        self.work_dir = work_dir
        self.checkpoint_every = checkpoint_every
        self._last = 0.0

    def checkpointed(self, timesteps: int) -> None:
        """Record that the job's checkpoint now holds ``timesteps`` steps of training."""
        self._update(checkpoint_timesteps=int(timesteps), heartbeat_at=utcnow())

    def resumed(self, timesteps: int) -> None:
        """Record that this attempt continues from a checkpoint of ``timesteps`` steps."""
        self._update(resumed_from=int(timesteps))

    def _update(self, **values: Any) -> None:
        with self.db.write() as session:
            session.execute(
                sa.update(Job).where(Job.id == self.job_id, Job.state == "running").values(**values)
            )

    def progress(
        self,
        fraction: float,
        metrics: dict[str, Any] | None = None,
        *,
        curve: list[dict[str, Any]] | None = None,
        force: bool = False,
    ) -> None:
        """Record ``fraction`` done (0-1), the latest ``metrics`` and the learning ``curve`` so far (every
        metrics row, oldest first; stored thinned by :func:`curve_points`); at most every
        ``min_interval_s`` seconds unless ``force``."""
        now = time.monotonic()
        if not force and now - self._last < self.min_interval_s:
            return
        self._last = now
        values: dict[str, Any] = {"progress": min(max(float(fraction), 0.0), 1.0), "heartbeat_at": utcnow()}
        if metrics is not None:
            values["metrics"] = metrics
        if curve is not None:
            values["curve"] = curve_points(curve)
        self._update(**values)
