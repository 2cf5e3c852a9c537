"""Checkpoint files and ``tinker://`` paths.

``tinker://<model_id>/weights/<name>`` is a training state (adapter weights, AdamW state, LoRA
settings); ``tinker://<model_id>/sampler_weights/<name>`` the adapter alone, in peft's layout
(``adapter_model.safetensors`` + ``adapter_config.json``), so it also loads into peft or the generation
engine. Each is a run folder of the run seam (``rl.run``, docs/runs.md): ``config.json`` (kind
``tinker_lora`` or ``tinker_sampler``, the base model, LoRA settings, seed), ``task.json`` (its
``tinker://`` path and base model) and ``checkpoint/`` (the files), under
``<root>/<tenant id>/<run>/{weights,sampler_weights}/<name>/``, so ``open_run`` reads one and ``list_runs``
lists a run's states. A checkpoint is built in a temporary folder beside its place and renamed into it,
so a crash never leaves a half-written one. Folders written before (the files directly in the folder,
``meta.json`` for the settings) still load.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from resonance_os.api.tinker.errors import UserError
from resonance_os.rl.folders import replace_folder
from resonance_os.rl.run import Run, is_run, open_run

SEGMENTS = {"weights": "training", "sampler_weights": "sampler"}
KIND_SEGMENT = {kind: segment for segment, kind in SEGMENTS.items()}
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
PEFT_PREFIX = "base_model.model."
RUN_KINDS = {"training": "tinker_lora", "sampler": "tinker_sampler"}


@dataclass(frozen=True)
class TinkerPath:
    model_id: str
    kind: str  # "training" or "sampler"
    name: str

    def __str__(self) -> str:
        return f"tinker://{self.model_id}/{KIND_SEGMENT[self.kind]}/{self.name}"


def parse_path(path: str, field: str = "path") -> TinkerPath:
    """A ``tinker://`` path, or a UserError naming ``field``."""
    parts = path[len("tinker://") :].split("/") if path.startswith("tinker://") else []
    if len(parts) != 3 or parts[1] not in SEGMENTS or not parts[0] or not NAME.match(parts[2]):
        raise UserError(
            f"{field}={path!r} is not a checkpoint path; expected tinker://<run id>/weights/<name> "
            "or tinker://<run id>/sampler_weights/<name>"
        )
    return TinkerPath(parts[0], SEGMENTS[parts[1]], parts[2])


def check_name(name: str | None, field: str = "path") -> str:
    if name is None or not NAME.match(name):
        raise UserError(
            f"{field}={name!r}: a checkpoint name is 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return name


def folder_for(root: Path, tenant_id: int, where: TinkerPath) -> Path:
    run = where.model_id.replace(":", "_").replace("/", "_")
    return root / str(tenant_id) / run / KIND_SEGMENT[where.kind] / where.name


def _publish(staging: Path, folder: Path, overwrite: bool) -> None:
    if folder.exists():
        if not overwrite:
            shutil.rmtree(staging, ignore_errors=True)
            raise UserError(
                f"a checkpoint named {folder.name!r} exists; pick another name or pass overwrite=True"
            )
    replace_folder(staging, folder)


def _staging(folder: Path) -> Path:
    folder.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".tmp-{folder.name}-", dir=folder.parent))


def folder_size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def _write_run(folder: Path, where: TinkerPath, meta: dict[str, Any], fill: Any, overwrite: bool) -> int:
    """Build the run folder of checkpoint ``where`` (``fill(checkpoint_folder)`` writes the files) in a
    staging folder, fsync it, and rename it into ``folder``; return its size in bytes."""
    staging = _staging(folder)
    try:
        task = {
            "tinker_path": str(where),
            "base_model": meta["base_model"],
            "base_folder": meta["base_folder"],
        }
        run = Run.create(staging, RUN_KINDS[where.kind], config=meta, task=task)
        run.save_checkpoint(fill)
        for f in staging.rglob("*"):
            if f.is_file():
                with open(f, "rb") as handle:
                    os.fsync(handle.fileno())
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _publish(staging, folder, overwrite)
    return folder_size(folder)


def write_training(
    folder: Path,
    where: TinkerPath,
    adapter: dict[str, torch.Tensor],
    optimizer: dict[str, Any],
    meta: dict[str, Any],
    overwrite: bool,
) -> int:
    """Write a training state (adapter + AdamW state) atomically; return its size in bytes."""

    def fill(files: Path) -> None:
        files.mkdir(parents=True)
        save_file(adapter, str(files / "adapter.safetensors"))
        torch.save(optimizer, files / "optimizer.pt")

    return _write_run(folder, where, meta, fill, overwrite)


def write_sampler(
    folder: Path, where: TinkerPath, adapter: dict[str, torch.Tensor], meta: dict[str, Any], overwrite: bool
) -> int:
    """Write sampler weights (peft layout) atomically; return the size in bytes."""
    lora = meta["lora"]
    peft_config = {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "r": lora["rank"],
        "lora_alpha": lora["alpha"],
        "target_modules": sorted({k.split(".lora_")[0].rsplit(".", 1)[-1] for k in adapter}),
        "lora_dropout": 0.0,
        "bias": "none",
        "base_model_name_or_path": meta["base_folder"],
    }

    def fill(files: Path) -> None:
        files.mkdir(parents=True)
        save_file(
            {PEFT_PREFIX + k: v.contiguous() for k, v in adapter.items()},
            str(files / "adapter_model.safetensors"),
        )
        (files / "adapter_config.json").write_text(json.dumps(peft_config, indent=1))

    return _write_run(folder, where, meta, fill, overwrite)


def _files(folder: Path) -> Path:
    """Where a checkpoint's files are: its run's ``checkpoint/``, or the folder itself (written before)."""
    return open_run(folder).checkpoint if is_run(folder) else folder


def read_meta(folder: Path) -> dict[str, Any]:
    """The checkpoint's settings: ``model_id``, ``base_model``, ``base_folder``, ``seed``, ``lora``."""
    if is_run(folder):
        return open_run(folder).config
    return json.loads((folder / "meta.json").read_text())


def read_adapter(folder: Path) -> dict[str, torch.Tensor]:
    """The adapter weights of a training state or sampler checkpoint, in LoraSlots' key names."""
    files = _files(folder)
    if (files / "adapter.safetensors").is_file():
        return load_file(str(files / "adapter.safetensors"))
    weights = load_file(str(files / "adapter_model.safetensors"))
    return {k[len(PEFT_PREFIX) :]: v for k, v in weights.items()}


def read_optimizer(folder: Path) -> dict[str, Any]:
    return torch.load(_files(folder) / "optimizer.pt", weights_only=True)
