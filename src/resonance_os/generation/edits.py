"""Measurable edits of English sentences: pure ``str -> str | None`` transforms the refiner applies.

Each edit moves one HRV dimension a known way (``docs/hrv.md``) and is written for any English prose
(a model's draft, a user's text), not for one generator's phrase bank. They are conservative: an
edit works only on sentence shapes it can parse with certainty and returns ``None`` otherwise:

* openers (hedge "Generally,", booster "In fact,", time marker "Eventually,"; evaluative ones such
  as "Fortunately," are only removed) go only in front of a
  sentence that starts with a function word, so lower-casing it cannot break a name;
* voice changes need a short noun phrase on each side, a verb of ``data/transitive_verbs.txt`` and no trailing
  clause: "The module is imported by the interpreter." <-> "The interpreter imports the module.";
* questions invert only "NP be/modal ..." statements with a short noun phrase subject;
* similes are appended as a trailing "like ..." phrase and removed only in that shape;
* splits happen at "; ", before ", and/but/so" + a clause or at a single dash before a clause;
  merges join two short statements with a semicolon;
* word swaps use small tables of near-synonyms that differ in sentiment (VADER lexicon values),
  only in their pair's word class (the verb "love", not the noun) and never after "more"/"most";
  degree adverbs ('incredibly') and evaluative adjectives between a determiner and a noun ('a
  beautiful garden') are dropped by their VADER values and lemminflect's word classes.

Nothing here touches quoted speech, code-like text or questions that are not yes/no.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from importlib.resources import files

from lemminflect import getAllLemmas, getInflection

from resonance_os.profiling.lexicons import (
    CLASS_ADJECTIVE,
    CLASS_NOUN,
    FLAG_BOOSTER,
    FLAG_FINITE,
    FLAG_HEDGE,
    FLAG_PAST,
    get_lexicon,
)

_UNSAFE = re.compile(r"[\"“”`:()\[\]{}<>=_/\\|*#@]|(?<!\w)'|'(?!\w)")

MAX_WORDS = 30
"""Edits that lengthen a sentence leave sentences of this many words alone."""

DETERMINERS = frozenset(
    "the a an this that these those each every some any all most many several no its their our your "
    "his her my such both either neither".split()
)
SUBJECT_PRONOUNS = {
    "it": "it",
    "they": "them",
    "we": "us",
    "you": "you",
    "he": "him",
    "she": "her",
    "i": "me",
}
OBJECT_PRONOUNS = {v: k for k, v in SUBJECT_PRONOUNS.items() if k != "it" and k != "you"}
_SAFE_TO_LOWER = (
    DETERMINERS
    | frozenset(SUBJECT_PRONOUNS) - {"i"}
    | frozenset(
        "there if when in for on at as while because although since after before once by with from "
        "to unless until".split()
    )
)
_CLAUSE_WORDS = frozenset(
    "and or but which that who whom whose when where while if because although since not no "
    "is are was were be been being has have had do does did can will would should could may might must "
    "of to than as".split()
)
_PLURAL_PRONOUNS = frozenset("they we you i them us".split())
_BE = ("is", "are", "was", "were")
_MODALS = ("can", "will", "should", "could", "would", "must", "may", "might")
_QUESTION_AUX = ("is", "are", "was", "were", "can", "will", "should", "could", "would")
_ADVERBIAL_STARTS = frozenset(
    "in on at for with from into during when if before after because unless until while without "
    "within through across".split()
)


def _forms(
    base: str, irregular: tuple[str, str] | None = None, double: bool = False
) -> tuple[str, str, str, str]:
    """(base, 3rd person singular, past, past participle) of a verb."""
    if base.endswith(("s", "sh", "ch", "x")):
        third = base + "es"
    elif base.endswith("y") and base[-2] not in "aeiou":
        third = base[:-1] + "ies"
    else:
        third = base + "s"
    if irregular is not None:
        return (base, third, *irregular)
    if base.endswith("e"):
        past = base + "d"
    elif base.endswith("y") and base[-2] not in "aeiou":
        past = base[:-1] + "ied"
    elif double:
        past = base + base[-1] + "ed"
    else:
        past = base + "ed"
    return base, third, past, past


def _verb_table() -> dict[str, tuple[str, str, str, str]]:
    """Base form -> forms of every verb in ``data/transitive_verbs.txt`` (verbs taking a direct object)."""
    text = files("resonance_os.generation").joinpath("data", "transitive_verbs.txt").read_text("utf-8")
    table = {}
    for line in text.splitlines():
        fields = line.split()
        if not fields or line.startswith("#"):
            continue
        base, rest = fields[0], fields[1:]
        table[base] = _forms(base, (rest[0], rest[1]) if len(rest) == 2 else None, rest == ["double"])
    return table


VERBS = _verb_table()
_BY_PARTICIPLE = {forms[3]: forms for forms in VERBS.values()}
_BY_FINITE = {form: forms for forms in VERBS.values() for form in (forms[1], forms[2])}

# Near-synonyms ordered from more negative to more positive (VADER lexicon values in comments).
VALENCE_SWAPS: tuple[tuple[str, str], ...] = (
    ("wrong", "incorrect"),  # -2.1 -> 0
    ("problem", "issue"),  # -1.7 -> 0
    ("problems", "issues"),
    ("difficult", "hard"),  # -1.5 -> -0.4
    ("helpful", "valuable"),  # 1.8 -> 2.1
    ("good", "great"),  # 1.9 -> 3.1
    ("obstacles", "hurdles"),  # -1.6 -> 0
    ("difficulties", "hurdles"),  # -1.2 -> 0
    ("mistakes", "missteps"),  # -1.5 -> 0
    ("weaknesses", "limitations"),  # -1.5 -> 0
    ("stressful", "demanding"),  # -2.3 -> -0.9
)
# Milder and stronger forms of one judgement (same sign, larger magnitude on the right).
INTENSITY_SWAPS: tuple[tuple[str, str], ...] = (
    ("good", "excellent"),
    ("bad", "terrible"),
    ("important", "vital"),
    ("hard", "difficult"),
    ("sad", "miserable"),
    ("happy", "delighted"),
    ("nice", "wonderful"),
    ("afraid", "terrified"),
    ("interesting", "fascinating"),  # 1.7 -> 2.5
    ("enjoy", "love"),  # 2.2 -> 3.2
    ("glad", "delighted"),  # 2.0 -> 2.3
    ("pleased", "delighted"),  # 1.9 -> 2.3
    ("calm", "peaceful"),  # 1.3 -> 2.2
    ("annoyed", "angry"),  # -1.6 -> -2.3
    ("concerns", "fears"),  # 0 -> -1.8
    ("risks", "threats"),  # -1.1 -> -1.8
)
INTENSIFIERS = ("very", "really", "extremely")
GRADABLE = frozenset(
    "important useful easy difficult good bad careful clear powerful strong weak dangerous safe helpful "
    "happy sad nice hard valuable".split()
)
"""Adjectives 'very' may precede that are also nouns in lemminflect's table ("good", "clear"); each has a
VADER value, so intensity moves; none is a technical term."""
NOT_GRADABLE = frozenset(
    (
        "perfect dead unique impossible true false fatal infinite supreme ultimate huge enormous massive "
        "tremendous amazing awesome fantastic fabulous terrific marvelous marvellous magnificent superb "
        "brilliant excellent outstanding wonderful incredible extraordinary spectacular terrible horrible "
        "awful dreadful horrific disastrous catastrophic devastating furious ecstatic thrilled delighted "
        "exhausted terrified miserable gorgeous stunning hilarious alive vital crucial essential fascinating"
    ).split()
)
"""Adjectives with a VADER value that take no degree: absolute ("very perfect") or already extreme
("very huge", "very terrible", and the stronger side of ``INTENSITY_SWAPS``: "very vital")."""


def gradable(word: str) -> bool:
    """Whether 'very' may precede ``word``: one of ``GRADABLE``, or an adjective (never a noun) of
    lemminflect's table with a clear VADER valence (|v| >= 1), so the intensifier moves intensity."""
    if word in GRADABLE:
        return True
    if word in NOT_GRADABLE or not word.isalpha():
        return False
    lexicon = get_lexicon()
    classes = lexicon.word_classes.get(word, 0)
    return (
        bool(classes & CLASS_ADJECTIVE)
        and not classes & CLASS_NOUN
        and abs(lexicon.valence.get(word, 0.0)) >= 1.0
    )


