"""A tenant's Tinker sampler weights as the OpenAI API sees them (``api/openai/serving.py``).

Every ``save_weights_for_sampler(name)`` checkpoint (``tinker://<run>/sampler_weights/<name>``) is an
adapter in peft's layout; the OpenAI API serves it as the model of that id when its base model is the
one the OpenAI API serves. This module only reads the checkpoint rows and files (no tinker SDK needed).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timezone
from pathlib import Path

import sqlalchemy as sa

from resonance_os.api.persistence.db import Database
from resonance_os.api.tinker import checkpoints
from resonance_os.api.tinker.errors import UserError
from resonance_os.api.tinker.store import TinkerCheckpoint
from resonance_os.profiles.schema import utcnow
from resonance_os.rl.errors import RLError


@dataclass(frozen=True)
class SamplerWeights:
    """One saved sampler checkpoint: its ``tinker://`` path, folder, base model's folder, creation time
    (Unix seconds) and version (the exact creation time: an overwritten checkpoint has a new one)."""

    path: str
    folder: Path
    base_folder: Path
    created: int
    version: float

    def serves_on(self, folder: Path) -> bool:
        """Whether these weights were trained on the base model in ``folder``."""
        return self.base_folder == folder.resolve()


def _weights(record: TinkerCheckpoint) -> SamplerWeights | None:
    folder = Path(record.folder)
    try:
        base_folder = Path(checkpoints.read_meta(folder)["base_folder"]).resolve()
    except (OSError, ValueError, KeyError, RLError):
        return None  # deleted or swept between the query and now
    where = checkpoints.TinkerPath(record.model_id, record.kind, record.name)
    created = record.created_at
    stamp = (created if created.tzinfo else created.replace(tzinfo=timezone.utc)).timestamp()
    return SamplerWeights(str(where), folder, base_folder, int(stamp), stamp)


def _live(tenant_id: int) -> list[sa.ColumnElement[bool]]:
    return [
        TinkerCheckpoint.tenant_id == tenant_id,
        TinkerCheckpoint.kind == "sampler",
        sa.or_(TinkerCheckpoint.expires_at.is_(None), TinkerCheckpoint.expires_at > utcnow()),
    ]


def sampler_weights(db: Database, tenant_id: int) -> list[SamplerWeights]:
    """The tenant's unexpired sampler checkpoints, oldest first."""
    with db.read() as session:
        records = session.scalars(
            sa.select(TinkerCheckpoint).where(*_live(tenant_id)).order_by(TinkerCheckpoint.created_at)
        ).all()
    return [w for w in map(_weights, records) if w is not None]


def find(db: Database, tenant_id: int, path: str) -> SamplerWeights | None:
    """The tenant's sampler checkpoint at ``path`` (None when it has none there, or ``path`` is not a
    sampler-weights path)."""
    try:
        where = checkpoints.parse_path(path)
    except UserError:
        return None
    if where.kind != "sampler":
        return None
    with db.read() as session:
        record = session.scalar(
            sa.select(TinkerCheckpoint).where(
                *_live(tenant_id),
                TinkerCheckpoint.model_id == where.model_id,
                TinkerCheckpoint.name == where.name,
            )
        )
    return None if record is None else _weights(record)
