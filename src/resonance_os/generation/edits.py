"""Measurable text edits the refiner applies: pure ``str -> str`` transforms of English sentences.

Every edit moves one HRV dimension in a known direction: active <-> passive voice, hedges and
boosters, statement <-> question, similes, narrative framing (time markers, past tense), sentence
splitting and merging for cadence, and warmer/colder or stronger/milder wording. Each returns the
edited sentence(s), or ``None`` when it does not apply, so the refiner can try another. They are
written for the built-in backend's grammar (they know its phrase bank) and fall back to generic
patterns (be + participle + "by", sentence-initial adverbials) on other English text.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from resonance_os.generation.backends.builtin import capitalize, is_plural
from resonance_os.generation.backends.phrase_bank import PhraseBank, Verb, load_phrase_bank

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'“‘(\[]?[A-Z0-9])")
_BE_PRESENT = {"is": "was", "are": "were"}
_SUBJECT_OF = {"her": "she", "him": "he", "them": "they", "us": "we", "me": "I"}
_DETERMINERS = frozenset("a an the every each this that these those his her their our my its what".split())
_BE_PAST = {v: k for k, v in _BE_PRESENT.items()}


def split_sentences(text: str) -> list[str]:
    """Split a paragraph into sentences at ``.``/``!``/``?`` followed by a capitalised word."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def join_sentences(sentences: list[str]) -> str:
    return " ".join(sentences)


def _end(sentence: str) -> tuple[str, str]:
    """(body, terminal punctuation)."""
    match = re.search(r"[.!?]+[\"'”’)]*$", sentence)
    if not match:
        return sentence, "."
    return sentence[: match.start()], match.group(0)


def _lower_first(text: str, names: frozenset[str]) -> str:
    first = text.split(" ", 1)[0].rstrip(",;:")
    if first in names or first == "I" or (first.isupper() and len(first) > 1):
        return text
    return text[:1].lower() + text[1:]


@dataclass(frozen=True)
class Lexicon:
    """Phrase-bank derived lookups used by the edits (built once per process)."""

    bank: PhraseBank
    verb_by_form: dict[str, tuple[Verb, str]]
    objects: tuple[str, ...]
    names: frozenset[str]
    openers: tuple[str, ...]
    tails: tuple[str, ...]
    hedge_words: tuple[str, ...]
    booster_words: tuple[str, ...]

    def verb_of(self, word: str) -> Verb | None:
        """The bank verb that ``word`` is a form of, or None."""
        entry = self.verb_by_form.get(word.lower())
        return entry[0] if entry else None

    def is_adverb(self, word: str) -> bool:
        return word.endswith("ly") or word in self.hedge_words or word in self.booster_words


@cache
def lexicon() -> Lexicon:
    bank = load_phrase_bank()
    openers = (
        *bank.hedges["openers"],
        *bank.boosters["openers"],
        *bank.evaluative_openers["positive"],
        *bank.evaluative_openers["negative"],
        *(t + "," for t in bank.time_markers),
        *bank.narrator_openers,
    )
    tails = (*bank.adjuncts, *bank.subordinates["present"], *bank.subordinates["past"])
    return Lexicon(
        bank=bank,
        verb_by_form=bank.verb_forms(),
        objects=tuple(sorted((np for np, _ in bank.objects), key=len, reverse=True)),
        names=frozenset(bank.characters),
        openers=tuple(sorted(openers, key=len, reverse=True)),
        tails=tuple(sorted(tails, key=len, reverse=True)),
        hedge_words=(*bank.hedges["adverbs"], *bank.hedges["modals"]),
        booster_words=tuple(bank.boosters["adverbs"]),
    )


def _strip_opener(body: str, lex: Lexicon) -> tuple[str, str]:
    """(opener including its trailing space, rest). Only openers from the bank are recognised."""
    for opener in lex.openers:
        if body.startswith(opener + " "):
            return opener + " ", body[len(opener) + 1 :]
    return "", body


