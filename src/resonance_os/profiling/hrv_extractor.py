"""Text -> Human Resonance Vector: 8 floats in [0, 1] in ``HRV_DIMENSIONS`` order, with evidence.

>>> from resonance_os.profiling.hrv_extractor import HRVExtractor
>>> hrv = HRVExtractor().extract("The storm broke at dawn. We ran, laughing, to the boats!")
>>> len(hrv)
8

One pass over the text: clean-up and sentence splitting (``sentences``), one lexicon lookup per word
(``lexicons``), VADER-rule sentiment per sentence (``sentiment``), passive detection on the same tokens
(``passive``), unmarked metaphor at the few words that can start one (``metaphor``). Linear in the length of the text. Each dimension's counts, normalisation and meaning
are defined in ``docs/hrv.md``; the formulas are the ``_score_*`` functions below.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import repeat

from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.core.hrv_types import HRVVector
from resonance_os.core.text import Sentence, clean_text, split_sentences
from resonance_os.profiling.lexicons import (
    CLASS_NOUN,
    FLAG_ADVERB,
    FLAG_AROUSAL,
    FLAG_AUX,
    FLAG_BE,
    FLAG_BOOSTER,
    FLAG_COPULA,
    FLAG_CURIOSITY,
    FLAG_DETERMINER,
    FLAG_FIGURATIVE,
    FLAG_FINITE,
    FLAG_FRAME,
    FLAG_GET,
    FLAG_HEDGE,
    FLAG_MOTION,
    FLAG_NEGATION,
    FLAG_NOT_PARTICIPLE,
    FLAG_PAST,
    FLAG_PERSON,
    FLAG_PHRASE,
    FLAG_SIMILE,
    FLAG_SPEECH,
    FLAG_SUBJECT,
    FLAG_TIME,
    FLAG_WH,
    Lexicon,
    get_lexicon,
)
from resonance_os.profiling.metaphor import appositive_metaphor, is_bare_simile, metaphor_at
from resonance_os.profiling.passive import find_passives
from resonance_os.profiling.sentiment import score_sentence

_LISTED = FLAG_HEDGE | FLAG_BOOSTER | FLAG_CURIOSITY | FLAG_TIME | FLAG_FIGURATIVE
_WORD_MARKERS = _LISTED | FLAG_PHRASE | FLAG_PERSON | FLAG_SPEECH | FLAG_FRAME | FLAG_SIMILE | FLAG_AROUSAL
_VERB_MARKERS = FLAG_PAST | FLAG_FINITE | FLAG_SUBJECT
_MARKERS = _WORD_MARKERS | _VERB_MARKERS
_METAPHOR_CUES = FLAG_COPULA | FLAG_MOTION
"""Words where a nominal (copula) or verb metaphor may start."""
_MARKERS_AND_CUES = _MARKERS | _METAPHOR_CUES
_MAY_OPEN_PREDICATE = FLAG_DETERMINER | FLAG_ADVERB | FLAG_NEGATION
"""After a copula, a word with one of these flags, or a noun, may open a predicate noun phrase."""
_CAPITALS = re.compile(r"[A-Z\u00c0-\u00de][A-Z\u00c0-\u00de]")
_VERB_CHAIN = FLAG_AUX | FLAG_BE | FLAG_GET
_NOT_PAST_AFTER = _VERB_CHAIN | FLAG_DETERMINER
_NOT_VERB_AFTER_SUBJECT = _VERB_CHAIN | FLAG_PAST | FLAG_DETERMINER
_SIMILE_DETERMINERS = frozenset("a an the his her my their our your".split())
_NOT_SIMILE_BEFORE = frozenset(
    "i you we they would 'd don't didn't do did to something anything nothing things stuff much more just "
    "really feel felt looks seem seems materials foods animals tools items products languages countries "
    "cities places companies substances ingredients elements".split()
)
_NOT_SIMILE_AS = frozenset("well soon long far much many few little often".split())
_NOT_SIMILE_AFTER_AS = frozenset(
    "possible usual ever necessary needed required before follows expected i you we they it he she".split()
)

_Evidence = dict[str, object] | None
"""What one dimension's ``_score_*`` counted (None when only the value was asked for)."""

MAX_QUOTE = 300
"""Evidence quotes sentences up to this many characters (longer ones end in "…")."""

