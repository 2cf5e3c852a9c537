"""Unmarked metaphor by rule: nominal metaphors, verb metaphors on abstract subjects, bare similes.

Three constructions a reader notices, found from word categories alone (no parser):

- **nominal**: a subject identified with a thing of another kind, after a copula ("Time is a thief",
  "Grief was an ocean", "She is a rock") or in apposition to the sentence's subject ("Grief, an
  ocean, ..."). The predicate's
  head noun is a metaphor when it is an animal and the subject is not ("The market was a roaring
  lion"), a person and the subject is an abstraction or a thing rated below ``CONCRETE`` ("Time is a
  thief"; an unlisted person noun such as "accountant" is rated concrete), or a concrete
  thing (concreteness >= ``CONCRETE``) and the subject is a person or an abstraction rated at least
  ``CONCRETENESS_GAP`` lower ("Grief was an ocean"). Literal copulas stay literal: "The cat is an
  animal" (animal of an animal), "She is a doctor" (person of a person), and specificational
  subjects ("The reason was a fire", ``data/specificational_nouns.txt``).
- **verb**: a concrete-action verb (``data/motion_verbs.txt``) right after an abstract subject noun,
  concreteness below ``CONCRETE`` and not a person or animal ("prices soared", "the idea swallowed").
- **simile**: "like" before a bare concrete noun ("slipped through my fingers like sand", "spread
  like wildfire"); similes with a determiner ("like a lion") are found by the extractor.

Concreteness is Brysbaert et al. (2014)'s 1-5 rating (``Lexicon.concreteness``). The function reads
the flags the extractor already looked up, so it costs little beyond the words it inspects.
"""

from __future__ import annotations

import re

from resonance_os.core.text import Sentence
from resonance_os.profiling.lexicons import (
    CLASS_ADJECTIVE,
    CLASS_ANIMAL,
    CLASS_HUMAN,
    CLASS_NOUN,
    CLASS_SPECIFIC,
    FLAG_AUX,
    FLAG_BE,
    FLAG_COPULA,
    FLAG_DETERMINER,
    FLAG_MOTION,
    FLAG_PARTICIPLE,
    FLAG_SUBJECT,
    Lexicon,
)

CONCRETE = 4.0
"""Concreteness (1-5) from which a noun counts as a concrete thing."""
ABSTRACT = 3.3
"""Concreteness up to which a copula's subject counts as an abstraction."""
CONCRETENESS_GAP = 1.2
"""How much more concrete than an abstract subject a predicate must be to be a metaphor."""
MAX_PREDICATE_WORDS = 4
"""Words read after the determiner to find the predicate's head noun ("a roaring lion")."""

APPOSITION = re.compile(r", (?:an?|the|that|this|my|your|his|her|its|our|their) ", re.IGNORECASE)
"""A comma before a determiner: where an appositive noun phrase may start ("Grief, an ocean, ...")."""
MAX_SUBJECT_WORDS = 3
"""An appositive metaphor must follow one of the sentence's first words (its subject)."""
APPOSITION_WITHIN = 40
"""Characters from the sentence's start searched for an apposition."""

_SKIP_AFTER_COPULA = frozenset(
    "not never just truly really simply only always still also indeed nothing but no longer more than "
    "quite rather sometimes often".split()
)
_STOP = frozenset(
    "of in on at to for from with by about into over under than as that which who whom whose where when "
    "and or but if because so while like".split()
)
_NOT_SUBJECT = frozenset(
    "it this that these those there here what which who everything nothing something anything "
    "everyone someone anyone nobody all each one none below above following more most once then now how why "
    "where when".split()
)
_GENERIC_PEOPLE = frozenset("man woman person people guy fellow individual human someone one".split())
"""Hypernyms of every person: "A bore is a man who ..." defines, it does not compare."""
_PREPOSITIONS = frozenset("in on at to for from with by about into over under after before during".split())
_NOT_IN_PHRASE = FLAG_DETERMINER | FLAG_AUX | FLAG_BE | FLAG_SUBJECT
_NOT_SUBJECT_FLAGS = FLAG_DETERMINER | FLAG_AUX | FLAG_SUBJECT
_NOUN_OR_ADJECTIVE = CLASS_NOUN | CLASS_ADJECTIVE
_MODIFIER_ENDINGS = ("ing", "ly")
_AGENT_ENDINGS = ("er", "or", "ee", "ant", "ent", "ate", "ist", "ian")
"""Endings of person nouns ("bachelor", "inmate"): with a person subject such a predicate is not counted."""


