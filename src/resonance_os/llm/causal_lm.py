"""What callers that run a Hugging Face causal LM step by step read off the model: the forward's cache
argument and the token ids that end a reply."""

from __future__ import annotations

import inspect
from typing import Any

import torch


def cache_argument(model: torch.nn.Module) -> str:
    """The name ``model.forward`` takes its key/value cache under: ``"cache"`` (transformers 5.x renamed
    it) or ``"past_key_values"``."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def eos_token_ids(model: torch.nn.Module, tokenizer: Any) -> set[int]:
    """Every token id that ends a reply: the tokenizer's end-of-sequence and the model's generation
    config's (an int or a list)."""
    eos: set[int] = set()
    if getattr(tokenizer, "eos_token_id", None) is not None:
        eos.add(int(tokenizer.eos_token_id))
    extra = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(extra, int):
        eos.add(extra)
    elif isinstance(extra, (list, tuple)):
        eos.update(int(e) for e in extra)
    return eos
