"""Is a sample text long enough to measure a voice? The warning a profile made from text carries.

A voice's HRV is a set of rates (metaphors per sentence, share of passive clauses, spread of sentence
lengths...); a few words hold too few events to estimate them. On the pydoc corpus
(``benchmarks/bench_sample_length.py``) the first N words of a 1,500-word stretch measure, as a mean
|gap| per dimension from the whole stretch: 5 words 0.18, 50 words 0.10, 150 words 0.072, 300 words
0.053 (the writer counts 0.05 as on target). Below ``MIN_SAMPLE_WORDS`` a profile describes the sample
more than the writer, so it is saved with a warning, not refused.
"""

from __future__ import annotations

MIN_SAMPLE_WORDS = 150
"""Fewest words of a sample text that measure a voice within 0.072 per dimension (median)."""


def sample_warning(text: str) -> str | None:
    """A sentence saying why ``text`` is too short to measure a voice, or None when it is long enough."""
    words = len(text.split())
    if words >= MIN_SAMPLE_WORDS:
        return None
    return (
        f"The sample has {words} word{'s' if words != 1 else ''}; a voice needs at least "
        f"{MIN_SAMPLE_WORDS} to measure. Its rates (metaphors per sentence, passive clauses, the spread "
        "of sentence lengths) rest on too few sentences, so this profile describes the sample more than "
        "the writer. Add more of the writer's text for a profile you can rely on."
    )
