"""The worker's housekeeping: checkpoints past their TTL go (files and row), old finished futures go,
fresh ones stay."""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa

from resonance_os.api.persistence.tenants import create_tenant
from resonance_os.api.tinker import futures
from resonance_os.api.tinker.config import TinkerConfig
from resonance_os.api.tinker.store import TinkerCheckpoint, TinkerFuture
from resonance_os.api.tinker.worker import FUTURE_KEEP_S, TinkerWorker
from resonance_os.profiles.schema import utcnow


def test_sweep_deletes_expired_checkpoints_and_old_futures(db, tmp_path):
    create_tenant(db, "sweeper")
    with db.read() as session:
        tenant_id = session.execute(sa.text("SELECT id FROM tenants WHERE name = 'sweeper'")).scalar_one()
    expired, kept = tmp_path / "expired", tmp_path / "kept"
    for folder in (expired, kept):
        folder.mkdir()
        (folder / "adapter.safetensors").write_bytes(b"x" * 10)
    now = utcnow()
    with db.write() as session:
        for name, folder, expires in (
            ("old", expired, now - timedelta(seconds=1)),
            ("new", kept, now + timedelta(hours=1)),
        ):
            session.add(
                TinkerCheckpoint(
                    tenant_id=tenant_id,
                    model_id="m",
                    kind="training",
                    name=name,
                    folder=str(folder),
                    size_bytes=10,
                    user_metadata={},
                    expires_at=expires,
                )
            )
    old = futures.submit(db, tenant_id, f"{tenant_id}/m", 1, "optim_step", {}, max_queued=10)
    fresh = futures.submit(db, tenant_id, f"{tenant_id}/m", 2, "optim_step", {}, max_queued=10)
    futures.finish(db, old, {"metrics": {}}, "json")
    futures.finish(db, fresh, {"metrics": {}}, "json")
    with db.write() as session:
        session.execute(
            sa.update(TinkerFuture)
            .where(TinkerFuture.id == old)
            .values(finished_at=now - timedelta(seconds=FUTURE_KEEP_S + 1))
        )

    TinkerWorker(db, TinkerConfig(checkpoints=tmp_path), futures.Waiters()).sweep()

    with db.read() as session:
        assert session.scalars(sa.select(TinkerCheckpoint.name)).all() == ["new"]
        assert session.scalars(sa.select(TinkerFuture.id)).all() == [fresh]
    assert not expired.exists() and kept.exists()