def _split_tail(rest: str, lex: Lexicon) -> tuple[str, str]:
    """Split ``rest`` (after the object/agent) into (head, tail) at the first comma, bank adjunct or 'with'."""
    cut = len(rest)
    comma = rest.find(", ")
    if comma >= 0:
        cut = comma
    for phrase in (*lex.tails, "with "):
        position = rest.find(" " + phrase if phrase != "with " else " with ")
        if 0 <= position < cut:
            cut = position
    for marker in lex.bank.time_markers:
        position = rest.find(" " + marker.lower())
        if 0 <= position < cut:
            cut = position
    return rest[:cut], rest[cut:]


# -- voice ----------------------------------------------------------------------------------------
_PASSIVE = re.compile(
    r"^(?P<pre>.*?)(?P<obj>\S.*?)\s+(?P<aux>(?:(?:may|might|could|must)\s+(?:have\s+been|be))|is|are|was|were)\s+"
    r"(?P<adv>(?:\w+ly\s+|indeed\s+|perhaps\s+|always\s+)?)(?P<pp>[a-z]+)\s+by\s+(?P<rest>.+)$"
)


def to_active(sentence: str) -> str | None:
    """'The plan was shaped by the team.' -> 'The team shaped the plan.' (None if no by-passive)."""
    lex = lexicon()
    body, end = _end(sentence)
    if end == "?":
        return None
    match = _PASSIVE.match(body)
    if not match:
        return None
    verb = lex.verb_of(match.group("pp"))
    if verb is None or match.group("pp") != verb[3]:
        return None
    pre, obj = match.group("pre"), match.group("obj")
    for candidate in lex.objects:  # prefer an exact object phrase from the bank as the clause subject
        if obj.endswith(candidate):
            pre, obj = pre + obj[: -len(candidate)], candidate
            break
    else:
        opener, rest_obj = _strip_opener(pre + obj, lex)
        pre, obj = opener, rest_obj
    agent, tail = _split_tail(match.group("rest"), lex)
    if not agent.strip():
        return None
    aux = match.group("aux")
    past = aux in ("was", "were") or "have been" in aux
    adverb = match.group("adv")
    agent_plural = is_plural(_SUBJECT_OF.get(agent, agent))
    if aux.startswith(("may", "might", "could", "must")):
        modal = aux.split()[0]
        verb_group = f"{modal} have {verb[3]}" if past else f"{modal} {verb[0]}"
    else:
        verb_group = verb[2] if past else (verb[0] if agent_plural else verb[1])
    subject = _SUBJECT_OF.get(agent, agent)
    subject = capitalize(subject) if not pre.strip() else _lower_first(subject, lex.names)
    obj_text = _lower_first(obj, lex.names)
    return f"{pre}{subject} {adverb}{verb_group} {obj_text}{tail}{end}"


