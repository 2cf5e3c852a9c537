"""Sentence sentiment with VADER's lexicon and its main rules, on tokens the extractor already has.

Hutto & Gilbert (2014), "VADER: A Parsimonious Rule-based Model for Sentiment Analysis of Social Media
Text" (ICWSM). We reuse the ``vaderSentiment`` package's lexicon and constants and re-apply its rules
to our tokens instead of calling ``polarity_scores`` (which re-tokenises and rebuilds lower-cased lists
per word): degree adverbs within three words (damped 0.95 / 0.9 with distance), negation within three
words (x -0.74, with "never so/this" and "without doubt"), "no" before a sentiment word, ALL-CAPS
emphasis when only some words are capitalised, "least", "but" (x0.5 before, x1.5 after), multi-word
degree modifiers ("kind of") and exclamation/question-mark emphasis. Not reproduced: emoji descriptions
and VADER's table of special-case idioms ("the shit", "kiss of death"). One deliberate change: "like" as
a preposition ("ran like a deer", "languages like the C family") carries no sentiment, while VADER
scores it +2.0 everywhere; "I like the idea" keeps it. ``tests/profiling/test_vader_agreement.py`` checks the result against ``polarity_scores``.
"""

from __future__ import annotations

import math

from vaderSentiment import vaderSentiment as _vader

from resonance_os.profiling.lexicons import (
    FLAG_AUX,
    FLAG_DETERMINER,
    FLAG_NEGATION,
    FLAG_PERSON,
    FLAG_SUBJECT,
    FLAG_VADER,
    FLAG_VADER_BOOSTER,
    Lexicon,
)

N_SCALAR = _vader.N_SCALAR
C_INCR = _vader.C_INCR
_SCORED = FLAG_VADER | FLAG_VADER_BOOSTER
_LIKE_SUBJECTS = FLAG_SUBJECT | FLAG_PERSON | FLAG_AUX
_PHRASE_BOOSTERS = {k: v for k, v in _vader.BOOSTER_DICT.items() if " " in k}
"""VADER's multi-word degree modifiers ("kind of", "sort of", "just enough")."""
_PHRASE_BOOSTER_ENDS = frozenset(k.rsplit(" ", 1)[1] for k in _PHRASE_BOOSTERS)
ALPHA = 15.0
"""VADER's normalisation constant: compound = s / sqrt(s^2 + 15)."""


def _negated(word: str, flag: int) -> bool:
    return bool(flag & FLAG_NEGATION) or "n't" in word


def score_sentence(
    words: list[str],
    lowers: list[str],
    flags: list[int],
    exclamations: int,
    questions: int,
    lexicon: Lexicon,
) -> tuple[float, list[tuple[int, float]]]:
    """VADER compound of one sentence in [-1, 1], and ``(word index, adjusted valence)`` per sentiment word.

    ``words`` as written (for ALL-CAPS emphasis; pass ``lowers`` itself when the text has no ALL-CAPS
    word), ``lowers``/``flags`` the lower-cased words and their lexicon flags,
    ``exclamations``/``questions`` the counts of ``!`` and ``?`` in the sentence.
    """
    valence_of = lexicon.valence
    scored = [i for i, flag in enumerate(flags) if flag & _SCORED == FLAG_VADER]  # VADER skips degree adverbs
    if not scored:
        return 0.0, []
    modifiers = lexicon.sentiment_modifiers
    no_capitals = words is lowers or not any(w.isupper() for w in words)
    if no_capitals and modifiers.isdisjoint(lowers):
        # No word can modify another's valence: the sentence sum is the plain sum of valences.
        hits = [(i, valence_of[lowers[i]]) for i in scored]
        return _compound(sum(value for _, value in hits), exclamations, questions), hits
    cap_diff = False
    if not no_capitals:
        capitals = sum(1 for w in words if w.isupper())
        cap_diff = 0 < len(words) - capitals < len(words)
    but = lowers.index("but") if "but" in lowers else -1
    hits = []
    total = 0.0
    for i in scored:
        low = lowers[i]
        if not cap_diff and low not in modifiers and modifiers.isdisjoint(lowers[i - 3 if i > 3 else 0 : i]):
            value = valence_of[low]  # no modifier within VADER's three-word window
        else:
            value = _rule_valence(i, words, lowers, flags, cap_diff, lexicon)
        if but >= 0:
            if i < but:
                value *= 0.5
            elif i > but:
                value *= 1.5
        if value:
            hits.append((i, value))
            total += value
    return _compound(total, exclamations, questions), hits


