"""Real English paragraphs with varied HRVs that install offline: stdlib pydoc topics and fortune files."""

from __future__ import annotations

import pydoc_data.topics
import sys
from pathlib import Path


def _fortunes() -> list[str]:
    folder = Path(sys.prefix) / "share" / "games" / "fortune"
    entries: list[str] = []
    for name in ("fortunes", "murphy", "startrek", "zippy", "limerick"):
        path = folder / name
        if path.exists():
            entries += path.read_text(encoding="utf-8", errors="replace").split("\n%\n")
    return entries


def _pydoc() -> list[str]:
    paragraphs: list[str] = []
    for text in pydoc_data.topics.topics.values():
        paragraphs += text.split("\n\n")
    return paragraphs


def paragraphs(limit: int = 400, min_words: int = 25, max_words: int = 140) -> list[str]:
    """Up to ``limit`` distinct prose paragraphs of ``min_words``-``max_words`` words, interleaving sources."""
    seen: set[str] = set()
    sources = [_pydoc(), _fortunes()]
    result: list[str] = []
    for group in zip(*sources):
        for raw in group:
            text = " ".join(raw.split())
            words = len(text.split())
            if not min_words <= words <= max_words or text in seen:
                continue
            letters = sum(c.isalpha() or c.isspace() for c in text) / len(text)
            if letters < 0.85 or ">>>" in text or "::" in text:
                continue
            seen.add(text)
            result.append(text)
            if len(result) >= limit:
                return result
    return result