def to_passive(sentence: str) -> str | None:
    """'The team shaped the plan.' -> 'The plan was shaped by the team.' (objects from the bank only)."""
    lex = lexicon()
    body, end = _end(sentence)
    if end == "?":
        return None
    words = body.split(" ")
    for i in range(1, len(words) - 1):
        verb = lex.verb_by_form.get(words[i])
        if verb is None:
            continue
        after = " ".join(words[i + 1 :])
        obj = next(
            (o for o in lex.objects if after == o or after.startswith(o + " ") or after.startswith(o + ",")),
            None,
        )
        if obj is None:
            continue
        forms = verb[0]
        head = words[:i]
        modal = ""
        adverb = ""
        if head and head[-1] == "have" and len(head) > 1 and head[-2] in ("may", "might", "could", "must"):
            modal, head = head[-2] + " have been", head[:-2]
        elif head and head[-1] in ("may", "might", "could", "must"):
            modal, head = head[-1] + " be", head[:-1]
        if head and head[-1] in lex.hedge_words + lex.booster_words:
            adverb, head = head[-1] + " ", head[:-1]
        opener, subject = _strip_opener(" ".join(head), lex)
        if "," in subject:
            extra, subject = subject.rsplit(", ", 1)
            opener += extra + ", "
        for frame_head in (" the day ", " the moment ", " the year ", " the week ", " the month "):
            if frame_head in " " + subject:
                extra, subject = (" " + subject).split(frame_head, 1)
                opener += (extra.strip() + frame_head).lstrip()
                break
        if not subject.strip():
            return None
        word = words[i]
        past = word == forms[2] and (word != forms[0] or not is_plural(subject)) and word != forms[1]
        if modal:
            verb_group = f"{modal} {forms[3]}"
        else:
            plural = obj in {np for np, pl in lex.bank.objects if pl}
            be = ("were" if plural else "was") if past else ("are" if plural else "is")
            verb_group = f"{be} {adverb}{forms[3]}"
            adverb = ""
        rest = after[len(obj) :]
        agent = _lower_first(subject, lex.names)
        new_obj = capitalize(obj) if not opener else obj
        return f"{opener}{new_obj} {verb_group} by {agent}{rest}{end}"
    return None


# -- stance ---------------------------------------------------------------------------------------
def _remove_word_group(sentence: str, words: tuple[str, ...], openers: tuple[str, ...]) -> str | None:
    lex = lexicon()
    for opener in sorted(openers, key=len, reverse=True):
        if sentence.startswith(opener + " "):
            return capitalize(sentence[len(opener) + 1 :])
    for word in words:
        pattern = re.compile(rf"\s{word}\s")
        if pattern.search(sentence):
            if word in ("may", "might", "could", "must"):
                replaced = re.sub(
                    rf"\s{word}\shave\s(been\s)?(\w+)", lambda m: _modal_have(m, lex), sentence, count=1
                )
                if replaced != sentence:
                    return replaced
                return None
            return pattern.sub(" ", sentence, count=1)
    return None


def _modal_have(match: re.Match, lex: Lexicon) -> str:
    been, participle = match.group(1), match.group(2)
    verb = lex.verb_of(participle)
    if verb is None:
        return match.group(0)
    return f" was {participle}" if been else f" {verb[2]}"


def add_opener(sentence: str, opener: str) -> str | None:
    """Put ``opener`` ('Perhaps', 'In fact,') in front unless the sentence already has a bank opener."""
    lex = lexicon()
    if _strip_opener(sentence, lex)[0] or sentence.endswith("?") or sentence.startswith('"'):
        return None
    return f"{opener} {_lower_first(sentence, lex.names)}"


def remove_hedge(sentence: str) -> str | None:
    bank = lexicon().bank
    return _remove_word_group(sentence, bank.hedges["adverbs"], bank.hedges["openers"])


def remove_booster(sentence: str) -> str | None:
    bank = lexicon().bank
    return _remove_word_group(sentence, bank.boosters["adverbs"], bank.boosters["openers"])


# -- questions ------------------------------------------------------------------------------------
def to_question(sentence: str) -> str | None:
    """Turn a statement into a yes/no question (no curiosity word is added).

    Be-fronting ("The plan is shaped by X." -> "Is the plan shaped by X?"), do-support for the bank's
    verbs ("X shapes Y." -> "Does X shape Y?"), else the frame "Is it the case that ...?".
    A leading time marker stays in front.
    """
    lex = lexicon()
    body, end = _end(sentence)
    if end == "?" or body.startswith('"'):
        return None
    opener, clause = _strip_opener(body, lex)
    keep = opener if opener[:-2] in lex.bank.time_markers else ""  # other openers are dropped
    question = _question_of(clause, lex) if "," not in clause else None
    if question is None:
        question = f"Is it the case that {_lower_first(clause, lex.names)}?"
    return f"{keep}{_lower_first(question, lex.names)}" if keep else question