def metaphor_at(sentence: Sentence, flags: list[int], i: int, lexicon: Lexicon) -> tuple[str, str] | None:
    """``(construction, phrase)`` when a nominal or verb metaphor starts at word ``i``, else None.

    ``flags`` are ``lexicon.flags`` of ``sentence.lowers``; a metaphor can start only at a copula
    (``"nominal"``) or a concrete-action verb (``"verb"``).
    """
    lowers = sentence.lowers
    classes = lexicon.word_classes
    flag = flags[i]
    if flag & FLAG_COPULA:
        k = i + 1
        n = len(lowers)
        while k < n and lowers[k] in _SKIP_AFTER_COPULA:
            k += 1
        if k == n or not (flags[k] & FLAG_DETERMINER or classes.get(lowers[k], 0) & CLASS_NOUN):
            return None  # "is used", "was happy": no noun phrase follows
        head = _predicate_head(lowers, flags, k, classes)
        if head is None:
            return None
        subject = i if classes.get(lowers[i], 0) & CLASS_HUMAN else _subject_before(i, flags, lowers, classes)
        if subject is not None and _identifies(subject, head, lowers, lexicon, sentence):
            return "nominal", " ".join(lowers[subject : head + 1])
    elif flag & FLAG_MOTION and (subject := _abstract_subject_of_verb(i, lowers, flags, lexicon)) is not None:
        return "verb", " ".join(lowers[subject : i + 1])
    return None


def appositive_metaphor(sentence: Sentence, flags: list[int], lexicon: Lexicon) -> tuple[str, str] | None:
    """``("appositive", phrase)`` when the sentence's subject noun is followed by a comma and a noun
    phrase that identifies it with a thing of another kind, closed by a comma or the sentence's end
    ("Grief, an ocean, came at night"). Only the first ``APPOSITION_WITHIN`` characters are searched:
    the apposition must follow one of the sentence's first ``MAX_SUBJECT_WORDS`` words."""
    offset = sentence.search_opening(APPOSITION, APPOSITION_WITHIN, ", ")
    if offset < 0:
        return None
    lowers = sentence.lowers
    i = sentence.words_before(offset + 1)  # the determiner
    if not 0 < i <= MAX_SUBJECT_WORDS or i >= len(lowers):
        return None
    if not lexicon.word_classes.get(lowers[i - 1], 0) & CLASS_NOUN and flags[i - 1]:
        return None  # neither a noun nor an unknown word that may be a name
    if not _PREPOSITIONS.isdisjoint(lowers[: i - 1]):
        return None  # "In the morning, the sun ...": an adverbial, not a subject
    separators = sentence.separators()
    close = next((k for k in range(i + 1, len(lowers)) if "," in separators[k]), len(lowers))
    head = _predicate_head(lowers, flags, i, lexicon.word_classes, close)
    if head is not None and _identifies(i - 1, head, lowers, lexicon, sentence):
        return (
            "appositive",
            f"{lowers[i - 1]}, {' '.join(lowers[i : head + 1])}",
        )  # as written, for highlighting
    return None


def is_bare_simile(lowers: list[str], i: int, lexicon: Lexicon) -> bool:
    """Whether "like" at word ``i`` opens a simile with a bare concrete noun: "like sand", "like
    wet sand", "like wildfire" (the caller has already excluded "I like", "would like", ...)."""
    classes = lexicon.word_classes
    for k in (i + 1, i + 2):
        if k >= len(lowers):
            return False
        kind = classes.get(lowers[k], 0)
        if kind & CLASS_NOUN and not kind & (CLASS_HUMAN | CLASS_ADJECTIVE):
            return lexicon.concreteness.get(lowers[k], 0.0) >= CONCRETE
        if not kind & CLASS_ADJECTIVE:
            return False
    return False


def _subject_before(i: int, flags: list[int], lowers: list[str], classes: dict[str, int]) -> int | None:
    """Index of the copula's subject (the word right before it) when it is a noun, a person pronoun or
    an unknown word that may be a name, else None."""
    j = i - 1
    if j < 0 or lowers[j] in _NOT_SUBJECT or flags[j] & _NOT_SUBJECT_FLAGS & ~FLAG_SUBJECT:
        return None
    if j and flags[j - 1] & FLAG_SUBJECT:
        return None  # "what he needs is ...": a clause, not a noun, is the subject
    if classes.get(lowers[j], 0) & (CLASS_NOUN | CLASS_HUMAN):
        return j
    return j if flags[j] == 0 and lowers[j].isalpha() and len(lowers[j]) > 2 else None


