"""The language models HR-GRPO puts adapters on: the cached SmolLM2 or a local Hugging Face folder."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from resonance_os.core.errors import ValidationError

SMOLLM2 = "smollm2"


def base_model(name: str = SMOLLM2, device: str | None = None) -> tuple[Any, Any]:
    """``(tokenizer, model)`` to put adapters on: a private copy of the cached SmolLM2-135M-Instruct
    (``"smollm2"``; the shared one serves the quality models and the writer), or a local Hugging Face
    folder (never downloads)."""
    if name == SMOLLM2:
        from resonance_os.quality.reference_lm import default_cache_dir, load_model

        tokenizer, model = load_model(str(default_cache_dir()))
        tokenizer, model = copy.deepcopy(tokenizer), copy.deepcopy(model)
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        folder = Path(name)
        if not (folder / "config.json").is_file():
            raise ValidationError(
                f"base model {name!r} is neither 'smollm2' nor a local Hugging Face folder (config.json missing)"
            )
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=True)
    if device is not None:
        model.to(device)
    return tokenizer, model