def _question_of(clause: str, lex: Lexicon) -> str | None:
    words = clause.split(" ")
    for i, word in enumerate(words[1:7], start=1):
        if word in ("is", "are", "was", "were"):
            subject = _lower_first(" ".join(words[:i]), lex.names)
            return f"{capitalize(word)} {subject} {' '.join(words[i + 1 :])}?"
        if word in ("may", "might", "could", "must"):
            return None
        entry = lex.verb_by_form.get(word)
        if entry and (word in (entry[0][1], entry[0][2]) or word == entry[0][0]):
            verb = entry[0]
            subject = " ".join(words[:i])
            if word == verb[1]:
                aux = "Does"
            elif word == verb[2] and word != verb[0]:
                aux = "Did"
            else:
                aux = "Do" if is_plural(subject) else "Did"
            return f"{aux} {_lower_first(subject, lex.names)} {verb[0]} {' '.join(words[i + 1 :])}?"
    return None


_CASE = re.compile(r"^(?P<pre>(?:[A-Z][^,]*, )?)[Ii]s it the case that (?P<rest>.+)\?$")
_DO = re.compile(r"^(?P<pre>(?:[A-Z][^,]*, )?)(?P<aux>[Dd]oes|[Dd]o|[Dd]id) (?P<rest>.+)\?$")
_BE = re.compile(r"^(?P<pre>(?:[A-Z][^,]*, )?)(?P<aux>[Ii]s|[Aa]re|[Ww]as|[Ww]ere) (?P<rest>.+)\?$")


def to_statement(sentence: str) -> str | None:
    """Undo ``to_question``: yes/no questions back into statements (None for other questions)."""
    lex = lexicon()
    match = _CASE.match(sentence)
    if match:
        rest = match.group("rest")
        return f"{match.group('pre')}{rest}." if match.group("pre") else capitalize(rest) + "."
    match = _DO.match(sentence)
    if match:
        words = match.group("rest").split(" ")
        for i, word in enumerate(words[1:], start=1):
            entry = lex.verb_by_form.get(word)
            if entry and word == entry[0][0]:
                verb = entry[0]
                subject = " ".join(words[:i])
                aux = match.group("aux").lower()
                form = verb[2] if aux == "did" else (verb[0] if aux == "do" else verb[1])
                clause = f"{subject} {form} {' '.join(words[i + 1 :])}."
                return f"{match.group('pre')}{clause}" if match.group("pre") else capitalize(clause)
        return None
    match = _BE.match(sentence)
    if match:
        rest = match.group("rest")
        for obj in lex.objects:
            if rest.startswith(obj + " "):
                clause = f"{obj} {match.group('aux').lower()} {rest[len(obj) + 1 :]}."
                return f"{match.group('pre')}{clause}" if match.group("pre") else capitalize(clause)
    return None


# -- figurative, curiosity tags ------------------------------------------------------------------
def add_tail(sentence: str, tail: str) -> str | None:
    """Append ", {tail}" (a simile or curiosity tag) unless the sentence is a question or has one."""
    body, end = _end(sentence)
    if end == "?" or '"' in body or len(body.split()) >= MAX_WORDS or any(", " + t in body for t in _tails()):
        return None
    return f"{body}, {tail}{end}"


def _tails() -> tuple[str, ...]:
    bank = lexicon().bank
    return (*bank.similes, *bank.curiosity_tags)


def remove_tail(sentence: str, tails: tuple[str, ...]) -> str | None:
    for tail in tails:
        if ", " + tail in sentence:
            return sentence.replace(", " + tail, "", 1)
    return None


# -- narrative ------------------------------------------------------------------------------------
def _previous_non_adverb(words: list[str], i: int, lex: Lexicon) -> str:
    j = i - 1
    while j > 0 and lex.is_adverb(words[j].lower()):
        j -= 1
    return words[j].lower() if j >= 0 else ""