_BEFORE_ADJECTIVE = frozenset(
    "is are was were be been a an seems seemed remains remained becomes became looks looked feels felt "
    "sounds sounded grew".split()
)

HEDGE_OPENERS = ("In most cases,", "Generally,", "Typically,", "In general,")
BOOSTER_OPENERS = ("In fact,", "Indeed,", "Of course,", "Clearly,")
POSITIVE_OPENERS = ("Fortunately,", "Happily,", "Helpfully,")
NEGATIVE_OPENERS = ("Unfortunately,", "Sadly,", "Regrettably,")
TIME_OPENERS = ("At first,", "Eventually,", "Later,", "In the end,", "Finally,")


def join_sentences(sentences: list[str]) -> str:
    return " ".join(sentences)


def _statement(sentence: str) -> tuple[list[str], str] | None:
    """(words of the body, ".") for a plain statement ending in a full stop; None for anything else."""
    if not sentence.endswith(".") or sentence.endswith("..") or _UNSAFE.search(sentence):
        return None
    words = sentence[:-1].split()
    if len(words) < 3 or not words[0][:1].isupper():
        return None
    return words, "."


def _lowered_start(words: list[str]) -> list[str] | None:
    """``words`` with the first lower-cased, when that word is a function word (never a name)."""
    if words[0].lower() not in _SAFE_TO_LOWER:
        return None
    return [words[0].lower(), *words[1:]]


