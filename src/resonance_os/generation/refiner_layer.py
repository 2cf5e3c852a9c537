"""RefinerLayer: measurable edits toward a target HRV, and the measure -> edit -> measure loop.

``refine(text, feedback)`` applies one round of edits: for each dimension whose gap (target minus
measured) exceeds the tolerance, one edit that moves that dimension in the gap's direction (see
``resonance_os.generation.edits``; every edit declines sentences it cannot change safely).
``refine_to_target(text, target)`` iterates measure -> edit -> measure and keeps an edit only when

* it lowers the mean absolute error to the target, and
* the text's writing quality (``WritingScore.quality`` of ``quality.reward``: fluency, coherence,
  topic with a prompt, repetition) stays within ``quality_tolerance`` of the original text's,

until every dimension is within tolerance, no edit helps, or the step budget ends. The quality
floor is fixed at the start, so edits cannot wear quality down by small steps.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib.resources import files

import resonance_os.generation.edits as E
from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_constants import HRV_DIM, HRV_DIMENSIONS
from resonance_os.core.hrv_types import mean_gap, validate_hrv
from resonance_os.core.text import sentence_texts
from resonance_os.quality.reward import WritingReward, make_reward, reward_kind
from resonance_os.quality.text_units import sentence_words, stem

Proposal = Callable[[list[str], random.Random], "list[str] | None"]
SentenceEdit = Callable[[str, random.Random], "str | list[str] | None"]

DEFAULT_TOLERANCE = 0.015
"""Per-dimension distance to the target at which a paragraph counts as on target."""
DEFAULT_MAX_STEPS = 24
"""Accepted-or-rejected edit attempts (each costs one measurement) per paragraph."""
DEFAULT_QUALITY_TOLERANCE = 0.02
"""How far below the original text's quality an edited text may fall and still be kept."""
SIMILE_FIT = 0.3
"""Least ``quality.topic`` score of a simile's topic words against the paragraph for it to be used."""


def _named(name: str, propose: Proposal) -> Proposal:
    propose.__name__ = name
    return propose


def _edit(name: str, edit: SentenceEdit, longest_first: bool | None = None) -> Proposal:
    """Lift a sentence edit to a paragraph: sentences in random order (or by length), first that
    applies wins; an edit that would duplicate a sentence is skipped."""

    def propose(sentences: list[str], rng: random.Random) -> list[str] | None:
        order = list(range(len(sentences)))
        if longest_first is None:
            rng.shuffle(order)
        else:
            order.sort(key=lambda i: len(sentences[i].split()), reverse=longest_first)
        for i in order:
            edited = edit(sentences[i], rng)
            if edited is None or edited == sentences[i]:
                continue
            candidate = (
                sentences[:i] + (edited if isinstance(edited, list) else [edited]) + sentences[i + 1 :]
            )
            if len(set(candidate)) == len(candidate):
                return candidate
        return None

    return _named(name, propose)


def _merge(shortest_first: bool) -> Proposal:
    """Merge the shortest (or longest) adjacent pair of statements that ``edits.merge`` accepts."""

    def propose(sentences: list[str], rng: random.Random) -> list[str] | None:
        pairs = sorted(
            range(len(sentences) - 1),
            key=lambda i: len(sentences[i].split()) + len(sentences[i + 1].split()),
            reverse=not shortest_first,
        )
        for i in pairs:
            merged = E.merge(sentences[i], sentences[i + 1])
            if merged:
                return sentences[:i] + [merged] + sentences[i + 2 :]
        return None

    return _named("merge_shortest" if shortest_first else "merge_longest", propose)


@cache
def similes() -> tuple[tuple[str, str, str], ...]:
    """(simile, topic words, subjects) rows of ``generation/data/similes.txt``."""
    text = files("resonance_os.generation").joinpath("data", "similes.txt").read_text("utf-8")
    rows = [line.split("|") for line in text.splitlines() if line.strip() and not line.startswith("#")]
    return tuple((simile.strip(), words.strip(), subjects.strip()) for simile, words, subjects in rows)