_BE_OR_HAVE = ("is", "are", "was", "were", "been", "be", "have")
_BEFORE_BARE_VERB = ("to", "did", "do", "does", "may", "might", "could", "must", "be")


def to_past(sentence: str) -> str | None:
    """Present -> past tense for the bank's verbs, be and do-support; None if nothing changed (or a question)."""

    def past(words: list[str], i: int, bare: str, verb: tuple[str, ...]) -> str | None:
        previous = _previous_non_adverb(words, i, lexicon())
        if bare == verb[0] and previous in _BE_OR_HAVE:
            return None
        if bare == verb[1] or (bare == verb[0] and previous not in _BEFORE_BARE_VERB):
            return verb[2]
        return None

    return _retense(sentence, {**_BE_PRESENT, "does": "did", "do": "did"}, past, to_past=True)


def to_present(sentence: str) -> str | None:
    """Past -> present tense for the bank's verbs and be/do; None if nothing changed (or a question)."""

    def present(words: list[str], i: int, bare: str, verb: tuple[str, ...]) -> str | None:
        previous = _previous_non_adverb(words, i, lexicon())
        if bare == verb[2] and verb[2] != verb[0] and previous not in _BE_OR_HAVE:
            return verb[0] if is_plural(" ".join(words[max(0, i - 3) : i])) else verb[1]
        return None

    return _retense(sentence, {**_BE_PAST, "did": "does"}, present, to_past=False)


def _retense(
    sentence: str,
    auxiliaries: dict[str, str],
    retense_verb: Callable[[list[str], int, str, tuple[str, ...]], str | None],
    to_past: bool,
) -> str | None:
    """Swap tense word by word: ``auxiliaries`` (be/do forms) by table, the bank's verbs by ``retense_verb``
    (word list, index, bare word, the verb's (base, 3rd person, past) forms -> new form or None), then
    the bank's subordinate clauses; None if nothing changed or the sentence is a question."""
    if sentence.endswith("?"):
        return None
    lex = lexicon()
    words = sentence.split(" ")
    changed = False
    for i, word in enumerate(words):
        bare = word.rstrip(",.!?")
        punct = word[len(bare) :]
        if bare in auxiliaries:
            new = auxiliaries[bare]
        elif bare in lex.verb_by_form and i > 0:
            new = retense_verb(words, i, bare, lex.verb_by_form[bare][0])
        else:
            new = None
        if new is not None:
            words[i] = new + punct
            changed = True
    result = " ".join(words)
    for present, past in _subordinate_pairs():
        old, new = (present, past) if to_past else (past, present)
        if old in result:
            result, changed = result.replace(old, new), True
    return result if changed else None


def _subordinate_pairs() -> list[tuple[str, str]]:
    bank = lexicon().bank
    return [(a, b) for a, b in zip(bank.subordinates["present"], bank.subordinates["past"]) if a != b]


def remove_narrator(sentence: str) -> str | None:
    """Drop a narrator opener ("As she recalled, ...")."""
    for opener in lexicon().bank.narrator_openers:
        if sentence.startswith(opener + " "):
            return capitalize(sentence[len(opener) + 1 :])
    return None


def remove_time_marker(sentence: str) -> str | None:
    lex = lexicon()
    for marker in lex.bank.time_markers:
        if sentence.startswith(marker + ", "):
            return capitalize(sentence[len(marker) + 2 :])
        lowered = " " + marker.lower()
        for end in (".", "!", "?"):
            if sentence.endswith(lowered + end):
                return sentence[: -len(lowered + end)] + end
    return None


# -- cadence --------------------------------------------------------------------------------------
MAX_WORDS = 30
"""Edits that lengthen a sentence leave sentences of this many words alone."""


