"""Word units shared by the topic and repetition terms: content words and a light stemmer.

Sentences and words come from the extractor's own splitter (``core.text``), so every
quality term sees the same units as the HRV. A *content word* is an alphabetic word of 3+ letters
that is not on scikit-learn's English stop-word list (Glasgow IR group's list). ``stem`` folds the
regular inflections (plural -s/-es/-ies, -ing, -ed, -ly) so "gardens" matches "garden" and
"commuting" matches "commute" closely enough for overlap counts; it is not a linguistic lemmatiser.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from resonance_os.core.text import split_sentences

_SUFFIXES = ("ies", "ing", "ed", "es", "ly", "s")


@cache
def stem(word: str) -> str:
    """``word`` (lower case) without one regular inflectional suffix and a final silent "e", keeping
    3+ letters: commute, commutes, commuting and commuted all give "commut"."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
            if suffix in ("ing", "ed") and len(word) > 3 and word[-1] == word[-2] and word[-1] not in "ls":
                word = word[:-1]  # running -> run, stopped -> stop (but not falling, passed)
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


@cache
def is_content(word: str) -> bool:
    """An alphabetic word of 3+ letters that is not a stop word."""
    return len(word) >= 3 and word.isalpha() and word not in ENGLISH_STOP_WORDS


def content_stems(words: list[str]) -> list[str]:
    """Stems of the content words among lower-cased ``words``, in order."""
    return [stem(w) for w in words if is_content(w)]


def sentence_words(text: str) -> list[list[str]]:
    """Lower-cased words of each sentence of ``text`` (the HRV extractor's splitter)."""
    return [s.lowers for s in split_sentences(text)]


def word_ngrams(words: Sequence[str], n: int) -> list[tuple[str, ...]]:
    """The ``n``-word windows of ``words``, in order (repeats kept)."""
    return [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
