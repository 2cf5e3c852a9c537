"""Real English text that installs offline, for the benchmarks: ``resonance_os.quality.corpus``
(stdlib ``pydoc_data`` prose and the fortune files, split by document into train and held-out),
plus a sampler of real sentences for the passive-voice benchmark."""

from __future__ import annotations

import random

from resonance_os.quality.corpus import (  # noqa: F401  (re-exported for the bench scripts)
    document_paragraphs,
    fortune_dir,
    fortune_entries,
    mixed_paragraphs,
    paragraphs,
    pydoc_paragraphs,
    sentences,
)


def sentence_sample(seed: int, n_pydoc: int, n_fortunes: int, exclude: set[str] = frozenset()) -> list[str]:
    """Random real sentences of 4-60 words (``n_pydoc`` + ``n_fortunes``), none in ``exclude``."""
    rng = random.Random(seed)
    sample = []
    for pool, n in ((pydoc_paragraphs(), n_pydoc), (fortune_entries(), n_fortunes)):
        candidates = sorted({s for s in sentences(pool) if 4 <= len(s.split()) <= 60} - set(exclude))
        sample += rng.sample(candidates, n)
    return sample