def _capitalize(words: list[str]) -> list[str]:
    return [words[0][:1].upper() + words[0][1:], *words[1:]]


_INTRODUCTORY = frozenset("perhaps indeed as although though since once whether".split()) | _ADVERBIAL_STARTS
"""First words of an introductory phrase or clause ("In many cities across the globe, ...", "As we
look ahead, ..."): a second opener in front of one reads stacked ("In general, in the heart of ...")."""


def _has_opener(words: list[str]) -> bool:
    """Whether the sentence already opens with an opener, an introductory phrase or clause, or sets a
    connective off by commas ("..., however, ...": "Of course, ..., however, ..." contradicts itself)."""
    return (
        any(w.endswith(",") for w in words[:4])
        or words[0].lower() in _INTRODUCTORY
        or any(w.endswith(",") and w[:-1].lower() in CONNECTIVES for w in words)
    )


def has_stance(sentence: str, booster: bool) -> bool:
    """Whether ``sentence`` has a booster ("clearly", "indeed") or, with ``booster=False``, a hedge
    ("may", "perhaps") of the lexicon: a hedging opener on a sentence that insists, or a boosting one
    on a sentence that hedges, contradicts it ("In most cases, it becomes evident that ...")."""
    flag = FLAG_BOOSTER if booster else FLAG_HEDGE
    flags = get_lexicon().flags
    return any(flags.get(w.strip(",;:.!?").lower(), 0) & flag for w in sentence.split())


# -- openers: hedges, boosters, time markers --------------------------------------------------------
_PAST = frozenset(("was", "were", "had", "did", *(forms[2] for forms in VERBS.values())))
"""Past-tense finite verbs: a time marker ("Later,") fits a sentence that tells what happened."""
_PARTICIPLE_BEFORE = frozenset("is are be been being am has have having get gets got".split()) | frozenset(
    _MODALS
)
"""Words after which a past form is a participle ("is defined", "has moved"), not a past tense; after a
determiner it is an adjective ("a shared document")."""
_PRESENT = frozenset("is are am has have does do".split())
_SUBJECT_PRONOUNS = frozenset("i we he she they".split())
"""A regular past form right after one of these is a past tense ("we waited"), not a participle."""


def tells_past_event(sentence: str) -> bool:
    """Whether the sentence has a past-tense verb ("The team moved ...", "It was built ..."), so a
    time marker keeps its meaning; "Later, all arguments are evaluated" would turn a rule into a
    sequence of events."""
    words = [w.strip(",;:").lower() for w in sentence.split()]
    if _PRESENT.intersection(words):  # "the value produced is determined": a participle, a present rule
        return False
    return any(
        (w in _PAST and (i == 0 or words[i - 1] not in _PARTICIPLE_BEFORE | DETERMINERS))
        or (i > 0 and words[i - 1] in _SUBJECT_PRONOUNS and w.endswith("ed") and len(w) > 4)
        for i, w in enumerate(words)
    )


def add_opener(sentence: str, opener: str) -> str | None:
    """'The call returns.' -> 'In fact, the call returns.' (None after another opener or a name)."""
    parsed = _statement(sentence) or _exclamation(sentence)
    if parsed is None or _has_opener(parsed[0]) or len(parsed[0]) >= MAX_WORDS:
        return None
    rest = _lowered_start(parsed[0])
    return None if rest is None else f"{opener} {' '.join(rest)}{parsed[1]}"


