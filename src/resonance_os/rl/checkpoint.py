"""Atomic, weights-only checkpoint folders.

Layout of a checkpoint folder::

    weights/<name>.safetensors   flat tensor dicts (network weights), one file per module
    state/<name>.pt              other state dicts (optimizer, normalisers) saved with torch.save and
                                 loaded with weights_only=True, so loading never unpickles objects
    config.json                  the algorithm's hyperparameters (JSON round-trip of its dataclass)
    metadata.json                format version, library version, algorithm, timesteps, metrics

The folder is written under a temporary name beside the target and renamed into place, so a crash
never leaves a half-written checkpoint; an existing checkpoint is replaced only after the new one
is complete.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from dataclasses import dataclass, field
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from resonance_os.rl.errors import CheckpointError
from resonance_os.rl.folders import replace_folder

FORMAT_VERSION = 1


def library_version() -> str:
    """The installed ``resonance-os`` version, or ``"unknown"`` when running from a bare source tree."""
    try:
        return importlib_metadata.version("resonance-os")
    except importlib_metadata.PackageNotFoundError:
        return "unknown"


@dataclass
class Checkpoint:
    """What a checkpoint folder holds once loaded."""

    weights: dict[str, dict[str, torch.Tensor]]
    states: dict[str, Any]
    config: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict)


def save_checkpoint(
    path: str | os.PathLike[str],
    *,
    weights: dict[str, dict[str, torch.Tensor]],
    config: dict[str, Any],
    metadata: dict[str, Any] | None = None,
    states: dict[str, Any] | None = None,
) -> Path:
    """Write a checkpoint folder at ``path`` atomically and return its path.

    ``weights`` maps a module name to its ``state_dict()``; ``states`` maps a name to any state dict
    made of tensors, numbers, strings, lists and dicts (an optimizer's, a normaliser's).
    """
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CheckpointError(f"cannot create the folder {target.parent} for a checkpoint: {exc}") from exc
    tmp = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        (tmp / "weights").mkdir(parents=True)
        (tmp / "state").mkdir()
        for name, tensors in weights.items():
            flat = {k: v.detach().cpu().contiguous() for k, v in tensors.items()}
            save_file(flat, str(tmp / "weights" / f"{name}.safetensors"))
        for name, state in (states or {}).items():
            torch.save(state, tmp / "state" / f"{name}.pt")
        meta = {
            "format_version": FORMAT_VERSION,
            "library_version": library_version(),
            "torch_version": torch.__version__,
            "saved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **(metadata or {}),
        }
        (tmp / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True))
        (tmp / "metadata.json").write_text(json.dumps(meta, indent=2, sort_keys=True, default=float))
        replace_folder(tmp, target)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise CheckpointError(f"cannot write the checkpoint {target}: {exc}; choose a writable path") from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def load_checkpoint(path: str | os.PathLike[str], *, expected_algorithm: str | None = None) -> Checkpoint:
    """Read a checkpoint folder written by :func:`save_checkpoint`, never unpickling objects.

    Raises ``CheckpointError`` naming the problem when the folder is missing, a file is corrupt,
    the format version is newer than this library understands, or the algorithm differs.
    """
    root = Path(path)
    if not root.is_dir():
        raise CheckpointError(f"no checkpoint folder at {root}; pass the folder that .save() wrote")
    metadata = _read_json(root / "metadata.json")
    config = _read_json(root / "config.json")
    version = metadata.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise CheckpointError(
            f"checkpoint {root} has format version {version!r}; this library reads versions <= "
            f"{FORMAT_VERSION}: upgrade resonance-os (it was written by {metadata.get('library_version')})"
        )
    if expected_algorithm and metadata.get("algorithm") not in (None, expected_algorithm):
        raise CheckpointError(
            f"checkpoint {root} holds a {metadata.get('algorithm')} model, not {expected_algorithm}; "
            f"load it with {metadata.get('algorithm')}.load"
        )
    weights: dict[str, dict[str, torch.Tensor]] = {}
    for file in sorted((root / "weights").glob("*.safetensors")):
        try:
            weights[file.stem] = load_file(str(file))
        except (SafetensorError, OSError, ValueError) as exc:
            raise CheckpointError(f"corrupt weights file {file}: {exc}; re-save the checkpoint") from exc
    states: dict[str, Any] = {}
    for file in sorted((root / "state").glob("*.pt")):
        try:
            states[file.stem] = torch.load(file, map_location="cpu", weights_only=True)
        except Exception as exc:  # torch raises several types for corrupt or unsafe files
            raise CheckpointError(
                f"corrupt or unsafe state file {file}: {exc}; re-save the checkpoint"
            ) from exc
    return Checkpoint(weights=weights, states=states, config=config, metadata=metadata)


def _read_json(file: Path) -> dict[str, Any]:
    try:
        data = json.loads(file.read_text())
    except FileNotFoundError:
        raise CheckpointError(
            f"checkpoint file {file} is missing; the folder is not a complete checkpoint"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(
            f"checkpoint file {file} is unreadable ({exc}); re-save the checkpoint"
        ) from exc
    if not isinstance(data, dict):
        raise CheckpointError(f"checkpoint file {file} must hold a JSON object")
    return data
