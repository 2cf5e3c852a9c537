"""SentenceLayer: turns a paragraph outline and a target HRV (the 'controls') into sentences.

The target is inverted into whole-number counts, using the extractor's own normalisation constants
(``resonance_os.profiling.hrv_extractor``): how many sentences, which lengths (cadence), how many
mildly or strongly positive or negative sentences and exclamations (valence, intensity), boosters and
hedges (assertiveness), questions and curiosity markers (curiosity), similes (figurative density),
narrative sentences and dialogue (storytelling) and passives (voice). Counts come out as one
``SentenceSpec`` per sentence, which the built-in composer realises. No text is measured here, so
the layer is fast; the refiner closes the remaining gap with measured edits.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from functools import cache
from itertools import product

import numpy as np

from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_types import validate_hrv
from resonance_os.generation.backends.builtin import BuiltinComposer, Composition, SentenceSpec
from resonance_os.generation.planner_layer import Outline
from resonance_os.generation.topics import topic_phrases, validate_prompt
from resonance_os.profiling.hrv_extractor import (
    CURIOSITY_MARKERS_FULL,
    CV_HALF,
    FIGURATIVE_SCALE,
    PAST_FULL,
    PERSON_FULL,
    TIME_FULL,
)
from resonance_os.profiling.hrv_extractor import intensity as predicted_intensity

MEAN_WORDS = 14.0
"""Mean target sentence length in words; lengths spread around it for cadence."""
SENTENCE_RANGE = (4, 8)
"""Fewest and most sentences per paragraph; the count is chosen so whole-number handles fit the target."""
TONE_COMPOUND = {1: 0.5, 2: 0.7}
"""Typical VADER compound of a built-in sentence with tone +-1 or +-2 (measured on the phrase bank)."""
SENTIMENT_WORDS = {1: 1.3, 2: 1.7}
"""Typical number of sentiment-bearing words in a sentence with tone +-1 or +-2."""
NARRATIVE_RATES = {"past": 1.1, "person": 0.4, "time": 1.0}
"""Typical past-tense verbs, person pronouns and time markers in one narrative built-in sentence."""
DIALOGUE_RATES = {"past": 1.75, "person": 0.8}
"""The same for one line of dialogue ('"We kept going," she said.')."""


@dataclass(frozen=True)
class ParagraphPlan:
    """Whole-number handle counts for one paragraph (see the module docstring)."""

    sentences: int
    lengths: tuple[int, ...]
    mild_positive: int
    strong_positive: int
    mild_negative: int
    strong_negative: int
    exclamations: int
    boosters: int
    hedges: int
    questions: int
    curiosity_markers: int
    similes: int
    narrative: int
    dialogue: int
    passives: int


def cv_for(sentence_variance: float) -> float:
    """Coefficient of variation of sentence lengths giving ``sentence_variance`` (inverse of cv/(cv+h))."""
    value = min(sentence_variance, 0.9)
    return CV_HALF * value / (1.0 - value)


def lengths_for(cv: float, n: int, rng: random.Random) -> list[int]:
    """``n`` sentence lengths (2-34 words) whose coefficient of variation is close to ``cv``."""
    if n == 1:
        return [int(MEAN_WORDS)]
    z = [-1.0 + 2.0 * i / (n - 1) for i in range(n)]
    sd = math.sqrt(sum(v * v for v in z) / n)
    z = [v / sd for v in z]
    rng.shuffle(z)
    scale = cv

    def build(scale: float) -> list[int]:
        return [int(min(34, max(2, round(MEAN_WORDS * (1.0 + scale * v))))) for v in z]

    lengths = build(scale)
    for _ in range(6):  # clipping at 2 words shrinks the spread: widen until it matches
        mean = sum(lengths) / n
        measured = math.sqrt(sum((x - mean) ** 2 for x in lengths) / n) / mean
        if measured <= 0 or abs(measured - cv) < 0.02:
            break
        scale *= cv / measured
        lengths = build(scale)
    return lengths


@cache
def _tables(n: int) -> dict[str, np.ndarray]:
    """Every whole-number option for an ``n``-sentence paragraph with its predicted HRV value.

    Built once per ``n``; each table's rows are (counts..., predicted value, small size penalty).
    The predictions use the extractor's normalisation constants and the built-in backend's typical
    per-sentence yields (``TONE_COMPOUND``, ``NARRATIVE_RATES``).
    """
    words = n * MEAN_WORDS
    per_100 = 100.0 / words
    curiosity = np.array(
        [
            (k, m, 0.6 * k / n + 0.4 * min(1.0, m * per_100 / CURIOSITY_MARKERS_FULL), 0.002 * (k + m))
            for k in range(n)
            for m in range(4)
        ]
    )
    similes = np.array([(s, 1.0 - math.exp(-s * per_100 / FIGURATIVE_SCALE), 0.001 * s) for s in range(n)])
    passives = np.array([(p, 1.0 - p / n, 0.0) for p in range(n)])
    tones = []
    for p1, p2, n1, n2 in product(range(n + 1), repeat=4):
        toned = p1 + p2 + n1 + n2
        if toned > n:
            continue
        compound = (TONE_COMPOUND[1] * (p1 - n1) + TONE_COMPOUND[2] * (p2 - n2)) / n
        mean_abs = (TONE_COMPOUND[1] * (p1 + n1) + TONE_COMPOUND[2] * (p2 + n2)) / n
        share = (SENTIMENT_WORDS[1] * (p1 + n1) + SENTIMENT_WORDS[2] * (p2 + n2)) / words
        for e in range(min(2, toned) + 1):
            intensity = predicted_intensity(mean_abs, share, e / n)
            tones.append((p1, p2, n1, n2, e, compound, intensity, 0.001 * (toned + e)))
    stances = np.array([(b, h, 0.003 * (b + h)) for b in range(n + 1) for h in range(n + 1) if b + h <= n])
    stories = []
    for r in range(n + 1):
        for d in range(2):
            if r + d > n:
                continue
            past = (NARRATIVE_RATES["past"] * r + DIALOGUE_RATES["past"] * d) / words
            person = (NARRATIVE_RATES["person"] * r + DIALOGUE_RATES["person"] * d) / words
            time = NARRATIVE_RATES["time"] * r / words
            value = (
                0.4 * min(1.0, past / PAST_FULL)
                + 0.25 * min(1.0, person / PERSON_FULL)
                + 0.2 * min(1.0, time / TIME_FULL)
                + 0.15 * min(1.0, 2.0 * d / n)
            )
            stories.append((r, d, value, 0.002 * (r + d)))
    return {
        "curiosity": curiosity,
        "similes": similes,
        "passives": passives,
        "tones": np.array(tones),
        "stances": stances,
        "stories": np.array(stories),
    }


def _closest(table: np.ndarray, value_column: int, target: float) -> tuple[np.ndarray, float]:
    """(row, distance) of the option whose predicted value is nearest ``target`` (size penalty breaks ties)."""
    distance = np.abs(table[:, value_column] - target)
    index = int(np.argmin(distance + table[:, -1]))
    return table[index], float(distance[index])


def plan_counts(target: list[float], rng: random.Random) -> ParagraphPlan:
    """Choose sentence count and handle counts whose predicted HRV is closest to ``target``."""
    cadence, valence, intensity, assertive, curiosity, metaphor, story, active = target
    best = None
    for n in range(SENTENCE_RANGE[0], SENTENCE_RANGE[1] + 1):
        tables = _tables(n)
        q, q_error = _closest(tables["curiosity"], 2, curiosity)
        s, s_error = _closest(tables["similes"], 1, metaphor)
        p, p_error = _closest(tables["passives"], 1, active)
        error = q_error + s_error + p_error + 0.004 * abs(n - 5)
        if best is None or error < best[0]:
            best = (error, n, q, s, p)
    _, n, q, s, p = best
    tables = _tables(n)
    tones = tables["tones"]
    score = 0.5 * np.abs(tones[:, 5] - (2.0 * valence - 1.0)) + np.abs(tones[:, 6] - intensity) + tones[:, 7]
    p1, p2, n1, n2, exclamations = (int(v) for v in tones[int(np.argmin(score)), :5])
    stances = tables["stances"]
    boosts = stances[:, 0] + exclamations
    predicted = 0.5 + 0.5 * (boosts - stances[:, 1]) / (boosts + stances[:, 1] + 1.0)
    b, h = (int(v) for v in stances[int(np.argmin(np.abs(predicted - assertive) + stances[:, 2])), :2])
    r, d = (int(v) for v in _closest(tables["stories"], 2, story)[0][:2])
    return ParagraphPlan(
        sentences=n,
        lengths=tuple(lengths_for(cv_for(cadence), n, rng)),
        mild_positive=p1,
        strong_positive=p2,
        mild_negative=n1,
        strong_negative=n2,
        exclamations=exclamations,
        boosters=b,
        hedges=h,
        questions=int(q[0]),
        curiosity_markers=int(q[1]),
        similes=int(s[0]),
        narrative=r,
        dialogue=d,
        passives=int(p[0]),
    )


def specs_for(plan: ParagraphPlan, rng: random.Random) -> list[SentenceSpec]:
    """Place a plan's handles on sentences: one ``SentenceSpec`` per sentence, the first on topic."""
    n = plan.sentences
    lengths = list(plan.lengths)
    kinds = ["statement"] * n
    for i in range(1, n):
        if lengths[i] <= 5:
            kinds[i] = "short"

    def take(count: int, allowed: list[int]) -> list[int]:
        chosen = rng.sample(allowed, min(count, len(allowed)))
        return chosen

    free = [i for i in range(1, n) if kinds[i] == "statement"] or [i for i in range(1, n)]
    for i in take(plan.dialogue, free):
        kinds[i] = "dialogue"
    free = [i for i in range(1, n) if kinds[i] == "statement"] or [
        i for i in range(1, n) if kinds[i] != "dialogue"
    ]
    for i in take(plan.questions, free):
        kinds[i] = "question"
    full = [i for i in range(n) if kinds[i] in ("statement", "question")]
    statements = [i for i in range(n) if kinds[i] == "statement"]

    tones = [0] * n
    toned = take(
        plan.mild_positive + plan.strong_positive + plan.mild_negative + plan.strong_negative,
        statements + [i for i in full if i not in statements] + [i for i in range(n) if kinds[i] == "short"],
    )
    values = (
        [2] * plan.strong_positive
        + [1] * plan.mild_positive
        + [-2] * plan.strong_negative
        + [-1] * plan.mild_negative
    )
    for i, value in zip(toned, values):
        tones[i] = value
        if kinds[i] == "short":
            kinds[i] = "evaluation"
    for i in range(1, n):
        if kinds[i] == "statement" and abs(tones[i]) == 2 and rng.random() < 0.5:
            kinds[i] = "evaluation"
    exclaim = set(take(plan.exclamations, [i for i in range(n) if tones[i] and kinds[i] != "question"]))
    voice_slots = [i for i in range(n) if kinds[i] in ("statement", "question")]
    passive = set(take(plan.passives, voice_slots))
    simile_slots = [i for i in range(n) if kinds[i] in ("statement", "evaluation")] or voice_slots
    similes = set(take(plan.similes, simile_slots))
    curious_slots = [i for i in range(n) if kinds[i] == "question"] + [
        i for i in range(n) if kinds[i] == "statement"
    ]
    curious = set(curious_slots[: plan.curiosity_markers])
    narrative = set(take(plan.narrative, [i for i in range(n) if kinds[i] != "dialogue"]))
    stance_slots = [i for i in range(n) if kinds[i] in ("statement", "evaluation", "short")]
    boosters, hedges = plan.boosters, plan.hedges
    while boosters + hedges > len(stance_slots):  # fewer slots than handles: keep the balance's sign
        if boosters and hedges:
            boosters, hedges = boosters - 1, hedges - 1
        elif boosters:
            boosters -= 1
        else:
            hedges -= 1
    stanced = take(boosters + hedges, stance_slots)
    stances = {i: 1 for i in stanced[:boosters]} | {i: -1 for i in stanced[boosters:]}
    return [
        SentenceSpec(
            kind=kinds[i],
            words=lengths[i],
            tone=tones[i],
            stance=stances.get(i, 0),
            simile=i in similes,
            narrative=i in narrative or kinds[i] == "dialogue",
            passive=i in passive,
            exclaim=i in exclaim,
            curious=i in curious,
            topic=i == 0 or rng.random() < 0.5,
        )
        for i in range(n)
    ]


