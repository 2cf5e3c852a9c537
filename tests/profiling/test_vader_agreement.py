"""Our single-pass sentiment scorer against the reference: vaderSentiment's ``polarity_scores``."""

from __future__ import annotations

import random
import re
from pydoc_data.topics import topics

import numpy as np
import pytest
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from resonance_os.core.text import clean_text, split_sentences
from resonance_os.profiling.lexicons import get_lexicon
from resonance_os.profiling.sentiment import score_sentence

EVERYDAY = [
    "VADER is smart, handsome, and funny.",
    "VADER is very smart, handsome, and funny!",
    "VADER is VERY SMART, handsome, and FUNNY.",
    "VADER is not smart, handsome, nor funny.",
    "The book was good.",
    "At least it isn't a horrible book.",
    "The book was only kind of good.",
    "The plot was good, but the characters are uncompelling and the dialog is not great.",
    "Today SUX!",
    "Not bad at all",
    "Sentiment analysis has never been this good!",
    "Roger Dodger is one of the least compelling variations on this theme.",
    "I am so happy that nobody got hurt in the accident.",
    "There is no hope left for this project.",
    "Why would anyone do that???",
]


def _ours(text: str) -> list[float]:
    lexicon = get_lexicon()
    scores = []
    for s in split_sentences(clean_text(text)):
        lowers = [w.lower() for w in s.words]
        flags = [lexicon.flags.get(w, 0) for w in lowers]
        scores.append(score_sentence(s.words, lowers, flags, s.exclamations, s.questions, lexicon)[0])
    return scores


def _real_sentences(n: int, seed: int) -> list[str]:
    """Prose sentences of the Python reference (stdlib pydoc_data), sampled with a fixed seed."""
    pool = []
    for topic in sorted(topics):
        for block in re.split(r"\n\s*\n", topics[topic]):
            if block.startswith((" ", "\t")) or "::=" in block:
                continue
            text = " ".join(block.split())
            pool += [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", text) if 5 <= len(s.split()) <= 40]
    return random.Random(seed).sample(sorted(set(pool)), n)


@pytest.fixture(scope="module")
def vader() -> SentimentIntensityAnalyzer:
    return SentimentIntensityAnalyzer()


@pytest.mark.parametrize("sentence", EVERYDAY)
def test_rule_examples_match_vader(vader: SentimentIntensityAnalyzer, sentence: str) -> None:
    (ours,) = _ours(sentence)
    assert ours == pytest.approx(vader.polarity_scores(sentence)["compound"], abs=0.02)


def test_real_sentences_correlate_with_vader(vader: SentimentIntensityAnalyzer) -> None:
    sentences = [s for s in _real_sentences(600, seed=0) if len(_ours(s)) == 1]
    ours = np.array([_ours(s)[0] for s in sentences])
    ref = np.array([vader.polarity_scores(s)["compound"] for s in sentences])
    assert len(sentences) > 500
    assert np.std(ref) > 0.1  # the sample carries sentiment, so the correlation means something
    assert np.corrcoef(ours, ref)[0, 1] >= 0.95
    assert np.mean(np.abs(ours - ref) < 0.05) >= 0.9


def test_like_as_preposition_carries_no_sentiment() -> None:
    """Our one deliberate change from VADER: "like" before a determiner, not after a subject."""
    assert _ours("He ran like a deer.") == [0.0]
    assert _ours("Languages like the C family are fast.") == [0.0]
    assert _ours("I like the idea.")[0] > 0.3
    assert _ours("I don't like the idea.")[0] < -0.2