@lru_cache(maxsize=4096)
def fitting_simile(text: str) -> tuple[str, frozenset[str]] | None:
    """The simile whose topic words the paragraph is most about (``quality.topic`` score) and the
    stems of the subjects it can be said of, or ``None`` when none reaches ``SIMILE_FIT``."""
    from resonance_os.quality.topic import topic_model

    rows = similes()
    fits = topic_model().score_many(text, [words for _, words, _ in rows])
    fit, best = max(zip(fits, range(len(rows))))
    simile, _, subjects = rows[best]
    return (simile, frozenset(stem(w) for w in subjects.split())) if fit >= SIMILE_FIT else None


SIMILE_MAX_WORDS = 14
"""A simile is appended only to a sentence of at most this many words: at the end of a longer one it
reads as said of the last clause ("... that brought joy to those who would aid them, like a clock")."""


def _opening_noun(words: list[str]) -> str:
    """The sentence's first word after a determiner ("The world is ..." -> "world")."""
    return words[1] if len(words) > 1 and words[0] in E.DETERMINERS else words[0]


def _add_simile(sentences: list[str], rng: random.Random) -> list[str] | None:
    """Append the fitting simile to a short sentence that opens with one of the subjects it can be
    said of ("Time moves on, like a river that never stops moving"), not to any sentence on its
    topic: "... who lived on the moon's surface, like a stage where everyone plays a part" (a woman
    was named), "People gather in the square, like a stage ..." (people are not a stage) and "With
    years of experience she started a farm ..., like a clock that keeps ticking" read as pasted on."""
    fitting = fitting_simile(E.join_sentences(sentences))
    if fitting is None:
        return None
    simile, subjects = fitting

    def attach(sentence: str, rng: random.Random) -> str | None:
        words = [w for words in sentence_words(sentence) for w in words]
        if not words or len(words) > SIMILE_MAX_WORDS or stem(_opening_noun(words)) not in subjects:
            return None
        return E.add_simile(sentence, simile)

    return _edit("add_simile", attach)(sentences, rng)


def _add_opener(name: str, openers: Sequence[str], fits: Callable[[str], bool] | None = None) -> Proposal:
    """Put one of ``openers`` that the paragraph does not use yet in front of a sentence (one that
    ``fits`` accepts, when given)."""

    def propose(sentences: list[str], rng: random.Random) -> list[str] | None:
        unused = [o for o in openers if not any(s.startswith(o) for s in sentences)]
        if not unused:
            return None
        opener = _pick(unused, rng)
        return _edit(name, lambda s, r: E.add_opener(s, opener) if fits is None or fits(s) else None)(
            sentences, rng
        )

    return _named(name, propose)


def _opener_fits_stance(booster: bool) -> Callable[[str], bool]:
    """The test of whether a booster (or, with ``booster=False``, a hedge) opener fits a sentence: the
    sentence states something in general, not a past event ("Typically, the air was filled with a
    silence"), and takes no opposite stance."""
    return lambda sentence: (
        not E.tells_past_event(sentence) and not E.has_stance(sentence, booster=not booster)
    )


def _pick(items: Sequence[str], rng: random.Random) -> str:
    return items[rng.randrange(len(items))]


