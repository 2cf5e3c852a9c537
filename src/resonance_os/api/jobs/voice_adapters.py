"""A tenant's voice adapters through the API: trained as a job, used by ``/v1/generate``, served by name.

``POST /v1/profiles/{name}/adapter`` (``api.routes.voice_adapters``) stores the tenant's paragraphs as
an item (source ``corpus``, counted in its storage quota) and queues a job of kind
:data:`VOICE_ADAPTER_KIND`. A job worker runs :func:`train_voice_adapter_job`: SFT on the paragraphs
nearest the profile (a tenth of them held out; SFT keeps the weights that read those best), then
HR-GRPO toward it (``evolution.voice_adapters``, as ``resonance profiles
from-corpus --adapter``), on the server's SmolLM2 (``RESONANCE_CACHE``). The finished adapter is:

- charged to the tenant's storage quota (one row and its bytes; a retrained adapter's predecessor is
  given back), and the job fails naming the quota when it does not fit, with nothing installed;
- installed where ``/v1/generate`` looks for the profile's adapter
  (``generation.voice_adapter.adapter_dir`` of the server's database), replacing an earlier one at once;
- published in the tenant's runs folder as ``voice-adapters/<name>`` (hard links, no second copy where
  the file system allows), so ``POST /v1/adapters {"name", "path": "voice-adapters/<name>"}`` serves it
  on the OpenAI-compatible routes.

A worker that dies starts the training again from the start (the job is queued again; no checkpoint:
a SmolLM2 adapter takes 10-15 minutes on 2 cores).
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from resonance_os.api.jobs.report import JobReport, TrainingResult
from resonance_os.api.persistence.db import Database, Item
from resonance_os.api.persistence.quotas import StorageQuota, charge, release
from resonance_os.core.errors import NotFoundError
from resonance_os.rl.folders import replace_folder

VOICE_ADAPTER_KIND = "voice_adapter"
VOICE_ADAPTER_TRAINER = "voice_adapter"
"""The name of :func:`train_voice_adapter_job` in ``api.jobs.trainers``."""
CORPUS_SOURCE = "corpus"
"""``Item.source`` of the paragraphs an adapter is trained on."""
RUNS_SUBFOLDER = "voice-adapters"
"""Where a trained adapter is published in the tenant's runs folder (for ``POST /v1/adapters``)."""
BASE_MODEL = "smollm2"


def folder_bytes(folder: Path) -> int:
    """The bytes of the files in ``folder`` (0 when it does not exist)."""
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file()) if folder.is_dir() else 0


def served_folder(tenant: str, name: str) -> Path:
    """``<runs>/<tenant>/voice-adapters/<name>``: the published copy ``POST /v1/adapters`` reads
    (``RESONANCE_OPENAI_RUNS``, default ``$RESONANCE_HOME/runs``)."""
    from resonance_os.api.openai.serving import ServingSettings

    return ServingSettings.from_env().runs / tenant / RUNS_SUBFOLDER / name


def profile_adapter_dir(db: Database, tenant: str, name: str) -> Path:
    """Where ``/v1/generate`` finds the adapter of the tenant's profile ``name``."""
    from resonance_os.generation.voice_adapter import adapter_dir

    return adapter_dir(f"{tenant}/{name}", db.url)


def _replace_folder(staged: Path, target: Path, link: bool = False) -> None:
    """Put ``staged`` at ``target`` (moved, or with ``link`` hard-linked file by file, copied where
    links are refused), replacing what was there in one rename."""
    target.parent.mkdir(parents=True, exist_ok=True)
    incoming = target.parent / f".{target.name}.new-{uuid.uuid4().hex[:8]}"
    if link:
        shutil.copytree(staged, incoming, copy_function=_link_or_copy)
    else:
        shutil.move(str(staged), incoming)
    replace_folder(incoming, target)


def _link_or_copy(source: str, destination: str) -> None:
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)


def remove_adapter(db: Database, tenant_id: int, tenant: str, name: str) -> None:
    """Delete the profile's adapter and its published copy, and give its bytes back to the quota."""
    folder = profile_adapter_dir(db, tenant, name)
    stored = folder_bytes(folder)
    if not stored:
        return
    shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(served_folder(tenant, name), ignore_errors=True)
    release(db, tenant_id, 1, stored)