# Normalisation constants (see docs/hrv.md for what each means).
CV_HALF = 0.5
"""Coefficient of variation of sentence lengths at which sentence_variance is 0.5."""
SENTIMENT_SHARE_FULL = 0.2
"""Share of sentiment-bearing words at which that intensity component is full."""
AROUSAL_SHARE_FULL = 0.06
"""Share of high-arousal cue words at which that intensity component is full."""
CURIOSITY_MARKERS_FULL = 3.0
"""Curiosity markers per 100 words at which that component is full."""
FIGURATIVE_SCALE = 2.0
"""Figurative markers per 100 words at which metaphor_density is 1 - 1/e (about 0.63)."""
PAST_FULL = 0.08
PERSON_FULL = 0.08
TIME_FULL = 0.02
"""Rates per word at which the storytelling components are full (typical of first-person narrative)."""


@dataclass
class HRVAnalysis:
    """The HRV of a text with the evidence behind each dimension.

    ``hrv`` is the 8-float vector in ``HRV_DIMENSIONS`` order; ``evidence[dimension]`` holds what was
    counted for that dimension (words, sentences, rates) so a person can check the score.
    """

    hrv: list[float]
    evidence: dict[str, dict[str, object]]
    n_words: int
    n_sentences: int

    def as_dict(self) -> dict[str, float]:
        """``{dimension: value}`` in ``HRV_DIMENSIONS`` order."""
        return dict(zip(HRV_DIMENSIONS, self.hrv))

    @property
    def vector(self) -> HRVVector:
        """The HRV as a validated, immutable :class:`HRVVector`."""
        return HRVVector(self.hrv)

    def to_dict(self) -> dict[str, object]:
        """JSON-serialisable form: ``{"hrv": {...}, "n_words", "n_sentences", "evidence": {...}}``."""
        return {
            "hrv": self.as_dict(),
            "n_words": self.n_words,
            "n_sentences": self.n_sentences,
            "evidence": self.evidence,
        }


@dataclass
class _Counts:
    """Everything counted in one pass; the ``_score_*`` functions turn it into the 8 dimensions."""

    lengths: list[int] = field(default_factory=list)
    compounds: list[float] = field(default_factory=list)
    positive: list[str] = field(default_factory=list)
    negative: list[str] = field(default_factory=list)
    capitals: list[str] = field(default_factory=list)
    arousal: list[str] = field(default_factory=list)
    exclamatory: list[int] = field(default_factory=list)
    questions: list[int] = field(default_factory=list)
    hedges: list[str] = field(default_factory=list)
    boosters: list[str] = field(default_factory=list)
    curiosity: list[str] = field(default_factory=list)
    figurative: list[str] = field(default_factory=list)
    figure_kinds: list[str] = field(default_factory=list)
    """Construction of each ``figurative`` entry: simile, frame, signal, nominal, appositive, verb."""
    past: list[str] = field(default_factory=list)
    time: list[str] = field(default_factory=list)
    persons: list[str] = field(default_factory=list)
    dialogue: list[int] = field(default_factory=list)
    passives: list[tuple[int, int, int]] = field(default_factory=list)
    """(sentence index, auxiliary word index, participle word index)."""
    verb_groups: int = 0

    @property
    def n_words(self) -> int:
        return sum(self.lengths)