def _catalogue() -> dict[tuple[int, int], list[Proposal]]:
    """Edits per (dimension index, direction +1/-1), most targeted first."""
    cadence = [
        _edit("split_longest", lambda s, r: E.split(s), longest_first=True),
        _edit("split_shortest", lambda s, r: E.split(s), longest_first=False),
        _merge(shortest_first=True),
        _merge(shortest_first=False),
    ]
    return {
        (0, +1): cadence,
        (0, -1): cadence,
        (1, +1): [
            _edit("warmer_word", lambda s, r: E.swap_word(s, E.VALENCE_SWAPS, True)),
            _edit("remove_negative_opener", lambda s, r: E.remove_opener(s, E.NEGATIVE_OPENERS)),
            _edit("drop_negative_adjective", lambda s, r: E.drop_adjective(s, -1)),
        ],
        (1, -1): [
            _edit("colder_word", lambda s, r: E.swap_word(s, E.VALENCE_SWAPS, False)),
            _edit("remove_positive_opener", lambda s, r: E.remove_opener(s, E.POSITIVE_OPENERS)),
            _edit("drop_positive_adjective", lambda s, r: E.drop_adjective(s, +1)),
        ],
        (2, +1): [
            _edit("add_intensifier", lambda s, r: E.add_intensifier(s)),
            _edit("stronger_word", lambda s, r: E.swap_word(s, E.INTENSITY_SWAPS, True)),
        ],
        (2, -1): [
            _edit("remove_intensifier", lambda s, r: E.remove_intensifier(s)),
            _edit("milder_word", lambda s, r: E.swap_word(s, E.INTENSITY_SWAPS, False)),
            _edit(
                "remove_evaluative_opener",
                lambda s, r: E.remove_opener(s, E.POSITIVE_OPENERS + E.NEGATIVE_OPENERS),
            ),
            _edit("drop_evaluative_adjective", lambda s, r: E.drop_adjective(s, 0)),
        ],
        (3, +1): [
            _edit("remove_hedge", lambda s, r: E.remove_opener(s, E.HEDGE_OPENERS)),
            _add_opener("add_booster", E.BOOSTER_OPENERS, _opener_fits_stance(booster=True)),
        ],
        (3, -1): [
            _edit("remove_booster", lambda s, r: E.remove_opener(s, E.BOOSTER_OPENERS)),
            _add_opener("add_hedge", E.HEDGE_OPENERS, _opener_fits_stance(booster=False)),
        ],
        (4, +1): [_edit("to_question", lambda s, r: E.to_question(s))],
        (4, -1): [_edit("to_statement", lambda s, r: E.to_statement(s))],
        (5, +1): [_named("add_simile", _add_simile)],
        (5, -1): [_edit("remove_simile", lambda s, r: E.remove_simile(s))],
        (6, +1): [_add_opener("add_time_marker", E.TIME_OPENERS, E.tells_past_event)],
        (6, -1): [_edit("remove_time_marker", lambda s, r: E.remove_opener(s, E.TIME_OPENERS))],
        (7, +1): [_edit("to_active", lambda s, r: E.to_active(s))],
        (7, -1): [_edit("to_passive", lambda s, r: E.to_passive(s))],
    }


@dataclass
class RefinementResult:
    """Outcome of ``refine_to_target``: the text, its measured HRV and quality, and the kept edits."""

    text: str
    measured: list[float]
    error: float
    """Mean absolute error to the target after refinement."""
    initial_error: float
    steps: int
    """Edit attempts made (each one measurement)."""
    edits: list[str] = field(default_factory=list)
    """Names of the kept edits, in order, e.g. ``"curiosity_index+:to_question"``."""
    changes: list[tuple[str, str]] = field(default_factory=list)
    """What each kept edit changed, in order: (the sentences it replaced, what it wrote instead)."""
    quality: float = 1.0
    """``WritingScore.quality`` of the refined text."""
    initial_quality: float = 1.0


def _changed(before: list[str], after: list[str]) -> tuple[str, str]:
    """The run of sentences an edit replaced in ``before`` and the run it wrote in ``after`` (an edit
    changes one sentence, or splits or merges neighbours: one contiguous run)."""
    start = 0
    while start < min(len(before), len(after)) and before[start] == after[start]:
        start += 1
    end_before, end_after = len(before), len(after)
    while end_before > start and end_after > start and before[end_before - 1] == after[end_after - 1]:
        end_before, end_after = end_before - 1, end_after - 1
    return E.join_sentences(before[start:end_before]), E.join_sentences(after[start:end_after])


def _edit_name(dim: int, direction: int, propose: Proposal) -> str:
    """An edit's name in results: ``"<dimension><+|->:<edit>"``, e.g. ``"curiosity_index+:to_question"``."""
    return f"{HRV_DIMENSIONS[dim]}{'+' if direction > 0 else '-'}:{propose.__name__}"