def _corpus(db: Database, tenant_id: int, item_id: str) -> str:
    with db.read() as session:
        text = session.scalar(
            sa.select(Item.text).where(
                Item.id == item_id, Item.tenant_id == tenant_id, Item.source == CORPUS_SOURCE
            )
        )
    if text is None:
        raise NotFoundError(f"the paragraphs of this job (item {item_id!r}) are gone; send them again")
    return text


def train_voice_adapter_job(params: dict, report: JobReport) -> TrainingResult:
    """Train the voice adapter of ``params["tenant"]/params["profile"]`` (runs in a job worker).

    params: ``tenant``, ``profile``, ``target_hrv`` (the profile's vector when the job was queued),
    ``corpus_item`` (the item holding the paragraphs), ``sft_steps``, ``grpo_steps``, ``seed``. Progress
    is the steps done of ``sft_steps + grpo_steps``; the learning curve has a point per step
    (``timesteps``: steps done; the step's metrics prefixed ``sft_`` or ``grpo_``)."""
    from dataclasses import replace

    from resonance_os.api.settings import Settings
    from resonance_os.evolution.voice_adapters import (
        VoiceTraining,
        save_voice_adapter,
        split_paragraphs,
        split_validation,
        train_voice_adapter,
        voice_policy,
        writer_candidates,
    )

    tenant, name = params["tenant"], params["profile"]
    target = [float(v) for v in params["target_hrv"]]
    candidates, validation = split_validation(
        writer_candidates(split_paragraphs(_corpus(report.db, report.tenant_id, params["corpus_item"])))
    )
    settings = replace(
        VoiceTraining(keep=min(VoiceTraining.keep, len(candidates)), seed=int(params["seed"])),
        sft_steps=int(params["sft_steps"]),
        grpo_steps=int(params["grpo_steps"]),
    )
    total = settings.sft_steps + settings.grpo_steps
    curve: list[dict[str, Any]] = []

    def on_step(stage: str, step: int, row: dict[str, Any]) -> None:
        done = step if stage == "sft" else settings.sft_steps + step
        point = {"timesteps": done, **{f"{stage}_{k}": v for k, v in row.items() if k != "timesteps"}}
        curve.append(point)
        report.progress(done / total, point, curve=curve, force=done == total)

    policy, summary = train_voice_adapter(
        target, candidates, validation=validation, settings=settings, policy=voice_policy(base=BASE_MODEL),
        on_step=on_step,
    )  # fmt: skip
    staged = report.work_dir / "adapter"
    shutil.rmtree(staged, ignore_errors=True)
    save_voice_adapter(policy, staged, target, source=f"{tenant}/{name}", base=BASE_MODEL, summary=summary)
    return TrainingResult(metrics=_install(report, staged, tenant, name, summary, Settings.from_env()))


def _install(report: JobReport, staged: Path, tenant: str, name: str, summary: dict, settings) -> dict:
    """Charge the new adapter to the quota (the old one's bytes given back), install and publish it."""
    folder = profile_adapter_dir(report.db, tenant, name)
    new_bytes, old_bytes = folder_bytes(staged), folder_bytes(folder)
    quota = StorageQuota(rows=settings.quota_rows, bytes=settings.quota_bytes)
    with report.db.write() as session:
        charge(session, report.tenant_id, quota, 0 if old_bytes else 1, max(new_bytes - old_bytes, 0))
    if old_bytes > new_bytes:
        release(report.db, report.tenant_id, 0, old_bytes - new_bytes)
    _replace_folder(staged, folder)
    _replace_folder(folder, served_folder(tenant, name), link=True)
    return {
        "adapter": f"{tenant}/{name}",
        "served_path": f"{RUNS_SUBFOLDER}/{name}",
        "bytes": new_bytes,
        "sft_paragraphs": summary["sft_paragraphs"],
        "sft_mean_gap": summary["sft_mean_gap"],
        "sft_loss_first": summary["sft_loss"][0] if summary["sft_loss"] else None,
        "sft_loss_last": summary["sft_loss"][-1] if summary["sft_loss"] else None,
        "sft_kept_step": summary.get("sft_kept_step"),
        "grpo_steps": summary.get("grpo_steps", 0),
    }
