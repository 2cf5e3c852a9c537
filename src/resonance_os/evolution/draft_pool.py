"""First drafts for HRWritingEnv: a shipped pool written by the local language model, or your own.

The shipped pool (``data/draft_pool.jsonl.gz``, built by ``scripts/build_draft_pool.py``; provenance
in ``data/SOURCES.md``) holds paragraphs SmolLM2-135M-Instruct wrote with the writer's own prompts,
so the env, its tests and CI revise real model drafts without loading the model. Its first line is
a header (the model); every other line is one draft: ``prompt``, ``split`` (``train`` for the
training prompts, ``heldout`` for prompts never used in training or tuning), ``role``, ``profile``
(the built-in profile whose style notes the prompt carried) and ``text``.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path

from resonance_os.core.errors import ValidationError
from resonance_os.generation.topics import validate_prompt

POOL_FILE = "draft_pool.jsonl.gz"
SPLITS = ("train", "heldout", "all")


@dataclass(frozen=True)
class Draft:
    """One first draft: the prompt it answers and its text (``split``/``profile`` as in the pool)."""

    prompt: str
    text: str
    split: str = "train"
    profile: str = ""


def shipped_pool_path() -> Path:
    """Where the shipped pool lives inside the package."""
    return Path(str(files("resonance_os.evolution").joinpath("data", POOL_FILE)))


@cache
def _read_pool(path: str) -> tuple[Draft, ...]:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            lines = [json.loads(line) for line in handle if line.strip()]
    except (OSError, EOFError, json.JSONDecodeError) as exc:
        raise ValidationError(
            f"draft pool {path} is unreadable ({exc}); pass a gzip JSON-lines file "
            "written by scripts/build_draft_pool.py"
        ) from None
    rows = [row for row in lines if "text" in row]
    if not rows or any(not isinstance(row.get("prompt"), str) or not row["text"].strip() for row in rows):
        raise ValidationError(f"draft pool {path} has no drafts, or a draft without prompt or text")
    return tuple(
        Draft(row["prompt"], row["text"], row.get("split", "train"), row.get("profile", "")) for row in rows
    )


def load_drafts(
    source: str | os.PathLike[str] | Sequence[object] | None = None, split: str = "train"
) -> list[Draft]:
    """Drafts of ``split`` (``train``, ``heldout`` or ``all``) from ``source``.

    ``source`` is ``None`` (the shipped pool), a pool file, or a sequence of ``Draft`` s or
    ``(prompt, text)`` pairs (all used, whatever ``split``).
    """
    if split not in SPLITS:
        raise ValidationError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    if source is None or isinstance(source, (str, os.PathLike)):
        path = shipped_pool_path() if source is None else Path(source)
        if not path.is_file():
            raise ValidationError(
                f"draft pool {path} does not exist; build it with scripts/build_draft_pool.py"
            )
        drafts = [d for d in _read_pool(str(path)) if split == "all" or d.split == split]
        if not drafts:
            raise ValidationError(f"draft pool {path} has no {split!r} drafts")
        return drafts
    drafts = []
    for item in source:
        if isinstance(item, Draft):
            drafts.append(item)
            continue
        if not (isinstance(item, (tuple, list)) and len(item) == 2 and all(isinstance(v, str) for v in item)):
            raise ValidationError(f"drafts must be Draft objects or (prompt, text) pairs, got {item!r}")
        if not item[1].strip():
            raise ValidationError(f"draft for prompt {item[0]!r} is empty; every draft needs text")
        drafts.append(Draft(validate_prompt(item[0]), item[1].strip()))
    if not drafts:
        raise ValidationError("drafts must hold at least one (prompt, text) pair")
    return drafts