def _count_sentence(s: Sentence, index: int, lexicon: Lexicon, c: _Counts, has_capitals: bool) -> None:
    """Add one sentence's words to the counts; ``has_capitals``: the text has an ALL-CAPS word somewhere."""
    lowers = s.lowers
    n = len(lowers)
    words = s.words if has_capitals else lowers  # as written only where ALL-CAPS emphasis can matter
    flags = list(map(lexicon.flags.get, lowers, repeat(0, n)))
    c.lengths.append(n)
    _count_feeling_and_punctuation(s, index, words, flags, lexicon, c, has_capitals)
    participles = _count_passives(lowers, index, flags, lexicon, c)

    phrases = lexicon.phrases
    covered = -1  # last word index already consumed by a matched phrase
    speech = False
    if (
        n > 3
        and (flags[1] | flags[2] | flags[3]) & FLAG_DETERMINER  # an apposition opens on one of these
        and (figure := appositive_metaphor(s, flags, lexicon))
    ):
        c.figurative.append(figure[1])
        c.figure_kinds.append(figure[0])
    for i, flag in enumerate(flags):
        if not flag & _MARKERS_AND_CUES:
            continue
        if (
            flag & _METAPHOR_CUES
            and _may_open_metaphor(flag, flags, lowers, i, lexicon)
            and (figure := metaphor_at(s, flags, i, lexicon))
        ):
            c.figurative.append(figure[1])
            c.figure_kinds.append(figure[0])
        if flag & _VERB_MARKERS:
            _count_verb(flag, flags, lowers, i, participles, c)
        if not flag & _WORD_MARKERS or i <= covered:
            continue
        low = lowers[i]
        if flag & FLAG_PHRASE and i + 1 < n and (candidates := phrases.get((low, lowers[i + 1]))):
            matched = _match_phrase(lowers, i, candidates)
            if matched is not None:
                length, kind = matched
                _add_marker(c, kind, " ".join(lowers[i : i + length]))
                covered = i + length - 1
                continue
        marker = flag & _LISTED
        if marker:
            _add_marker(c, marker, low)
        if (
            flag & FLAG_FRAME
            and i > 0
            and flags[i - 1] & FLAG_DETERMINER
            and i + 1 < n
            and lowers[i + 1] == "of"
        ):
            c.figurative.append(f"{lowers[i - 1]} {low} of")
            c.figure_kinds.append("frame")
        if flag & FLAG_SIMILE and (
            _is_simile(lowers, i)
            or (low == "like" and _may_open_simile(lowers, i) and is_bare_simile(lowers, i, lexicon))
        ):
            c.figurative.append(" ".join(lowers[i : i + 3]))
            c.figure_kinds.append("simile")
        if flag & FLAG_AROUSAL:
            c.arousal.append(low)
        if flag & FLAG_PERSON:
            c.persons.append(low)
        if flag & FLAG_SPEECH:
            speech = True
    if s.quotes and (speech or s.opens_with_quote):
        c.dialogue.append(index)


def _count_feeling_and_punctuation(
    s: Sentence,
    index: int,
    words: list[str],
    flags: list[int],
    lexicon: Lexicon,
    c: _Counts,
    has_capitals: bool,
) -> None:
    """The sentence's sentiment (compound and the words behind it), ALL-CAPS words, exclamation and
    question (marked, or unpunctuated: "what time is it")."""
    lowers = s.lowers
    n = len(lowers)
    compound, hits = score_sentence(words, lowers, flags, s.exclamations, s.questions, lexicon)
    c.compounds.append(compound)
    for i, value in hits:
        (c.positive if value > 0 else c.negative).append(lowers[i])
    if has_capitals:
        capitals = [w for w in words if len(w) > 1 and w.isupper() and w.isalpha()]
        if len(capitals) < n:
            c.capitals.extend(capitals)
    if s.exclamations:
        c.exclamatory.append(index)
    if s.questions or (not s.terminated and n > 2 and _unpunctuated_question(lowers, flags)):
        c.questions.append(index)


def _count_passives(
    lowers: list[str], index: int, flags: list[int], lexicon: Lexicon, c: _Counts
) -> set[int] | tuple[()]:
    """Count the sentence's passive verb groups; the word indices of their participles."""
    if lexicon.passive_auxiliaries.isdisjoint(lowers):
        return ()
    passives = find_passives(lowers, flags)
    if not passives:
        return ()
    c.passives.extend([(index, aux, participle) for aux, participle in passives])
    return {participle for _, participle in passives}


def _may_open_metaphor(flag: int, flags: list[int], lowers: list[str], i: int, lexicon: Lexicon) -> bool:
    """Whether a metaphor cue at word ``i`` may start one: a motion verb, or a copula followed by a
    word that may open a predicate noun phrase."""
    if flag & FLAG_MOTION:
        return True
    if i + 1 >= len(flags):
        return False
    following = flags[i + 1]
    return bool(
        following & _MAY_OPEN_PREDICATE
        or (not following and lexicon.word_classes.get(lowers[i + 1], 0) & CLASS_NOUN)
    )


