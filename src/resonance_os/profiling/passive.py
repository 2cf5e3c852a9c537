"""Passive voice by rule: a be- or get-form, up to three adverbs, then a past participle.

"The file was quickly deleted", "it has been shown", "they got fired", "can be overridden". Past
participles come from lemminflect's inflection table (plus an ``-ed`` fallback for words it does not
know, except ``un-...-ed`` forms, which are nearly always adjectives: "unlimited"). A hyphenated
word counts only with a verb prefix ("re-raised", "co-authored"; not "bow-legged"). Not passive: a
short list of stative participles read as adjectives ("I am tired", "she was interested",
``data/passive_exceptions.txt``), ``-ed`` adjectives ("naked"), and "been", "being", "got" after a
be-form ("it's been fine"). Inverted questions ("Was the door opened?") are
not detected. ``benchmarks/bench_passive.py`` compares this rule with spaCy's dependency parse.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from resonance_os.core.text import clean_text, split_sentences
from resonance_os.profiling.lexicons import (
    FLAG_ADVERB,
    FLAG_BE,
    FLAG_GET,
    FLAG_NOT_PARTICIPLE,
    FLAG_PARTICIPLE,
    get_lexicon,
)

MAX_ADVERBS = 3
"""Adverbs allowed between the auxiliary and the participle ("was not always properly closed")."""


_VERB_PREFIXES = frozenset("re pre co de mis over under self".split())
"""Prefixes whose hyphenated forms are still verbs: "re-raised", "co-authored", "pre-computed"."""


def _is_participle(word: str, flag: int, flags_of: Callable[[str, int], int]) -> bool:
    if flag & FLAG_NOT_PARTICIPLE:
        return False
    if flag & FLAG_PARTICIPLE:
        return True
    if "-" in word:
        prefix, _, rest = word.rpartition("-")
        return prefix in _VERB_PREFIXES and bool(flags_of(rest, 0) & FLAG_PARTICIPLE)
    return len(word) > 4 and word.endswith("ed") and not word.startswith("un") and not flag & FLAG_BE


def find_passives(lowers: list[str], flags: list[int]) -> list[tuple[int, int]]:
    """``(auxiliary index, participle index)`` of each passive in one sentence's lower-cased words."""
    found: list[tuple[int, int]] = []
    flags_of = get_lexicon().flags.get
    n = len(lowers)
    for i in range(n - 1):
        if not flags[i] & (FLAG_BE | FLAG_GET):
            continue
        j = i + 1
        while (
            j < n
            and j - i <= MAX_ADVERBS
            and (flags[j] & FLAG_ADVERB or (lowers[j].endswith("ly") and not flags[j] & FLAG_PARTICIPLE))
        ):
            j += 1
        if j < n and _is_participle(lowers[j], flags[j], flags_of):
            found.append((i, j))
    return found


@dataclass(frozen=True)
class PassiveMatch:
    """One passive in a text: the words from the auxiliary to the participle, with character offsets."""

    phrase: str
    start: int
    """Offset of the auxiliary in the text."""
    participle_start: int
    """Offset of the past participle in the text."""
    end: int


def detect_passives(text: str) -> list[PassiveMatch]:
    """Every passive in ``text`` (any length), with offsets into ``text``."""
    flags_of = get_lexicon().flags.get
    matches: list[PassiveMatch] = []
    for sentence in split_sentences(clean_text(text)):
        lowers = sentence.lowers
        spans = sentence.word_spans()
        for aux, participle in find_passives(lowers, [flags_of(w, 0) for w in lowers]):
            start, end = spans[aux][0], spans[participle][1]
            matches.append(PassiveMatch(text[start:end], start, spans[participle][0], end))
    return matches