def add_adjunct(sentence: str, adjunct: str) -> str | None:
    """Add an adverbial phrase before any trailing simile or tag (None for dialogue or long sentences)."""
    body, end = _end(sentence)
    if '"' in body or len(body.split()) >= MAX_WORDS or adjunct in body:
        return None
    for marker in (", like ", ", as ", ", which ", ", and "):
        index = body.find(marker)
        if index > 0:
            return f"{body[:index]} {adjunct}{body[index:]}{end}"
    return f"{body} {adjunct}{end}"


def remove_adjunct(sentence: str) -> str | None:
    lex = lexicon()
    for tail in lex.tails:
        if " " + tail in sentence:
            return sentence.replace(" " + tail, "", 1)
    return None


def merge(first: str, second: str) -> str | None:
    """'A. B.' -> 'A, and b.' for two statements ending in a full stop."""
    body, end = _end(first)
    if end != "." or not second.endswith(".") or '"' in first + second:
        return None
    return f"{body}, and {_lower_first(second, lexicon().names)}"


def split(sentence: str) -> list[str] | None:
    """Split at ', and ' or before 'because ...' into two sentences; None if there is no seam."""
    body, end = _end(sentence)
    if ", and " in body:
        left, right = body.split(", and ", 1)
        if len(left.split()) >= 3 and len(right.split()) >= 3:
            return [left + ".", capitalize(right) + end]
    if " because " in body:
        left, right = body.split(" because ", 1)
        if len(left.split()) >= 3:
            return [left + ".", f"That is because {right}{end}"]
    return None


# -- wording: valence and intensity ------------------------------------------------------------
def swap_verb(sentence: str, tone_from: str, tone_to: str, rng: random.Random) -> str | None:
    """Swap one verb of tone ``tone_from`` for one of ``tone_to`` in the same form."""
    lex = lexicon()
    words = sentence.split(" ")
    indices = [
        i
        for i, w in enumerate(words)
        if i > 0
        and lex.verb_by_form.get(w.rstrip(",.!?"), (None, ""))[1] == tone_from
        and words[i - 1].lower() not in _DETERMINERS
    ]
    if not indices:
        return None
    i = rng.choice(indices)
    bare = words[i].rstrip(",.!?")
    verb = lex.verb_by_form[bare][0]
    position = verb.index(bare)
    replacement = rng.choice(lex.bank.verbs[tone_to])
    words[i] = replacement[position] + words[i][len(bare) :]
    return " ".join(words)


def swap_adjective(sentence: str, group_from: str, group_to: str, rng: random.Random) -> str | None:
    bank = lexicon().bank
    for adjective in bank.adjectives[group_from]:
        pattern = re.compile(rf"\b{adjective}\b")
        if pattern.search(sentence):
            replacement = rng.choice(bank.adjectives[group_to])
            return pattern.sub(replacement, sentence, count=1)
    return None


def set_exclamation(sentence: str, on: bool) -> str | None:
    """End a statement with "!" (``on``) or "." instead; None for questions and dialogue."""
    body, end = _end(sentence)
    if '"' in body:
        return None
    if on and end == ".":
        return body + "!"
    if not on and end == "!":
        return body + "."
    return None


def remove_intensifier(sentence: str) -> str | None:
    for word in lexicon().bank.intensifiers:
        if f" {word} " in sentence:
            return sentence.replace(f" {word} ", " ", 1)
    return None


def add_intensifier(sentence: str, rng: random.Random) -> str | None:
    bank = lexicon().bank
    adjectives = [
        a for group, items in bank.adjectives.items() if "strong" in group or "mild" in group for a in items
    ]
    for adjective in adjectives:
        if f" {adjective} " in sentence or sentence.endswith(f" {adjective}."):
            if any(f" {w} {adjective}" in sentence for w in bank.intensifiers):
                return None
            return sentence.replace(f" {adjective}", f" {rng.choice(bank.intensifiers)} {adjective}", 1)
    return None


# -- people ---------------------------------------------------------------------------------------
_SUBJECT_PRONOUN = {True: ("They", "We"), False: ("She", "He")}
_OBJECT_PRONOUN = {"They": "them", "We": "us", "She": "her", "He": "him"}