def _count_verb(
    flag: int, flags: list[int], lowers: list[str], i: int, participles: set[int] | tuple[()], c: _Counts
) -> None:
    """Count the verb group (and its past tense) that a verb marker at word ``i`` starts, if it does."""
    previous = flags[i - 1] if i else 0
    if flag & FLAG_FINITE:
        if not previous & _VERB_CHAIN:
            c.verb_groups += 1
            if flag & FLAG_PAST:
                c.past.append(lowers[i])
    elif (
        flag & FLAG_PAST
        and not flag & FLAG_NOT_PARTICIPLE
        and not previous & _NOT_PAST_AFTER
        and i not in participles
    ):
        c.past.append(lowers[i])
        c.verb_groups += 1
    elif flag & FLAG_SUBJECT and i + 1 < len(flags) and not flags[i + 1] & _NOT_VERB_AFTER_SUBJECT:
        c.verb_groups += 1  # "I think", "they go": a subject pronoun before a present-tense verb


def _match_phrase(
    lowers: list[str], i: int, candidates: tuple[tuple[tuple[str, ...], int], ...]
) -> tuple[int, int] | None:
    """(phrase length in words, flag) of the longest listed phrase at word ``i`` (first two words match)."""
    for rest, kind in candidates:
        k = len(rest)
        if not rest or tuple(lowers[i + 2 : i + 2 + k]) == rest:
            return k + 2, kind
    return None


def _add_marker(c: _Counts, kind: int, text: str) -> None:
    if kind & FLAG_HEDGE:
        c.hedges.append(text)
    if kind & FLAG_BOOSTER:
        c.boosters.append(text)
    if kind & FLAG_CURIOSITY:
        c.curiosity.append(text)
    if kind & FLAG_TIME:
        c.time.append(text)
    if kind & FLAG_FIGURATIVE:
        c.figurative.append(text)
        c.figure_kinds.append("signal")


def _is_simile(lowers: list[str], i: int) -> bool:
    """ "like a/the ..." not after a subject or quantity word; "as ADJ as ..." except fixed phrases."""
    n = len(lowers)
    if lowers[i] == "like":
        return i + 1 < n and lowers[i + 1] in _SIMILE_DETERMINERS and _may_open_simile(lowers, i)
    return (
        i + 3 < n
        and lowers[i + 2] == "as"
        and lowers[i + 1] not in _NOT_SIMILE_AS
        and not lowers[i + 1][0].isdigit()
        and lowers[i + 3] not in _NOT_SIMILE_AFTER_AS
        and not lowers[i + 3][0].isdigit()
    )


def simile_vehicle_start(lowers: list[str]) -> int | None:
    """Index of the word that opens the first simile's comparison in a sentence's lower-cased words
    ("like" in "moved like a river", the second "as" in "as cold as a stone"), or None without one."""
    for i, word in enumerate(lowers):
        if (word == "like" or (word == "as" and i + 2 < len(lowers))) and _is_simile(lowers, i):
            return i if word == "like" else i + 2
    return None


def _may_open_simile(lowers: list[str], i: int) -> bool:
    """ "like" at ``i`` is not the verb ("I like", "would like") nor "feel like", "things like"."""
    return i == 0 or lowers[i - 1] not in _NOT_SIMILE_BEFORE


def _unpunctuated_question(lowers: list[str], flags: list[int]) -> bool:
    """A sentence without end punctuation that opens like a question: "how do we", "can you"."""
    if not flags[0] & FLAG_WH:
        return False
    second = flags[1]
    if flags[0] & (FLAG_AUX | FLAG_BE):
        return bool(second & (FLAG_SUBJECT | FLAG_PERSON | FLAG_DETERMINER))
    return bool(second & (FLAG_AUX | FLAG_BE)) or lowers[1] == "if"


def _clip(x: float) -> float:
    return 0.0 if x < 0.0 else 1.0 if x > 1.0 else x


def _score_sentence_variance(c: _Counts, detail: bool) -> tuple[float, _Evidence]:
    lengths = c.lengths
    mean = sum(lengths) / len(lengths)
    sd = math.sqrt(sum((x - mean) ** 2 for x in lengths) / len(lengths))
    cv = sd / mean
    return cv / (cv + CV_HALF), None if not detail else {
        "sentence_lengths": lengths,
        "mean_length": mean,
        "sd_length": sd,
        "coefficient_of_variation": cv,
    }


def _score_valence(c: _Counts, detail: bool) -> tuple[float, _Evidence]:
    mean = sum(c.compounds) / len(c.compounds)
    return 0.5 + 0.5 * mean, None if not detail else {
        "mean_sentence_compound": mean,
        "sentence_compounds": c.compounds,
        "positive_words": c.positive,
        "negative_words": c.negative,
    }