class SentenceLayer:
    """Writes one paragraph's sentences for an outline and a target HRV with the built-in composer."""

    def __init__(self, composer: BuiltinComposer | None = None) -> None:
        self.composer = composer or BuiltinComposer()

    def generate_sentences(
        self,
        outline: Outline | str,
        target_hrv: list[float],
        composition: Composition | None = None,
        seed: int | None = None,
    ) -> list[str]:
        """Sentences steered toward ``target_hrv`` (8 floats in [0, 1]); the first names ``outline.focus``.

        ``outline`` is a planner ``Outline``, or a short text such as ``"Introduction to renewable
        energy"`` (the original ResonanceOS's form) whose topic phrases become the outline's.
        Pass the article's ``composition`` to keep sentences unique across paragraphs; without one,
        a fresh composition is started from ``outline.topics`` and ``seed``. The sentence count is
        chosen from ``SENTENCE_RANGE`` to suit the target (``outline.sentences`` is the planner's hint).
        """
        if isinstance(outline, str):
            topics = tuple(topic_phrases(validate_prompt(outline)))
            outline = Outline(index=0, role="opening", topics=topics, focus=topics[0])
        elif not isinstance(outline, Outline):
            raise ValidationError(
                f"outline must be an Outline from PlannerLayer.plan_paragraphs or a text, got {type(outline).__name__}"
            )
        target = validate_hrv(target_hrv, what="target HRV")
        if composition is None:
            composition = self.composer.start(outline.topics, seed=seed)
        specs = specs_for(plan_counts(target, composition.rng), composition.rng)
        topics, composition.topics = composition.topics, [outline.focus]
        sentences = [self.composer.realize(specs[0], composition)]
        composition.topics = topics
        sentences.extend(self.composer.realize(spec, composition) for spec in specs[1:])
        return sentences