def agent_to_pronoun(sentence: str, rng: random.Random) -> str | None:
    """Replace a bank agent ("the engineers", "Maya") with a person pronoun (they/we/she/he, them/us)."""
    lex = lexicon()
    people = [(np, plural) for np, plural in lex.bank.agents if plural] + [
        (name, False) for name in lex.bank.characters
    ]
    for np, plural in people:
        start = capitalize(np) + " "
        if sentence.startswith(start):
            pronoun = rng.choice(_SUBJECT_PRONOUN[plural])
            return pronoun + " " + sentence[len(start) :]
        for preposition in (" by ", " for "):
            if preposition + np in sentence:
                pronoun = _OBJECT_PRONOUN[rng.choice(_SUBJECT_PRONOUN[plural])]
                return sentence.replace(preposition + np, preposition + pronoun, 1)
    return None


def pronoun_to_agent(sentence: str, rng: random.Random) -> str | None:
    """Replace a person pronoun subject or by/for-object with a bank agent (the reverse edit)."""
    lex = lexicon()
    plural_agents = [np for np, plural in lex.bank.agents if plural]
    for pronoun, plural in (("They ", True), ("We ", True), ("She ", False), ("He ", False)):
        if sentence.startswith(pronoun):
            agent = rng.choice(plural_agents) if plural else rng.choice(lex.bank.characters)
            return capitalize(agent) + " " + sentence[len(pronoun) :]
    for pronoun in ("them", "us", "her", "him"):
        for preposition in (" by ", " for "):
            if f"{preposition}{pronoun} " in sentence or sentence.endswith(f"{preposition}{pronoun}."):
                agent = (
                    rng.choice(plural_agents)
                    if pronoun in ("them", "us")
                    else rng.choice(lex.bank.characters)
                )
                return re.sub(rf"{preposition}{pronoun}\b", preposition + agent, sentence, count=1)
    return None


# -- tone phrases ---------------------------------------------------------------------------------
_TONE_PHRASE = re.compile(r" with (?:\w+ )?(?P<adj>\w+) (?:results|consequences)")


def add_tone_phrase(sentence: str, positive: bool, strong: bool, rng: random.Random) -> str | None:
    """Add "with good results" / "with painful consequences" (one more sentiment word)."""
    if "?" in sentence or _TONE_PHRASE.search(sentence):
        return None
    group = ("positive" if positive else "negative") + ("_strong" if strong else "_mild")
    adjective = rng.choice(lexicon().bank.adjectives[group])
    return add_adjunct(sentence, f"with {adjective} {'results' if positive else 'consequences'}")


def remove_tone_phrase(sentence: str, positive: bool) -> str | None:
    """Drop a "with ... results" (``positive``) or "with ... consequences" phrase."""
    match = _TONE_PHRASE.search(sentence)
    if match is None or match.group(0).endswith("results") != positive:
        return None
    return sentence[: match.start()] + sentence[match.end() :]


def add_clause(sentence: str, rng: random.Random) -> str | None:
    """Add a subordinate clause with a finite verb in the sentence's tense (one more verb group)."""
    lex = lexicon()
    words = {w.strip(",.!?").lower() for w in sentence.split()}
    past = bool(words & {"was", "were", "did"}) or any(
        w in lex.verb_by_form and w == lex.verb_by_form[w][0][2] != lex.verb_by_form[w][0][0] for w in words
    )
    options = (
        lex.bank.subordinates["past"]
        if past
        else [c for c in lex.bank.subordinates["present"] if " is " in c or " are " in c]
    )
    options = [c for c in options if c not in sentence]
    if not options or any(
        c in sentence for c in (*lex.bank.subordinates["present"], *lex.bank.subordinates["past"])
    ):
        return None
    return add_adjunct(sentence, rng.choice(options))