def intensity(
    mean_abs_compound: float,
    sentiment_share: float,
    exclamatory_share: float,
    arousal_share: float = 0.0,
    all_caps_share: float = 0.0,
) -> float:
    """emotional_intensity from its five cues (docs/hrv.md): mean |compound| over sentences, share of
    sentiment-bearing words, share of exclamatory sentences, share of high-arousal cue words and share
    of ALL-CAPS words. Sentiment magnitude is one cue among several, so an exclamatory, emphatic text
    outranks a flat one that merely holds a few mild feeling words."""
    value = (
        0.35 * mean_abs_compound
        + 0.10 * _clip(sentiment_share / SENTIMENT_SHARE_FULL)
        + 0.25 * _clip(2.0 * exclamatory_share)
        + 0.20 * _clip(arousal_share / AROUSAL_SHARE_FULL)
        + 0.10 * _clip(10.0 * all_caps_share)
    )
    return _clip(value)


def _score_intensity(c: _Counts, n_words: int, detail: bool) -> tuple[float, _Evidence]:
    n_sentences = len(c.lengths)
    mean_abs = sum(abs(x) for x in c.compounds) / n_sentences
    share = (len(c.positive) + len(c.negative)) / n_words
    exclaim = len(c.exclamatory) / n_sentences
    arousal = len(c.arousal) / n_words
    caps = len(c.capitals) / n_words
    value = intensity(mean_abs, share, exclaim, arousal, caps)
    if not detail:
        return value, None
    return value, {
        "mean_abs_compound": mean_abs,
        "sentiment_word_share": share,
        "exclamatory_sentence_share": exclaim,
        "arousal_word_share": arousal,
        "all_caps_word_share": caps,
        "arousal_words": c.arousal,
        "all_caps_words": c.capitals,
    }


def _score_assertiveness(c: _Counts, detail: bool) -> tuple[float, _Evidence]:
    boosts = len(c.boosters) + len(c.exclamatory)
    hedges = len(c.hedges)
    return 0.5 + 0.5 * (boosts - hedges) / (boosts + hedges + 1), None if not detail else {
        "boosters": c.boosters,
        "hedges": c.hedges,
        "exclamatory_sentences": len(c.exclamatory),
    }


def _score_curiosity(c: _Counts, n_words: int, detail: bool) -> tuple[float, _Evidence]:
    question_share = len(c.questions) / len(c.lengths)
    per_100 = 100.0 * len(c.curiosity) / n_words
    value = 0.6 * question_share + 0.4 * _clip(per_100 / CURIOSITY_MARKERS_FULL)
    return _clip(value), None if not detail else {
        "question_share": question_share,
        "curiosity_markers": c.curiosity,
        "markers_per_100_words": per_100,
    }


def _score_metaphor(c: _Counts, n_words: int, detail: bool) -> tuple[float, _Evidence]:
    per_100 = 100.0 * len(c.figurative) / n_words
    value = 1.0 - math.exp(-per_100 / FIGURATIVE_SCALE)
    if not detail:
        return value, None
    constructions: dict[str, int] = {}
    for kind in c.figure_kinds:
        constructions[kind] = constructions.get(kind, 0) + 1
    return value, {
        "figurative_markers": c.figurative,
        "constructions": constructions,
        "markers_per_100_words": per_100,
    }


def _score_storytelling(c: _Counts, n_words: int, detail: bool) -> tuple[float, _Evidence]:
    past = len(c.past) / n_words
    persons = len(c.persons) / n_words
    time = len(c.time) / n_words
    dialogue = len(c.dialogue) / len(c.lengths)
    value = (
        0.4 * _clip(past / PAST_FULL)
        + 0.25 * _clip(persons / PERSON_FULL)
        + 0.2 * _clip(time / TIME_FULL)
        + 0.15 * _clip(2.0 * dialogue)
    )
    return value, None if not detail else {
        "past_tense_verbs": c.past,
        "time_markers": c.time,
        "person_pronouns": c.persons,
        "past_tense_rate": past,
        "person_pronoun_rate": persons,
        "time_marker_rate": time,
        "dialogue_sentence_share": dialogue,
    }


