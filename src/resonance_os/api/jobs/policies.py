"""Trained policies: a finished job's artifact (a zip of its run folder: PPO checkpoint + env settings)
unpacked for use."""

from __future__ import annotations

import io
import shutil
import uuid
import zipfile
from pathlib import Path, PurePosixPath

from resonance_os.api.jobs import queue
from resonance_os.api.persistence.db import Database, Job
from resonance_os.api.persistence.keys import resonance_home
from resonance_os.core.errors import ResonanceError, StorageError, ValidationError


class PolicyNotReadyError(ResonanceError):
    """The named job has not finished successfully, so it has no policy yet."""

    http_status = 409


def pack(folder: Path) -> bytes:
    """Zip the files of a run folder (relative names only)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())
    return buffer.getvalue()


def _unpack(data: bytes, target: Path) -> None:
    tmp = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for name in archive.namelist():
                parts = PurePosixPath(name).parts
                if PurePosixPath(name).is_absolute() or ".." in parts:
                    raise StorageError(f"policy archive has an unsafe member name {name!r}")
            archive.extractall(tmp)
        try:
            tmp.rename(target)
        except OSError:
            if not target.exists():  # another process unpacking the same policy won the race: fine
                raise
    except zipfile.BadZipFile as exc:
        raise StorageError(f"the stored policy is not a valid archive: {exc}") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def policy_job(db: Database, tenant_id: int, job_id: str) -> Job:
    """The tenant's finished training job ``job_id`` (404 for unknown or other tenants' jobs, 409 if
    it has not succeeded)."""
    job = queue.get(db, tenant_id, job_id)
    if job.kind != "ppo":
        raise ValidationError(
            f"job {job_id!r} is a {job.kind} job, not a policy; pass the id of a PPO job "
            "(GET /v1/jobs?kind=ppo&state=succeeded lists them)"
        )
    if job.state != "succeeded" or job.artifact is None:
        raise PolicyNotReadyError(
            f"job {job_id!r} is {job.state}; a policy can be used once its job has succeeded"
        )
    return job


def policy_folder(job: Job) -> Path:
    """The job's run folder, unpacked once under ``<RESONANCE_HOME>/policies/<job id>``."""
    target = resonance_home() / "policies" / job.id
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        _unpack(job.artifact, target)
    return target