def _is_preposition_like(i: int, lowers: list[str], flags: list[int]) -> bool:
    """ "like" before a determiner and not after a subject or auxiliary: "ran like a deer", "things like
    the list" (a preposition, no sentiment), unlike "I like the idea" (a verb, positive)."""
    if i + 1 >= len(lowers) or not flags[i + 1] & FLAG_DETERMINER:
        return False
    return i == 0 or not (flags[i - 1] & _LIKE_SUBJECTS or "n't" in lowers[i - 1])


def _rule_valence(
    i: int, words: list[str], lowers: list[str], flags: list[int], cap_diff: bool, lexicon: Lexicon
) -> float:
    """Valence of sentiment word ``i`` after VADER's rules for "no", capitals, degree adverbs, negation
    and "least" (the order and constants of ``SentimentIntensityAnalyzer.sentiment_valence``)."""
    n = len(lowers)
    low = lowers[i]
    if low == "kind" and i + 1 < n and lowers[i + 1] == "of":
        return 0.0
    if low == "like" and _is_preposition_like(i, lowers, flags):
        return 0.0
    base = lexicon.valence[low]
    value = base
    if low == "no" and i + 1 < n and flags[i + 1] & FLAG_VADER:
        value = 0.0
    if (
        (i > 0 and lowers[i - 1] == "no")
        or (i > 1 and lowers[i - 2] == "no")
        or (i > 2 and lowers[i - 3] == "no" and lowers[i - 1] in ("or", "nor"))
    ):
        value = base * N_SCALAR
    if cap_diff and words[i].isupper():
        value += C_INCR if value > 0 else -C_INCR
    for start in range(3):
        j = i - start - 1
        if j < 0:
            break
        if flags[j] & FLAG_VADER:
            continue
        if flags[j] & FLAG_VADER_BOOSTER:
            scalar = lexicon.vader_boosters[lowers[j]]
            if value < 0:
                scalar = -scalar
            if cap_diff and words[j].isupper():
                scalar += C_INCR if value > 0 else -C_INCR
            value += scalar * (1.0, 0.95, 0.9)[start]
        if start == 0:
            if _negated(lowers[j], flags[j]):
                value *= N_SCALAR
        elif start == 1:
            if lowers[i - 2] == "never" and lowers[i - 1] in ("so", "this"):
                value *= 1.25
            elif not (lowers[i - 2] == "without" and lowers[i - 1] == "doubt") and _negated(
                lowers[j], flags[j]
            ):
                value *= N_SCALAR
        else:
            if (lowers[i - 3] == "never" and lowers[i - 2] in ("so", "this")) or lowers[i - 1] in (
                "so",
                "this",
            ):
                value *= 1.25
            elif not (lowers[i - 3] == "without" and "doubt" in (lowers[i - 2], lowers[i - 1])) and _negated(
                lowers[j], flags[j]
            ):
                value *= N_SCALAR
            if lowers[i - 1] in _PHRASE_BOOSTER_ENDS or lowers[i - 2] in _PHRASE_BOOSTER_ENDS:
                for gram in (
                    f"{lowers[i - 3]} {lowers[i - 2]} {lowers[i - 1]}",
                    f"{lowers[i - 3]} {lowers[i - 2]}",
                    f"{lowers[i - 2]} {lowers[i - 1]}",
                ):
                    value += _PHRASE_BOOSTERS.get(gram, 0.0)
    if i > 0 and lowers[i - 1] == "least" and not flags[i - 1] & FLAG_VADER:
        if not (i > 1 and lowers[i - 2] in ("at", "very")):
            value *= N_SCALAR
    return value


def _compound(total: float, exclamations: int, questions: int) -> float:
    """VADER's punctuation emphasis, then its normalisation of the valence sum into [-1, 1]."""
    if total:
        emphasis = min(exclamations, 4) * 0.292
        if questions > 1:
            emphasis += questions * 0.18 if questions <= 3 else 0.96
        total += emphasis if total > 0 else -emphasis
    compound = total / math.sqrt(total * total + ALPHA)
    return max(-1.0, min(1.0, compound))