def _exclamation(sentence: str) -> tuple[list[str], str] | None:
    if not sentence.endswith("!") or sentence.endswith("!!"):
        return None
    parsed = _statement(sentence[:-1] + ".")
    return None if parsed is None else (parsed[0], "!")


def remove_opener(sentence: str, openers: Iterable[str]) -> str | None:
    """Drop one of ``openers`` from the front when what follows starts with a function word."""
    for opener in openers:
        if sentence.startswith(opener + " "):
            rest = sentence[len(opener) + 1 :].split(" ")
            if rest[0].lower() in _SAFE_TO_LOWER:
                return " ".join(_capitalize(rest))
    return None


# -- questions ----------------------------------------------------------------------------------
def _noun_phrase(words: list[str]) -> bool:
    """A short noun phrase: a pronoun, or a determiner and up to three nouns and adjectives (lemminflect's
    word classes) ending in a noun, with no clause words: not "all over again" or "a project aimed"."""
    if len(words) == 1:
        return words[0].lower() in SUBJECT_PRONOUNS or words[0].lower() == "there"
    head = words[0].lower()
    classes = get_lexicon().word_classes
    return (
        head in DETERMINERS
        and len(words) <= 4
        and all(
            w.isalpha()
            and w.islower()
            and w not in _CLAUSE_WORDS
            and classes.get(w, 0) & (CLASS_NOUN | CLASS_ADJECTIVE)
            for w in words[1:]
        )
        and bool(classes.get(words[-1], 0) & CLASS_NOUN)
    )


def to_question(sentence: str) -> str | None:
    """'The result is an integer.' -> 'Is the result an integer?' (short subject + be/modal only; not
    a compound sentence: "Is A; b?" is no question)."""
    parsed = _statement(sentence)
    if parsed is None or ";" in sentence:
        return None
    words = parsed[0]
    for i in range(1, min(len(words) - 1, 5)):
        if words[i] in _QUESTION_AUX:
            subject = _lowered_start(words[:i])
            if subject is None or not _noun_phrase(words[:i]) or subject == ["i"]:
                return None
            return f"{words[i].capitalize()} {' '.join(subject + words[i + 1 :])}?"
        if not words[i].isalpha():
            return None
    return None


def to_statement(sentence: str) -> str | None:
    """'Is it an integer?' -> 'It is an integer.' when the subject's end is certain."""
    if not sentence.endswith("?") or sentence.endswith("??") or _UNSAFE.search(sentence):
        return None
    words = sentence[:-1].split()
    if len(words) < 3 or words[0].lower() not in _QUESTION_AUX:
        return None
    aux = words[0].lower()
    for size in (1, 2):
        subject, rest = words[1 : 1 + size], words[1 + size :]
        if not rest or not _noun_phrase(subject) or not subject[0].islower():
            continue
        if size == 1 or _starts_predicate(rest[0], aux):
            return " ".join(_capitalize([*subject, aux, *rest])) + "."
    return None


def _starts_predicate(word: str, aux: str) -> bool:
    """Whether ``word`` can only begin the predicate (not continue a noun phrase) after ``aux``."""
    lowered = word.lower()
    if aux in _MODALS:
        return lowered in VERBS or lowered in ("be", "have", "not")
    return lowered in DETERMINERS | _ADVERBIAL_STARTS | {"not", "very"} or lowered.endswith(("ed", "ly"))


# -- similes --------------------------------------------------------------------------------------
_SIMILE_TAIL = re.compile(r", (?:like|as if) [^,;]+\.$")


def add_simile(sentence: str, simile: str) -> str | None:
    """Append ', like a recipe' before the full stop (None for long sentences or an existing simile)."""
    parsed = _statement(sentence)
    if parsed is None or len(parsed[0]) >= MAX_WORDS - 5 or " like " in sentence or " as if " in sentence:
        return None
    return f"{' '.join(parsed[0])}, like {simile}."


def remove_simile(sentence: str) -> str | None:
    """Drop a trailing ', like ...' / ', as if ...' phrase of at most eight words."""
    match = _SIMILE_TAIL.search(sentence)
    if match is None or len(match.group(0).split()) > 9:
        return None
    return sentence[: match.start()] + "."


