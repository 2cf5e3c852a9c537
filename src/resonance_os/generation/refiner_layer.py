"""RefinerLayer: measurable edits toward a target HRV, and the measure -> refine loop.

``refine(text, feedback)`` applies one round of edits: for each dimension whose gap (target minus
measured) exceeds the tolerance, one edit that moves that dimension in the gap's direction (see
``resonance_os.generation.edits``). ``refine_to_target(text, target)`` iterates measure -> edit ->
measure, keeping an edit only when it lowers the mean absolute error to the target, until every
dimension is within tolerance, no edit helps, or the step budget ends.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache

from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_constants import HRV_DIM, HRV_DIMENSIONS
from resonance_os.core.hrv_types import validate_hrv
from resonance_os.generation import edits as E
from resonance_os.generation.backends.builtin import BuiltinComposer, SentenceSpec

Proposal = Callable[[list[str], random.Random], "list[str] | None"]

DEFAULT_TOLERANCE = 0.015
"""Per-dimension distance to the target at which a paragraph counts as on target."""
DEFAULT_MAX_STEPS = 24
"""Accepted-or-rejected edit attempts (each costs one measurement) per paragraph."""


def _on_sentence(edit: Callable[[str, random.Random], str | list[str] | None]) -> Proposal:
    """Lift a sentence edit to a paragraph: try the sentences in random order, first that applies wins."""

    def propose(sentences: list[str], rng: random.Random) -> list[str] | None:
        order = list(range(len(sentences)))
        rng.shuffle(order)
        for i in order:
            edited = edit(sentences[i], rng)
            if edited is None or edited == sentences[i]:
                continue
            replacement = edited if isinstance(edited, list) else [edited]
            candidate = sentences[:i] + replacement + sentences[i + 1 :]
            if len(set(candidate)) == len(candidate):
                return candidate
        return None

    propose.__name__ = getattr(edit, "__name__", "edit")
    return propose


def _named(name: str, fn: Callable) -> Callable:
    fn.__name__ = name
    return fn


def _by_length(pick_longest: bool, edit: Callable[[str, random.Random], str | None], name: str) -> Proposal:
    """Apply ``edit`` to the longest (or shortest) sentence it changes."""

    def propose(sentences: list[str], rng: random.Random) -> list[str] | None:
        order = sorted(range(len(sentences)), key=lambda i: len(sentences[i].split()), reverse=pick_longest)
        for i in order:
            edited = edit(sentences[i], rng)
            if edited is not None and edited != sentences[i] and edited not in sentences:
                return sentences[:i] + [edited] + sentences[i + 1 :]
        return None

    propose.__name__ = name
    return propose


def _merge_shortest(sentences: list[str], rng: random.Random) -> list[str] | None:
    if len(sentences) < 3:
        return None
    pairs = sorted(
        range(len(sentences) - 1), key=lambda i: len(sentences[i].split()) + len(sentences[i + 1].split())
    )
    for i in pairs:
        merged = E.merge(sentences[i], sentences[i + 1])
        if merged:
            return sentences[:i] + [merged] + sentences[i + 2 :]
    return None


def _insert_short(sentences: list[str], rng: random.Random) -> list[str] | None:
    bank = E.lexicon().bank
    tense = "past" if any(" was " in s or " were " in s for s in sentences) else "present"
    options = [s + "." for s in bank.short[tense] if s + "." not in sentences]
    if not options:
        return None
    position = rng.randrange(1, len(sentences) + 1)
    return sentences[:position] + [rng.choice(options)] + sentences[position:]


def _add_plain_sentence(sentences: list[str], rng: random.Random) -> list[str] | None:
    """Dilute every rate (similes, questions, passives, past tense per word) with one plain sentence."""
    composer = _plain_composer()
    state = composer.start(["the work"], seed=rng.getrandbits(32))
    state.sentences.update(sentences)
    sentence = composer.realize(SentenceSpec(words=rng.randint(8, 14), topic=False), state)
    position = rng.randrange(1, len(sentences) + 1)
    return sentences[:position] + [sentence] + sentences[position:]


def _drop_plain_sentence(sentences: list[str], rng: random.Random) -> list[str] | None:
    """Concentrate every rate by dropping the shortest sentence after the first."""
    if len(sentences) < 4:
        return None
    index = min(range(1, len(sentences)), key=lambda i: len(sentences[i].split()))
    return sentences[:index] + sentences[index + 1 :]


def _drop_dialogue(sentences: list[str], rng: random.Random) -> list[str] | None:
    """Remove a line of dialogue (the strongest single storytelling marker)."""
    for index in range(1, len(sentences)):
        if sentences[index].startswith('"'):
            return sentences[:index] + sentences[index + 1 :]
    return None


@cache
def _plain_composer() -> BuiltinComposer:
    return BuiltinComposer()


def _pick(items: Sequence[str], rng: random.Random) -> str:
    return items[rng.randrange(len(items))]


def _edit(name: str, fn: Callable[[str, random.Random], str | list[str] | None]) -> Proposal:
    """A named sentence edit lifted to paragraphs (see ``_on_sentence``)."""
    return _on_sentence(_named(name, fn))


def _catalogue() -> dict[tuple[int, int], list[Proposal]]:
    """Edits per (dimension index, direction +1/-1), most targeted first."""
    bank = E.lexicon().bank
    adjuncts, openers = bank.adjuncts, bank.evaluative_openers
    return {
        (0, +1): [
            _by_length(True, lambda s, r: E.add_adjunct(s, _pick(adjuncts, r)), "lengthen_longest"),
            _by_length(False, lambda s, r: E.remove_adjunct(s), "shorten_shortest"),
            _insert_short,
            _edit("split", lambda s, r: E.split(s)),
        ],
        (0, -1): [
            _by_length(False, lambda s, r: E.add_adjunct(s, _pick(adjuncts, r)), "lengthen_shortest"),
            _by_length(True, lambda s, r: E.remove_adjunct(s), "shorten_longest"),
            _merge_shortest,
        ],
        (1, +1): [
            _edit("negative_to_neutral_verb", lambda s, r: E.swap_verb(s, "negative", "neutral", r)),
            _edit("neutral_to_positive_verb", lambda s, r: E.swap_verb(s, "neutral", "positive", r)),
            _edit("warmer_adjective", lambda s, r: E.swap_adjective(s, "negative_mild", "positive_mild", r)),
            _edit("positive_opener", lambda s, r: E.add_opener(s, _pick(openers["positive"], r))),
            _edit("drop_negative_phrase", lambda s, r: E.remove_tone_phrase(s, False)),
            _edit("add_positive_phrase", lambda s, r: E.add_tone_phrase(s, True, False, r)),
        ],
        (1, -1): [
            _edit("positive_to_neutral_verb", lambda s, r: E.swap_verb(s, "positive", "neutral", r)),
            _edit("neutral_to_negative_verb", lambda s, r: E.swap_verb(s, "neutral", "negative", r)),
            _edit("colder_adjective", lambda s, r: E.swap_adjective(s, "positive_mild", "negative_mild", r)),
            _edit("negative_opener", lambda s, r: E.add_opener(s, _pick(openers["negative"], r))),
            _edit("drop_positive_phrase", lambda s, r: E.remove_tone_phrase(s, True)),
            _edit("add_negative_phrase", lambda s, r: E.add_tone_phrase(s, False, False, r)),
        ],
        (2, +1): [
            _edit(
                "stronger_positive", lambda s, r: E.swap_adjective(s, "positive_mild", "positive_strong", r)
            ),
            _edit(
                "stronger_negative", lambda s, r: E.swap_adjective(s, "negative_mild", "negative_strong", r)
            ),
            _edit("add_intensifier", E.add_intensifier),
            _edit("exclaim", lambda s, r: E.set_exclamation(s, True)),
            _edit("neutral_to_positive_verb", lambda s, r: E.swap_verb(s, "neutral", "positive", r)),
            _edit("neutral_to_negative_verb", lambda s, r: E.swap_verb(s, "neutral", "negative", r)),
            _edit("add_strong_positive_phrase", lambda s, r: E.add_tone_phrase(s, True, True, r)),
            _edit("add_strong_negative_phrase", lambda s, r: E.add_tone_phrase(s, False, True, r)),
        ],
        (2, -1): [
            _edit("remove_intensifier", lambda s, r: E.remove_intensifier(s)),
            _edit("calm_exclamation", lambda s, r: E.set_exclamation(s, False)),
            _edit("milder_positive", lambda s, r: E.swap_adjective(s, "positive_strong", "positive_mild", r)),
            _edit("milder_negative", lambda s, r: E.swap_adjective(s, "negative_strong", "negative_mild", r)),
            _edit("positive_to_neutral_verb", lambda s, r: E.swap_verb(s, "positive", "neutral", r)),
            _edit("negative_to_neutral_verb", lambda s, r: E.swap_verb(s, "negative", "neutral", r)),
            _edit("drop_positive_phrase", lambda s, r: E.remove_tone_phrase(s, True)),
            _edit("drop_negative_phrase", lambda s, r: E.remove_tone_phrase(s, False)),
        ],
        (3, +1): [
            _edit("remove_hedge", lambda s, r: E.remove_hedge(s)),
            _edit("add_booster", lambda s, r: E.add_opener(s, _pick(bank.boosters["openers"], r))),
        ],
        (3, -1): [
            _edit("remove_booster", lambda s, r: E.remove_booster(s)),
            _edit("add_hedge", lambda s, r: E.add_opener(s, _pick(bank.hedges["openers"], r))),
        ],
        (4, +1): [
            _edit("to_question", lambda s, r: E.to_question(s)),
            _edit("add_curiosity", lambda s, r: E.add_tail(s, _pick(bank.curiosity_tags, r))),
        ],
        (4, -1): [
            _edit("remove_curiosity", lambda s, r: E.remove_tail(s, bank.curiosity_tags)),
            _edit("to_statement", lambda s, r: E.to_statement(s)),
        ],
        (5, +1): [
            _edit("add_simile", lambda s, r: E.add_tail(s, _pick(bank.similes, r))),
            _drop_plain_sentence,
        ],
        (5, -1): [_edit("remove_simile", lambda s, r: E.remove_tail(s, bank.similes)), _add_plain_sentence],
        (6, +1): [
            _edit("to_past", lambda s, r: E.to_past(s)),
            _edit("add_time_marker", lambda s, r: E.add_opener(s, _pick(bank.time_markers, r) + ",")),
            _edit("agent_to_pronoun", E.agent_to_pronoun),
            _edit("add_narrator", lambda s, r: E.add_opener(s, _pick(bank.narrator_openers, r))),
        ],
        (6, -1): [
            _edit("remove_narrator", lambda s, r: E.remove_narrator(s)),
            _edit("remove_time_marker", lambda s, r: E.remove_time_marker(s)),
            _edit("pronoun_to_agent", E.pronoun_to_agent),
            _edit("to_present", lambda s, r: E.to_present(s)),
            _drop_dialogue,
            _add_plain_sentence,
        ],
        (7, +1): [
            _edit("to_active", lambda s, r: E.to_active(s)),
            _edit("add_clause", E.add_clause),
            _add_plain_sentence,
        ],
        (7, -1): [
            _edit("to_passive", lambda s, r: E.to_passive(s)),
            _by_length(True, lambda s, r: E.remove_adjunct(s), "drop_clause"),
            _drop_plain_sentence,
        ],
    }


@dataclass
class RefinementResult:
    """Outcome of ``refine_to_target``: the text, its measured HRV, and the edits that were kept."""

    text: str
    measured: list[float]
    error: float
    """Mean absolute error to the target after refinement."""
    initial_error: float
    steps: int
    """Edit attempts made (each one measurement)."""
    edits: list[str] = field(default_factory=list)
    """Names of the kept edits, in order, e.g. ``"curiosity_index+:to_question"``."""


def _gaps(feedback: object) -> list[float]:
    if isinstance(feedback, (int, float)) and not isinstance(feedback, bool):
        raise ValidationError(
            f"a scalar feedback ({feedback!r}) does not say which way to edit; pass the per-dimension gap "
            "(target minus measured, 8 numbers) or use refine_to_target(text, target_hrv)"
        )
    try:
        gaps = [float(v) for v in feedback]  # type: ignore[union-attr]
    except (TypeError, ValueError):
        raise ValidationError(
            f"hrv_feedback must be 8 numbers (target minus measured), got {feedback!r}"
        ) from None
    if len(gaps) != HRV_DIM or any(not -1.0 <= g <= 1.0 for g in gaps):
        raise ValidationError(
            f"hrv_feedback must be 8 gaps in [-1, 1] (target minus measured, order {HRV_DIMENSIONS}), got {gaps}"
        )
    return gaps


class RefinerLayer:
    """Edits text toward a target HRV with measurable rewrites (see the module docstring).

    Args:
        extractor: the ``HRVExtractor`` used to measure (one is created if omitted).
        tolerance: per-dimension gap treated as on target (default 0.015).
        max_steps: measurement budget of ``refine_to_target`` (default 24).
    """

    def __init__(
        self, extractor=None, tolerance: float = DEFAULT_TOLERANCE, max_steps: int = DEFAULT_MAX_STEPS
    ) -> None:
        if extractor is None:
            from resonance_os.profiling.hrv_extractor import HRVExtractor

            extractor = HRVExtractor()
        if not 0.0 <= tolerance < 1.0:
            raise ValidationError(f"tolerance must be in [0, 1), got {tolerance}")
        if max_steps < 0:
            raise ValidationError(f"max_steps must be >= 0, got {max_steps}")
        self.extractor = extractor
        self.tolerance = tolerance
        self.max_steps = max_steps
        self._edits = _catalogue()

    def refine(self, text: str, hrv_feedback: object, seed: int | None = None) -> str:
        """One round of edits on ``text`` (a sentence or paragraph) guided by ``hrv_feedback``.

        ``hrv_feedback`` is the per-dimension gap, target minus measured (8 numbers in [-1, 1]); each
        dimension whose gap exceeds the tolerance gets one edit in that direction, largest gap first.
        Unmeasured: use ``refine_to_target`` for the closed loop. Returns the edited text.
        """
        gaps = _gaps(hrv_feedback)
        rng = random.Random(seed)
        sentences = E.split_sentences(text)
        if not sentences:
            raise ValidationError("text to refine is empty; pass at least one sentence")
        for dim in sorted(range(HRV_DIM), key=lambda d: -abs(gaps[d])):
            if abs(gaps[dim]) <= self.tolerance:
                break
            for propose in self._edits[(dim, 1 if gaps[dim] > 0 else -1)]:
                candidate = propose(sentences, rng)
                if candidate is not None:
                    sentences = candidate
                    break
        return E.join_sentences(sentences)

    def refine_to_target(
        self, text: str, target_hrv: Sequence[float], seed: int | None = None, max_steps: int | None = None
    ) -> RefinementResult:
        """Measure -> edit -> measure until within tolerance, no edit helps, or the budget ends."""
        target = validate_hrv(target_hrv, what="target HRV")
        rng = random.Random(seed)
        budget = self.max_steps if max_steps is None else max_steps
        sentences = E.split_sentences(text)
        measured = self.extractor.extract(text)
        error = sum(abs(t - m) for t, m in zip(target, measured)) / HRV_DIM
        initial = error
        kept: list[str] = []
        steps = 0
        blocked: set[tuple[int, int, str]] = set()
        while steps < budget:
            gaps = [t - m for t, m in zip(target, measured)]
            order = [
                d
                for d in sorted(range(HRV_DIM), key=lambda d: -abs(gaps[d]))
                if abs(gaps[d]) > self.tolerance
            ]
            if not order:
                break
            accepted = False
            for dim in order:
                direction = 1 if gaps[dim] > 0 else -1
                for propose in self._edits[(dim, direction)]:
                    key = (dim, direction, propose.__name__)
                    if key in blocked:
                        continue
                    candidate = propose(sentences, rng)
                    if candidate is None:
                        blocked.add(key)
                        continue
                    steps += 1
                    new_measured = self.extractor.extract(E.join_sentences(candidate))
                    new_error = sum(abs(t - m) for t, m in zip(target, new_measured)) / HRV_DIM
                    if new_error < error - 1e-9:
                        sentences, measured, error = candidate, new_measured, new_error
                        kept.append(
                            f"{HRV_DIMENSIONS[dim]}{'+' if direction > 0 else '-'}:{propose.__name__}"
                        )
                        accepted = True
                        blocked = {key for key in blocked if key[0] != dim}
                        break
                    blocked.add(key)
                    if steps >= budget:
                        break
                if accepted or steps >= budget:
                    break
            if not accepted:
                break
        return RefinementResult(
            text=E.join_sentences(sentences),
            measured=measured,
            error=error,
            initial_error=initial,
            steps=steps,
            edits=kept,
        )
