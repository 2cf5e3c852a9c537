"""The built-in backend: composes original English sentences from the phrase bank, no model weights.

Each sentence is realised from a ``SentenceSpec`` whose fields are the HRV handles: length (cadence),
tone (valence and intensity), stance (hedge or booster), question (curiosity), simile (figurative
language), narrative (past tense, time markers, characters) and passive (voice). The same seed gives
the same text; no sentence repeats within one ``Composition``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from resonance_os.generation.backends.phrase_bank import NounPhrase, PhraseBank, Verb, load_phrase_bank

T = TypeVar("T")

_PLURAL_EXCEPTIONS = ("ss", "us", "is", "ics", "news")


@dataclass(frozen=True)
class SentenceSpec:
    """What one sentence should do, field by field (the HRV 'controls' of the built-in backend).

    kind: ``statement``, ``question``, ``evaluation`` (an adjective verdict), ``short`` (2-4 words) or
    ``dialogue`` (a quoted line with a speech tag, always narrative).
    words: target length in words (reached approximately with adjuncts and clauses).
    tone: -2 strong negative, -1 negative, 0 neutral, 1 positive, 2 strong positive.
    stance: -1 hedged, 0 plain, 1 boosted.  exclaim: end with "!".
    """

    kind: str = "statement"
    words: int = 12
    tone: int = 0
    stance: int = 0
    simile: bool = False
    narrative: bool = False
    passive: bool = False
    exclaim: bool = False
    curious: bool = False
    topic: bool = True


def is_plural(phrase: str) -> bool:
    """Rough number agreement for a noun phrase: plural when its last word ends in a plain ``s``."""
    last = phrase.split()[-1].lower() if phrase.split() else ""
    if last in {"people", "children", "men", "women", "data", "media", "we", "they"}:
        return True
    return last.endswith("s") and not last.endswith(_PLURAL_EXCEPTIONS)


def capitalize(text: str) -> str:
    """Upper-case the first character only (``str.capitalize`` would lower-case names)."""
    return text[:1].upper() + text[1:] if text else text


@dataclass
class Composition:
    """The state of one article being composed: seeded RNG, topic phrases, usage counts, sentences so far."""

    topics: list[str]
    rng: random.Random
    usage: dict[str, list[int]] = field(default_factory=dict)
    sentences: set[str] = field(default_factory=set)

    def pick(self, key: str, items: Sequence[T]) -> T:
        """A random item among the least used so far under ``key`` (keeps an article varied)."""
        counts = self.usage.setdefault(key, [])
        if len(counts) < len(items):
            counts.extend([0] * (len(items) - len(counts)))
        low = min(counts[: len(items)])
        index = self.rng.choice([i for i, c in enumerate(counts[: len(items)]) if c == low])
        counts[index] += 1
        return items[index]


class BuiltinComposer:
    """Realises ``SentenceSpec`` s as English sentences from the phrase bank (deterministic per seed)."""

    name = "builtin"

    def __init__(self, bank: PhraseBank | None = None) -> None:
        self.bank = bank or load_phrase_bank()

    def start(self, topics: Sequence[str], seed: int | None = None) -> Composition:
        """Begin an article about ``topics`` (non-empty list of phrases); ``seed`` fixes every choice."""
        return Composition(topics=list(topics) or ["this topic"], rng=random.Random(seed))

    def realize(self, spec: SentenceSpec, state: Composition) -> str:
        """One sentence for ``spec``, never one already used in ``state`` (retries with new picks)."""
        sentence = ""
        for attempt in range(8):
            sentence = self._realize_once(spec if attempt < 6 else replace(spec, kind="statement"), state)
            if sentence not in state.sentences:
                break
        state.sentences.add(sentence)
        return sentence

    # -- pieces ---------------------------------------------------------------------------------
    def _topic_subject(self, state: Composition) -> NounPhrase:
        topic = state.pick("topic", state.topics)
        frame = state.pick("frame", self.bank.topic_frames)
        phrase = frame.format(topic=topic)
        return phrase, (frame == "{topic}" and is_plural(topic))

    def _subject(self, spec: SentenceSpec, state: Composition) -> NounPhrase:
        if spec.topic:
            return self._topic_subject(state)
        if spec.narrative:
            roll = state.rng.random()
            if roll < 0.45:
                return state.pick("pronoun", self.bank.pronouns)
            if roll < 0.8:
                return state.pick("character", self.bank.characters), False
        return state.pick("agent", self.bank.agents)

    def _verb(self, tone: int, state: Composition) -> Verb:
        group = "positive" if tone > 0 else "negative" if tone < 0 else "neutral"
        return state.pick("verb-" + group, self.bank.verbs[group])

    def _adjective(self, tone: int, state: Composition) -> str:
        group = ("positive" if tone > 0 else "negative") + ("_strong" if abs(tone) >= 2 else "_mild")
        return state.pick("adj-" + group, self.bank.adjectives[group])

    @staticmethod
    def _be(plural: bool, past: bool) -> str:
        if past:
            return "were" if plural else "was"
        return "are" if plural else "is"

    def _clause(self, spec: SentenceSpec, state: Composition, stance_inline: bool) -> str:
        """Subject-verb-object core in the spec's voice and tense, with an inline hedge or booster."""
        past = spec.narrative
        subject, subject_plural = self._subject(spec, state)
        obj, obj_plural = state.pick("object", self.bank.objects)
        base, third, past_form, participle = self._verb(spec.tone, state)
        adverb = modal = ""
        if stance_inline and spec.stance:
            bank = self.bank.hedges if spec.stance < 0 else self.bank.boosters
            if spec.stance < 0 and state.rng.random() < 0.5:
                modal = state.pick("hedge-modal", bank["modals"])
            else:
                adverb = (
                    state.pick(("hedge" if spec.stance < 0 else "booster") + "-adverb", bank["adverbs"]) + " "
                )
        if spec.passive:
            agent = self.bank.pronoun_objects.get(subject, subject)
            if modal:
                verb_group = f"{modal} have been {participle}" if past else f"{modal} be {participle}"
            else:
                verb_group = f"{self._be(obj_plural, past)} {adverb}{participle}"
            return f"{obj} {verb_group} by {agent}"
        if modal:
            verb_group = f"{modal} have {participle}" if past else f"{modal} {base}"
        else:
            verb_group = adverb + (past_form if past else (base if subject_plural else third))
        return f"{subject} {verb_group} {obj}"

    def _extend(self, core: str, spec: SentenceSpec, state: Composition) -> str:
        """Add a tone phrase, adjunct and subordinate clause until ``spec.words`` is roughly reached."""
        parts = [core]
        if abs(spec.tone) >= 2 and spec.kind == "statement":
            adj = self._adjective(spec.tone, state)
            parts.append(f"with {adj} results" if spec.tone > 0 else f"with {adj} consequences")
        tense = "past" if spec.narrative else "present"
        pieces = (
            ("adjunct", self.bank.adjuncts),
            ("subordinate", self.bank.subordinates[tense]),
            ("adjunct", self.bank.adjuncts),
        )
        length = len(" ".join(parts).split())
        for key, items in pieces:
            if length + 3 > spec.words:
                break
            piece = state.pick(key, items)
            parts.append(piece)
            length += len(piece.split())
        return " ".join(parts)

    def _opener(self, spec: SentenceSpec, state: Composition) -> tuple[str, bool, str]:
        """(sentence opener, whether the stance still needs an inline word, trailing time marker)."""
        rng = state.rng
        time_marker = state.pick("time", self.bank.time_markers) if spec.narrative else ""
        if spec.stance and (rng.random() < 0.5 or spec.kind != "statement"):
            bank = self.bank.hedges if spec.stance < 0 else self.bank.boosters
            opener = state.pick(("hedge" if spec.stance < 0 else "booster") + "-opener", bank["openers"])
            return opener, False, time_marker
        if time_marker and rng.random() < 0.7:
            return time_marker + ",", bool(spec.stance), ""
        if abs(spec.tone) >= 1 and spec.kind == "statement" and rng.random() < 0.35:
            key = "positive" if spec.tone > 0 else "negative"
            opener = state.pick("eval-" + key, self.bank.evaluative_openers[key])
            return opener, bool(spec.stance), time_marker
        return "", bool(spec.stance), time_marker

    def _lower_first(self, text: str) -> str:
        """Lower-case the first letter unless the sentence starts with a name or an acronym."""
        first = text.split(" ", 1)[0].rstrip(",")
        if first in self.bank.characters or first == "I" or (len(first) > 1 and first.isupper()):
            return text
        return text[:1].lower() + text[1:]

    @staticmethod
    def _join_opener(opener: str, body: str) -> str:
        """``opener`` ("One morning,", "Perhaps") in front of ``body``, or ``body`` capitalised."""
        return f"{opener} {body}" if opener else capitalize(body)

    def _finish(self, body: str, spec: SentenceSpec, state: Composition, question: bool = False) -> str:
        if spec.simile:
            body += ", " + state.pick("simile", self.bank.similes)
        if spec.curious and not question:
            body += ", " + state.pick("curiosity-tag", self.bank.curiosity_tags)
        end = "?" if question else "!" if spec.exclaim else "."
        return capitalize(body) + end

    # -- sentence kinds -------------------------------------------------------------------------
    def _realize_once(self, spec: SentenceSpec, state: Composition) -> str:
        if spec.kind == "question":
            return self._question(spec, state)
        if spec.kind == "evaluation" and spec.tone:
            return self._evaluation(spec, state)
        if spec.kind == "short":
            return self._short(spec, state)
        if spec.kind == "dialogue":
            return self._dialogue(spec, state)
        return self._statement(spec, state)

    def _statement(self, spec: SentenceSpec, state: Composition) -> str:
        opener, stance_inline, trailing_time = self._opener(spec, state)
        if spec.narrative and not opener and state.rng.random() < 0.45:
            frame = state.pick("narrative-frame", self.bank.narrative_frames)
            opener = frame.format(
                name=state.pick("character", self.bank.characters),
                role=state.pick("role", self.bank.character_roles),
            )
        core = self._clause(spec, state, stance_inline)
        body = self._extend(core, spec, state)
        if trailing_time:
            body += (
                " " + trailing_time[:1].lower() + trailing_time[1:]
                if not trailing_time.startswith("In ")
                else " " + trailing_time.lower()
            )
        return self._finish(self._join_opener(opener, body), spec, state)

    def _question(self, spec: SentenceSpec, state: Composition) -> str:
        tense = "past" if spec.narrative else "present"
        subject, subject_plural = self._subject(spec, state)
        obj, obj_plural = state.pick("object", self.bank.objects)
        base, third, past_form, participle = self._verb(spec.tone, state)
        agent, _ = state.pick("agent", self.bank.agents)
        if spec.passive and not spec.curious:
            frame = state.pick("passive-question", self.bank.passive_questions)
            agent_text = self.bank.pronoun_objects.get(subject, subject)
            body = frame.format(
                obj=obj, be=self._be(obj_plural, spec.narrative), pp=participle, subj=agent_text
            )
        else:
            bank = self.bank.curious_questions if spec.curious else self.bank.questions
            template = state.pick(("curious-" if spec.curious else "question-") + tense, bank[tense])
            does = "do" if subject_plural else "does"
            body = template.format(
                subj=subject,
                verb=base,
                verb3=base if subject_plural else third,
                verbd=past_form,
                obj=obj,
                agent=agent,
                does=does,
                Does=does.capitalize(),
            )
        if len(body.split()) + 3 < spec.words:
            body += " " + state.pick("adjunct", self.bank.adjuncts)
        return self._finish(body, replace(spec, curious=False), state, question=True)

    def _evaluation(self, spec: SentenceSpec, state: Composition) -> str:
        tense = "past" if spec.narrative else "present"
        template = state.pick("evaluation-" + tense, self.bank.evaluations[tense])
        adj = self._adjective(spec.tone, state)
        if abs(spec.tone) >= 2 and (spec.exclaim or state.rng.random() < 0.5):
            adj = state.pick("intensifier", self.bank.intensifiers) + " " + adj
        agent, agent_plural = state.pick("agent", self.bank.agents)
        obj, _ = state.pick("object", self.bank.objects)
        body = template.format(adj=adj, agent=agent, agent_cap=capitalize(agent), obj=obj)
        if not agent_plural:
            body = body.replace(f"{capitalize(agent)} find ", f"{capitalize(agent)} finds ")
        if spec.stance:
            bank = self.bank.hedges if spec.stance < 0 else self.bank.boosters
            opener = state.pick(("hedge" if spec.stance < 0 else "booster") + "-opener", bank["openers"])
            body = self._join_opener(opener, self._lower_first(body))
        if len(body.split()) + 3 < spec.words:
            body += " " + state.pick("adjunct", self.bank.adjuncts)
        return self._finish(body, spec, state)

    def _short(self, spec: SentenceSpec, state: Composition) -> str:
        tense = "past" if spec.narrative else "present"
        body = state.pick("short-" + tense, self.bank.short[tense])
        if spec.stance:
            bank = self.bank.hedges if spec.stance < 0 else self.bank.boosters
            word = state.pick(("hedge" if spec.stance < 0 else "booster") + "-opener", bank["openers"])
            body = f"{word} {self._lower_first(body)}"
        return self._finish(body, replace(spec, simile=False, curious=False), state)

    def _dialogue(self, spec: SentenceSpec, state: Composition) -> str:
        line = state.pick("dialogue-line", self.bank.dialogue["lines"])
        tag = state.pick("dialogue-tag", self.bank.dialogue["tags"])
        tag = tag.format(name=state.pick("character", self.bank.characters))
        mark = "!" if spec.exclaim else ","
        return f'"{line}{mark}" {tag}.'