# -- voice ------------------------------------------------------------------------------------------
def _is_plural(noun_phrase: list[str]) -> bool:
    head = noun_phrase[-1].lower()
    if len(noun_phrase) == 1:
        return head in _PLURAL_PRONOUNS
    return head.endswith("s") and not head.endswith(("ss", "us", "is"))


def _as_object(noun_phrase: list[str]) -> list[str]:
    """A subject noun phrase in object position ('They' -> 'them', 'The list' -> 'the list')."""
    lowered = _lowered_start(noun_phrase) or noun_phrase
    return [SUBJECT_PRONOUNS.get(lowered[0], lowered[0]), *lowered[1:]] if len(lowered) == 1 else lowered


def _as_subject(noun_phrase: list[str]) -> list[str]:
    if len(noun_phrase) == 1:
        return [OBJECT_PRONOUNS.get(noun_phrase[0], noun_phrase[0])]
    return noun_phrase


def to_active(sentence: str) -> str | None:
    """'The module is imported by the interpreter.' -> 'The interpreter imports the module.'"""
    parsed = _statement(sentence)
    if parsed is None or " by " not in sentence:
        return None
    words = parsed[0]
    by = len(words) - 1 - words[::-1].index("by")
    for i in range(1, min(by, 5)):
        aux = words[i]
        modal = aux in _MODALS and words[i + 1] == "be"
        if aux not in _BE and not modal:
            continue
        participle = words[i + 2 if modal else i + 1]
        forms = _BY_PARTICIPLE.get(participle)
        subject, agent = (
            words[:i],
            _as_subject([w.lower() if w.lower() in OBJECT_PRONOUNS else w for w in words[by + 1 :]]),
        )
        if forms is None or by != (i + 3 if modal else i + 2) or not _noun_phrase(subject):
            return None
        if not _noun_phrase([agent[0].lower(), *agent[1:]]) or (len(agent) == 1 and agent[0] == "it"):
            return None
        if modal:
            verb = [aux, forms[0]]
        elif aux in ("was", "were"):
            verb = [forms[2]]
        else:
            verb = [forms[0] if _is_plural(agent) else forms[1]]
        return " ".join(_capitalize([*agent, *verb, *_as_object(subject)])) + "."
    return None


_OBJECT_ENDS = _ADVERBIAL_STARTS | frozenset(
    "to and or but so because as than since although though where".split()
)
"""Words that end a direct object: a prepositional phrase, a conjunction or a subordinate clause."""
_OBJECT_AS_SUBJECT = {"him": "he", "her": "she", "them": "they", "us": "we", "me": "I"}


def _passive_subject(obj: list[str]) -> tuple[list[str], bool] | None:
    """The direct object ``obj`` as the subject of a passive and whether it is plural: a short noun
    phrase, an object pronoun ("them" -> "they") or a name of one or two capitalised words."""
    if len(obj) == 1 and obj[0] in _OBJECT_AS_SUBJECT:
        subject = _OBJECT_AS_SUBJECT[obj[0]]
        return [subject], subject in ("they", "we")
    if 1 <= len(obj) <= 2 and all(w.isalpha() and w[0].isupper() and w[1:].islower() for w in obj):
        return obj, False
    if len(obj) > 1 and obj[0] != "that" and _noun_phrase(obj):  # "suggests that ...": a clause
        return obj, _is_plural(obj)
    return None


def _be_form(subject: list[str], plural: bool, past: bool) -> str:
    if subject == ["I"]:
        return "was" if past else "am"
    return ("were" if plural else "was") if past else ("are" if plural else "is")


def to_passive(sentence: str) -> str | None:
    """'The interpreter imports the module.' -> 'The module is imported by the interpreter.';
    'Finally, the president called Sam into his office.' -> 'Finally, Sam was called by the president
    into his office.' (an opener of up to four words ending in a comma stays in front)."""
    parsed = _statement(sentence)
    if parsed is None:
        return None
    words = parsed[0]
    opener_end = next((k + 1 for k in range(min(4, len(words) - 3)) if words[k].endswith(",")), 0)
    opener, body = words[:opener_end], words[opener_end:]
    if opener and any(w.endswith(",") for w in body[:4]):
        return None
    for i in range(1, min(len(body) - 1, 5)):
        forms = _BY_FINITE.get(body[i]) or VERBS.get(body[i])
        if forms is None:
            continue
        subject = body[:i]
        if not _noun_phrase(subject) or subject[0].lower() == "there" or _lowered_start(subject) is None:
            return None
        if body[i] == forms[0] and not _is_plural(subject):
            return None
        end = next((j for j in range(i + 1, len(body)) if body[j].lower() in _OBJECT_ENDS), len(body))
        obj = body[i + 1 : end]
        if any(w.endswith(",") for w in obj) or (new_subject := _passive_subject(obj)) is None:
            return None
        if {"and", "or", "but"}.intersection(w.lower() for w in body[end:]):
            return None  # "The dog bit me and ran away": a second verb would share the new subject
        passive_subject, plural = new_subject
        be = _be_form(passive_subject, plural, past=body[i] == forms[2] and body[i] != forms[0])
        clause = [*passive_subject, be, forms[3], "by", *_as_object(subject), *body[end:]]
        return " ".join([*opener, *clause] if opener else _capitalize(clause)) + "."
    return None