@dataclass(frozen=True)
class EditTrial:
    """One edit tried once by ``RefinerLayer.edit_trials``, measured as ``refine_to_target`` measures it."""

    edit: str
    """``"<dimension><+|->:<edit>"``, e.g. ``"sentence_variance+:split_longest"``."""
    applied: bool
    """Whether the edit found a sentence it could change safely."""
    move: float = 0.0
    """Change of the edit's own dimension."""
    error_change: float = 0.0
    """Change of the mean |gap| to the target."""
    quality_change: float = 0.0
    """Change of ``WritingScore.quality``."""
    kept: bool = False
    """Whether ``refine_to_target`` would keep it as its first edit (error down, quality within the
    tolerance)."""


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
        reward: the writing reward whose quality factor guards each edit: a ``WritingReward`` (pass
            the one you already have) or a choice for ``quality.reward.make_reward``, ``"fast"`` or
            ``"lm"``, built on ``extractor`` at first use (None: ``"fast"``).
        quality_tolerance: how far below the original text's quality an edit may take it (0.02).
    """

    def __init__(
        self,
        extractor=None,
        tolerance: float = DEFAULT_TOLERANCE,
        max_steps: int = DEFAULT_MAX_STEPS,
        reward: WritingReward | str | None = None,
        quality_tolerance: float = DEFAULT_QUALITY_TOLERANCE,
    ) -> None:
        if extractor is None and isinstance(reward, WritingReward):
            extractor = reward.extractor
        if extractor is None:
            from resonance_os.profiling.hrv_extractor import HRVExtractor

            extractor = HRVExtractor()
        if not 0.0 <= tolerance < 1.0:
            raise ValidationError(f"tolerance must be in [0, 1), got {tolerance}")
        if max_steps < 0:
            raise ValidationError(f"max_steps must be >= 0, got {max_steps}")
        if not 0.0 <= quality_tolerance <= 1.0:
            raise ValidationError(f"quality_tolerance must be in [0, 1], got {quality_tolerance}")
        self.extractor = extractor
        self.tolerance = tolerance
        self.max_steps = max_steps
        self.quality_tolerance = quality_tolerance
        if reward is not None:
            reward_kind(reward)  # a name other than fast or lm is refused here, not at the first edit
        self._reward = reward
        self._edits = _catalogue()

    @property
    def reward(self) -> WritingReward:
        """The writing reward that guards quality (built on first use)."""
        if not isinstance(self._reward, WritingReward):
            self._reward = make_reward(self._reward, extractor=self.extractor)
        return self._reward

    def refine(self, text: str, hrv_feedback: object, seed: int | None = None) -> str:
        """One round of edits on ``text`` (a sentence or paragraph) guided by ``hrv_feedback``.

        ``hrv_feedback`` is the per-dimension gap, target minus measured (8 numbers in [-1, 1]); each
        dimension whose gap exceeds the tolerance gets one edit in that direction, largest gap first.
        Unmeasured: use ``refine_to_target`` for the closed loop. Returns the edited text.
        """
        gaps = _gaps(hrv_feedback)
        counts = [(1 if g > 0 else -1) if abs(g) > self.tolerance else 0 for g in gaps]
        return self.apply_edits(text, counts, seed=seed, priority=[abs(g) for g in gaps])[0]

    def apply_edits(
        self,
        text: str,
        counts: Sequence[int],
        seed: int | None = None,
        priority: Sequence[float] | None = None,
    ) -> tuple[str, list[str]]:
        """Apply ``counts[d]`` edits that raise (positive) or lower (negative) dimension ``d``, unmeasured.

        Edits go round by round, one per dimension that still has some, highest ``priority`` first
        (default: the largest count); an edit that finds no sentence it can change is dropped. Returns
        the edited text and the applied edits' names (e.g. ``"curiosity_index+:to_question"``).
        """
        if len(counts) != HRV_DIM:
            raise ValidationError(
                f"counts must give one edit count per dimension ({HRV_DIM}), got {list(counts)}"
            )
        rng = random.Random(seed)
        sentences = sentence_texts(text)
        if not sentences:
            raise ValidationError("text to edit is empty; pass at least one sentence")
        rank = priority if priority is not None else [abs(c) for c in counts]
        order = sorted(range(HRV_DIM), key=lambda d: -rank[d])
        applied: list[str] = []
        for round_index in range(max((abs(int(c)) for c in counts), default=0)):
            for dim in order:
                if abs(int(counts[dim])) <= round_index:
                    continue
                direction = 1 if counts[dim] > 0 else -1
                for propose in self._edits[(dim, direction)]:
                    candidate = propose(sentences, rng)
                    if candidate is not None:
                        sentences = candidate
                        applied.append(_edit_name(dim, direction, propose))
                        break
        return E.join_sentences(sentences), applied

    def edit_trials(
        self, text: str, target_hrv: Sequence[float], seed: int | None = None, prompt: str | None = None
    ) -> list[EditTrial]:
        """Every edit toward every dimension off target (beyond the tolerance) tried once on ``text``,
        largest gap first as ``refine_to_target`` tries them (with the same ``seed``, the first that
        applies is the loop's first try): which edits can reach this text, what each moves, and why
        the others would not be kept."""
        target = validate_hrv(target_hrv, what="target HRV")
        if not isinstance(text, str) or not text.strip():
            raise ValidationError("text to try edits on is empty; pass at least one sentence")
        rng = random.Random(seed)
        sentences = sentence_texts(text)
        first = self.reward.score(text, target, prompt=prompt)
        error = mean_gap(target, first.hrv)
        trials = []
        for dim, direction in self._off_target(target, first.hrv):
            for propose in self._edits[(dim, direction)]:
                name = _edit_name(dim, direction, propose)
                candidate = propose(sentences, rng)
                if candidate is None:
                    trials.append(EditTrial(name, applied=False))
                    continue
                scored = self.reward.score(E.join_sentences(candidate), target, prompt=prompt)
                new_error = mean_gap(target, scored.hrv)
                trials.append(
                    EditTrial(
                        name,
                        applied=True,
                        move=scored.hrv[dim] - first.hrv[dim],
                        error_change=new_error - error,
                        quality_change=scored.quality - first.quality,
                        kept=self._keeps(new_error, error, scored.quality, first.quality),
                    )
                )
        return trials

    def _off_target(self, target: Sequence[float], measured: Sequence[float]) -> list[tuple[int, int]]:
        """``(dimension, direction)`` of each dimension further than the tolerance from ``target``,
        largest gap first: the order the loop tries edits in."""
        order = sorted(range(HRV_DIM), key=lambda d: -abs(target[d] - measured[d]))
        return [
            (d, 1 if target[d] > measured[d] else -1)
            for d in order
            if abs(target[d] - measured[d]) > self.tolerance
        ]

    def _keeps(self, new_error: float, error: float, quality: float, initial_quality: float) -> bool:
        """The acceptance test of an edit: it lowers the mean |gap| and keeps quality within
        ``quality_tolerance`` of the original text's."""
        return new_error < error - 1e-9 and quality >= initial_quality - self.quality_tolerance

    def refine_to_target(
        self,
        text: str,
        target_hrv: Sequence[float],
        seed: int | None = None,
        max_steps: int | None = None,
        prompt: str | None = None,
    ) -> RefinementResult:
        """Measure -> edit -> measure until within tolerance, no edit helps, or the budget ends.

        An edit is kept when it lowers the mean |gap| and keeps quality at or above the original's
        minus ``quality_tolerance``; ``prompt`` (optional) adds the topic term to that quality.
        """
        target = validate_hrv(target_hrv, what="target HRV")
        if not isinstance(text, str) or not text.strip():
            raise ValidationError("text to refine is empty; pass at least one sentence")
        rng = random.Random(seed)
        budget = self.max_steps if max_steps is None else max_steps
        sentences = sentence_texts(text)
        first = self.reward.score(text, target, prompt=prompt)
        measured, quality = first.hrv, first.quality
        initial = error = mean_gap(target, measured)
        kept: list[str] = []
        changes: list[tuple[str, str]] = []
        steps = 0
        blocked: set[tuple[int, int, str]] = set()
        while steps < budget:
            accepted = False
            for dim, direction in self._off_target(target, measured):
                for propose in self._edits[(dim, direction)]:
                    key = (dim, direction, propose.__name__)
                    if key in blocked or steps >= budget:
                        continue
                    candidate = propose(sentences, rng)
                    blocked.add(key)
                    if candidate is None:
                        continue
                    steps += 1
                    scored = self.reward.score(E.join_sentences(candidate), target, prompt=prompt)
                    new_error = mean_gap(target, scored.hrv)
                    if self._keeps(new_error, error, scored.quality, first.quality):
                        changes.append(_changed(sentences, candidate))
                        sentences, measured, error, quality = candidate, scored.hrv, new_error, scored.quality
                        kept.append(_edit_name(dim, direction, propose))
                        accepted = True
                        blocked = set()
                        break
                if accepted:
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
            changes=changes,
            quality=quality,
            initial_quality=first.quality,
        )