def _score_active_voice(c: _Counts, detail: bool) -> tuple[float, _Evidence]:
    passives = len(c.passives)
    groups = max(c.verb_groups, len(c.lengths), passives)
    return 1.0 - passives / groups, None if not detail else {"passive_count": passives, "verb_groups": groups}


def _rounded(value: object, digits: int = 4) -> object:
    """``value`` with every float inside dicts and lists rounded to ``digits`` decimals (for display)."""
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, dict):
        return {k: _rounded(v, digits) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v, digits) for v in value]
    return value


def _check_text(text: object) -> str:
    if not isinstance(text, str):
        hint = (
            " (decode bytes first, e.g. data.decode('utf-8'))" if isinstance(text, (bytes, bytearray)) else ""
        )
        raise TypeError(f"text must be a str, got {type(text).__name__}{hint}")
    if not text or text.isspace():
        raise ValidationError("text is empty or whitespace only; pass at least one sentence of English text")
    return text


class HRVExtractor:
    """Measure the HRV of English text. Stateless and thread-safe; lexicons load once per process."""

    def __init__(self) -> None:
        self._lexicon = get_lexicon()

    def _count(self, text: str) -> tuple[_Counts, list[Sentence]]:
        sentences = split_sentences(clean_text(_check_text(text)))
        if not sentences:
            raise ValidationError(
                f"text has no words to measure (got {text[:40]!r}); pass at least one sentence of English text"
            )
        counts = _Counts()
        lexicon = self._lexicon
        has_capitals = _CAPITALS.search(text) is not None
        for index, sentence in enumerate(sentences):
            _count_sentence(sentence, index, lexicon, counts, has_capitals)
        return counts, sentences

    @staticmethod
    def _score(counts: _Counts, detail: bool = True) -> tuple[list[float], dict[str, _Evidence]]:
        """The 8 values, and each dimension's evidence when ``detail`` (``extract`` skips building it)."""
        n_words = counts.n_words
        scored = [
            _score_sentence_variance(counts, detail),
            _score_valence(counts, detail),
            _score_intensity(counts, n_words, detail),
            _score_assertiveness(counts, detail),
            _score_curiosity(counts, n_words, detail),
            _score_metaphor(counts, n_words, detail),
            _score_storytelling(counts, n_words, detail),
            _score_active_voice(counts, detail),
        ]
        hrv = [_clip(float(value)) for value, _ in scored]
        return hrv, {name: evidence for name, (_, evidence) in zip(HRV_DIMENSIONS, scored)}

    def extract(self, text: str) -> list[float]:
        """HRV of ``text``: 8 floats in [0, 1] in ``HRV_DIMENSIONS`` order.

        Raises ``TypeError`` for a non-string and ``ValidationError`` for text with no words.
        """
        return self._score(self._count(text)[0], detail=False)[0]

    def extract_many(self, texts: Iterable[str]) -> list[list[float]]:
        """``[extract(t) for t in texts]``."""
        return [self.extract(text) for text in texts]

    def analyze(self, text: str) -> HRVAnalysis:
        """HRV of ``text`` with per-dimension evidence (sentences quoted from ``text`` itself)."""
        counts, sentences = self._count(text)
        hrv, evidence = self._score(counts)

        def quote(index: int) -> str:
            start, end = sentences[index].span()
            if end - start > MAX_QUOTE:
                return text[start : start + MAX_QUOTE - 1] + "\u2026"
            return text[start:end]

        evidence["emotional_intensity"]["exclamatory_sentences"] = [quote(i) for i in counts.exclamatory]
        evidence["curiosity_index"]["questions"] = [quote(i) for i in counts.questions]
        evidence["storytelling_index"]["dialogue_sentences"] = [quote(i) for i in counts.dialogue]
        passives = []
        spans: dict[int, list[tuple[int, int]]] = {}  # word offsets, computed once per sentence
        for index, aux, participle in counts.passives:
            if index not in spans:
                spans[index] = sentences[index].word_spans()
            start, end = spans[index][aux][0], spans[index][participle][1]
            passives.append({"phrase": text[start:end], "start": start, "end": end, "sentence": quote(index)})
        evidence["active_voice_ratio"]["passives"] = passives
        return HRVAnalysis(
            hrv=hrv, evidence=_rounded(evidence), n_words=counts.n_words, n_sentences=len(sentences)
        )