# -- cadence ------------------------------------------------------------------------------------
_SPLIT_SEAM = re.compile(r"; |, (?=(?:and|but|yet|so) \w)| [-\u2013\u2014] (?=\w)")
_DASH = re.compile(r" [-\u2013\u2014] ")
_AUXILIARIES = frozenset((*_QUESTION_AUX, *_MODALS, "has", "have", "had", "does", "do", "did"))
_CLAUSE_SUBJECT_STARTS = DETERMINERS | frozenset(SUBJECT_PRONOUNS) | {"there"}
"""Words a subject can open with: after ", and" a part opening otherwise ("as loud as ...") is no clause."""
_SUBJECT_CONTRACTION = re.compile(r"(?:i|you|we|they|he|she|it|there|that)'(?:m|re|s|ve|d|ll)")
"""A subject with its verb ("it's", "they're"): a clause opens with it."""
CONNECTIVES = frozenset("however therefore instead meanwhile otherwise moreover still".split())
"""Adverbs that may open the clause after a semicolon ("; however, the cost rose") and so open its
own sentence."""
_RELATIVES = frozenset("that which who whom whose where when".split())


@lru_cache(maxsize=8192)
def _finite_verb(word: str) -> bool:
    """Whether ``word`` is surely a finite verb: an auxiliary or modal, a past form, or a form that is
    only a verb ("provides", "argue"; not "plants" or "offers", which are also nouns), never a form
    that is only a past participle ("woven", "taken")."""
    if word in _AUXILIARIES:
        return True
    readings = getAllLemmas(word)
    lemmas = readings.get("VERB", ())
    if any(word in (getInflection(lemma, "VBN") or ()) for lemma in lemmas) and not any(
        word in (getInflection(lemma, "VBD") or ()) for lemma in lemmas
    ):
        return False
    if get_lexicon().flags.get(word, 0) & (FLAG_PAST | FLAG_FINITE):
        return True
    return set(readings) == {"VERB"} and not word.endswith("ing")


def _has_verb(words: list[str]) -> bool:
    """Whether ``words`` hold a finite verb after their first word, or a subject contraction ("It's")."""
    lowers = [w.lower().strip(",;") for w in words]
    return bool(lowers) and (
        _SUBJECT_CONTRACTION.fullmatch(lowers[0]) is not None or any(_finite_verb(w) for w in lowers[1:])
    )


def _opens_clause(words: list[str]) -> bool:
    """Whether ``words`` open an independent clause: a subject start (determiner, pronoun, "there", a
    capitalised name or a bare plural noun), optionally after a connective ("however,"), and a finite
    verb within the next five words with no relative word before it ("a lake that had been ..." is
    a noun phrase; "to explore" is no finite verb, nor "tailored" after a noun unless an object
    follows: "the scent of basil filled the air"); a subject contraction ("it's") opens one."""
    if words and words[0].rstrip(",").lower() in CONNECTIVES and words[0].endswith(","):
        words = words[1:]
    if len(words) < 2:
        return False
    first = words[0].lower()
    if _SUBJECT_CONTRACTION.fullmatch(first):
        return True
    bare_noun = first.endswith("s") and set(getAllLemmas(first)) == {"NOUN"}
    if first not in _CLAUSE_SUBJECT_STARTS and not bare_noun and not words[0][:1].isupper():
        return False
    lowers = [w.lower().strip(",;") for w in words[:7]]
    for i in range(1, min(6, len(lowers))):
        word = lowers[i]
        if word in _RELATIVES:
            return False
        following = lowers[i + 1] if i + 1 < len(lowers) else ""
        participle = word.endswith("ed") and first not in SUBJECT_PRONOUNS and following not in DETERMINERS
        if _finite_verb(word) and lowers[i - 1] != "to" and not participle:
            return True
    return False