def _predicate_head(
    lowers: list[str], flags: list[int], k: int, classes: dict[str, int], stop: int | None = None
) -> int | None:
    """Head noun of the noun phrase at ``k``: after an optional determiner, the last noun of a run of
    up to ``MAX_PREDICATE_WORDS`` adjectives and nouns, ending before word ``stop`` if given. A bare
    phrase must open with a noun that is not also an adjective ("Time is money", not "Love is blind")."""
    n = len(lowers) if stop is None else stop
    if k >= n:
        return None
    if lowers[k] == "that":
        return None  # "the point is that ...": a clause follows
    if flags[k] & FLAG_DETERMINER:
        k += 1
    elif (
        classes.get(lowers[k], 0) & _NOUN_OR_ADJECTIVE != CLASS_NOUN
        or flags[k] & FLAG_PARTICIPLE
        or lowers[k].endswith("ing")  # "we're building": a progressive verb
    ):
        return None
    head = None
    for j in range(k, min(n, k + MAX_PREDICATE_WORDS)):
        word = lowers[j]
        if flags[j] & _NOT_IN_PHRASE or word in _STOP:
            break
        kind = classes.get(word, 0)
        if kind & CLASS_NOUN:
            head = j
        elif head is not None or not (
            kind & CLASS_ADJECTIVE or flags[j] & FLAG_PARTICIPLE or word.endswith(_MODIFIER_ENDINGS)
        ):
            break
    return head


def _identifies(subject: int, head: int, lowers: list[str], lexicon: Lexicon, sentence: Sentence) -> bool:
    """Whether identifying the subject with the head noun is a metaphor (rules in the module doc)."""
    classes, concreteness = lexicon.word_classes, lexicon.concreteness
    s_kind, p_kind = classes.get(lowers[subject], 0), classes.get(lowers[head], 0)
    if s_kind & CLASS_SPECIFIC:
        return False
    c_pred = concreteness.get(lowers[head], 0.0)
    if not s_kind:  # an unknown word is a subject only when written as a name ("Juliet is the sun")
        if p_kind & CLASS_HUMAN or not (p_kind & CLASS_ANIMAL or c_pred >= CONCRETE):
            return False
        return sentence.words[subject][:1].isupper()
    if p_kind & CLASS_ANIMAL:
        return not s_kind & CLASS_ANIMAL
    if s_kind & CLASS_ANIMAL:
        return False
    c_subject = concreteness.get(lowers[subject], 5.0)
    if p_kind & CLASS_HUMAN:
        return not s_kind & CLASS_HUMAN and c_subject < CONCRETE and lowers[head] not in _GENERIC_PEOPLE
    if c_pred < CONCRETE:
        return False
    if s_kind & CLASS_HUMAN:
        return not lowers[head].endswith(_AGENT_ENDINGS)  # "she is a bachelor": an unlisted person noun
    return c_subject <= ABSTRACT and c_pred - c_subject >= CONCRETENESS_GAP


def _abstract_subject_of_verb(i: int, lowers: list[str], flags: list[int], lexicon: Lexicon) -> int | None:
    """Index of the abstract subject noun the concrete-action verb at ``i`` follows ("prices soared",
    "prices quickly soared"), or None."""
    j = i - 1
    if j > 0 and lowers[j].endswith("ly"):
        j -= 1
    if j < 0 or flags[j] & _NOT_SUBJECT_FLAGS or lowers[j] in _NOT_SUBJECT:
        return None
    subject = lowers[j]
    kind = lexicon.word_classes.get(subject, 0)
    if kind & (CLASS_NOUN | CLASS_ADJECTIVE | CLASS_HUMAN | CLASS_ANIMAL) != CLASS_NOUN:
        return None
    if j and lowers[j - 1] in _PREPOSITIONS:
        return None
    form = lexicon.motion_forms.get(lowers[i])
    plural = subject.endswith("s") and not subject.endswith("ss")
    if (form == "base" and not plural) or (form == "3sg" and plural):
        return None  # "a price jump", "the news flies": a compound or a plural noun, not a verb
    return j if lexicon.concreteness.get(subject, 5.0) < CONCRETE else None