def split(sentence: str) -> list[str] | None:
    """Two sentences from one at a seam between independent clauses, each part at least four words:

    * 'A; b.' -> 'A.', 'B.' (b opening with a function word, or a clause: 'A; however, the b rose.');
    * 'A, and the team is b.' -> 'A.', 'The team is b.'; 'A, but it is b.' -> 'A.', 'But it is b.'
      (after ", and/but/yet/so" a clause, ``_opens_clause``: not a list item or "as loud as ...";
      "and" is dropped, the others open the new sentence);
    * 'A - the b rose.' -> 'A.', 'The b rose.' (a single dash before a clause, with a finite verb
      before it: not one of a pair around an aside, nor a list after a dash).
    """
    if not sentence.endswith(".") or _UNSAFE.search(sentence):
        return None
    for match in _SPLIT_SEAM.finditer(sentence):
        left, right = sentence[: match.start()], sentence[match.end() :]
        right_words = right.split()
        seam = match.group(0)
        conjunction = [right_words.pop(0)] if seam.startswith(",") else []
        if len(left.split()) < 4 or len(right_words) < 4:
            continue
        if seam == "; ":
            if right_words[0].lower() not in _SAFE_TO_LOWER and not _opens_clause(right_words):
                continue
        elif seam.startswith(","):
            if not _opens_clause(right_words):
                continue
        elif (
            _DASH.search(right)
            or _DASH.search(left)
            or not _opens_clause(right_words)
            or not _has_verb(left.split())
        ):
            continue
        if conjunction in ([], ["and"]):
            second = right_words
        else:
            second = [*conjunction, *(_lowered_start(right_words) or right_words)]
        return [left + ".", " ".join(_capitalize(second))]
    return None


def merge(first: str, second: str) -> str | None:
    """'A. The b.' -> 'A; the b.' for two short statements (the second starting with a function word)."""
    one, two = _statement(first), _statement(second)
    if one is None or two is None or ";" in first + second or len(one[0]) + len(two[0]) > MAX_WORDS:
        return None
    rest = _lowered_start(two[0])
    return None if rest is None else f"{' '.join(one[0])}; {' '.join(rest)}."


# -- wording: valence and intensity --------------------------------------------------------------
_WORD_RUN = re.compile(r"\w+")


VERB_SWAPS = frozenset(("enjoy", "love"))
"""Swap words taken only as verbs: the noun "love" ("her love of adventure") has no "enjoy"."""
NOUN_SWAPS = frozenset(("concerns", "fears", "risks", "threats"))
"""Swap words taken only as nouns: "it concerns me" and "he risks his life" have no "fears"/"threats"."""
_BEFORE_VERB = (
    frozenset(SUBJECT_PRONOUNS)
    | frozenset(_MODALS)
    | frozenset("to really truly also always still all who people".split())
)
_BEFORE_NOUN_VERB = frozenset(SUBJECT_PRONOUNS) | frozenset("that which who".split())
ADJECTIVE_SWAPS = frozenset(("hard",))
"""Swap words taken only as adjectives after a linking verb, an article or a degree word: "working
hard" and "a hard floor" have no "difficult"."""
_BEFORE_SWAPPED_ADJECTIVE = (
    _BEFORE_ADJECTIVE | frozenset(INTENSIFIERS) | frozenset("so too how quite".split())
)
_GRADED = frozenset("more most less least".split())
"""'most difficult' has no 'most hard': a swap after these is declined."""


def _swap_fits(old: str, new: str, previous: str) -> bool:
    """Whether ``old`` after ``previous`` (lower-case, "" at the start) is in the word class its swap
    needs, and ``new`` can follow ``previous`` (no "very vital" from "very important")."""
    if previous in _GRADED or (previous in INTENSIFIERS and not gradable(new)):
        return False
    if old in VERB_SWAPS:
        return previous in _BEFORE_VERB
    if old in ADJECTIVE_SWAPS:
        return previous in _BEFORE_SWAPPED_ADJECTIVE
    return not (old in NOUN_SWAPS and previous in _BEFORE_NOUN_VERB)


def swap_word(sentence: str, pairs: Iterable[tuple[str, str]], forward: bool) -> str | None:
    """Replace the first whole-word match of a pair's left word by its right (``forward``) or back,
    with an article just before it made to agree ("a vital part" -> "an important part"); a match in
    the wrong word class (``VERB_SWAPS``, ``NOUN_SWAPS``, ``ADJECTIVE_SWAPS``), after "more"/"most",
    or after "very" where the new word takes no degree is skipped."""
    if _UNSAFE.search(sentence):
        return None
    present = set(_WORD_RUN.findall(sentence))  # the pairs are single words: whole-word runs
    for left, right in pairs:
        old, new = (left, right) if forward else (right, left)
        if old not in present:
            continue
        for match in re.finditer(rf"\b([Aa]n? )?{old}\b", sentence):
            before = sentence[: match.start()].split()
            previous = match.group(1) or (before[-1] if before else "")
            if not _swap_fits(old, new, previous.lower().strip(" ,;")):
                continue
            article = match.group(1)
            if article:
                article = article[0] + ("n" if new[0] in "aeiou" else "") + " "
            return sentence[: match.start()] + (article or "") + new + sentence[match.end() :]
    return None


def add_intensifier(sentence: str) -> str | None:
    """'The step is important.' -> 'The step is very important.' (gradable adjectives after be/a)."""
    parsed = _statement(sentence)
    if parsed is None or any(w in INTENSIFIERS for w in parsed[0]):
        return None
    words = parsed[0]
    for i in range(1, len(words)):
        bare = words[i].rstrip(",")
        if words[i - 1].lower() in _BEFORE_ADJECTIVE and gradable(bare):
            before = words[:i]
            if before[-1].lower() == "an":
                before[-1] = before[-1][:-1]
            return " ".join([*before, "very", *words[i:]]) + "."
    return None


def _degree_adverb(word: str, following: str) -> bool:
    """Whether ``word`` intensifies ``following``: one of ``INTENSIFIERS``, or a VADER degree adverb in
    -ly ("incredibly", "deeply") before an adjective, a participle or another -ly adverb."""
    if word in INTENSIFIERS:
        return True
    lexicon = get_lexicon()
    if not word.endswith("ly") or lexicon.vader_boosters.get(word, 0.0) <= 0:
        return False
    return following.endswith(("ly", "ing", "ed")) or bool(
        lexicon.word_classes.get(following, 0) & CLASS_ADJECTIVE
    )


def remove_intensifier(sentence: str) -> str | None:
    """'It is very useful.' -> 'It is useful.'; 'an incredibly rich history' -> 'a rich history' (not
    'the very first')."""
    words = sentence.split(" ")
    for i in range(1, len(words) - 1):
        following = words[i + 1].lower().rstrip(".,;:!?")
        if (
            words[i - 1].lower() != "the"
            and following.isalpha()
            and _degree_adverb(words[i].lower(), following)
        ):
            if words[i - 1].lower() in ("a", "an"):
                words[i - 1] = words[i - 1][0] + ("n" if words[i + 1][0].lower() in "aeiou" else "")
            return " ".join(words[:i] + words[i + 1 :])
    return None


def drop_adjective(sentence: str, sign: int) -> str | None:
    """'They built a beautiful garden.' -> 'They built a garden.': drop an attributive adjective with a
    clear VADER valence of ``sign`` (+1 positive, -1 negative, 0 either) between a determiner and a
    noun, fixing "a"/"an" (never a noun-adjective like "good" in "the common good", nor after "is"/"was":
    "it was an amazing day" says nothing without it)."""
    if _UNSAFE.search(sentence):
        return None
    lexicon = get_lexicon()
    words = sentence.split(" ")
    for i in range(1, len(words) - 1):
        word, following = words[i], words[i + 1].rstrip(".,;:!?")
        valence = lexicon.valence.get(word, 0.0)
        classes = lexicon.word_classes.get(word, 0)
        if (
            abs(valence) < 1.5
            or (sign and valence * sign < 0)
            or not classes & CLASS_ADJECTIVE
            or classes & CLASS_NOUN
            or words[i - 1].lower() not in DETERMINERS
            or (i >= 2 and words[i - 2].lower() in _BE)  # "was an amazing day": the adjective is the point
            or not following.isalpha()
            or not lexicon.word_classes.get(following, 0) & CLASS_NOUN
        ):
            continue
        before = words[: i - 1]
        article = words[i - 1]
        if article.lower() in ("a", "an"):
            article = article[0] + ("n" if following[0].lower() in "aeiou" else "")
        return " ".join([*before, article, *words[i + 1 :]])
    return None
