"""PlannerLayer: an outline and a per-paragraph HRV target for each paragraph of an article.

Real writing does not hold one register throughout: openings lean curious and a little livelier,
middles are calmer and more concrete, closes are firmer and warmer. The planner shifts each
paragraph's target along those lines, then re-centres the shifts so that the mean of the paragraph
targets equals the article target (up to clipping at the [0, 1] edges, which it redistributes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.core.hrv_types import default_target, validate_hrv
from resonance_os.core.limits import MAX_PARAGRAPHS
from resonance_os.generation.topics import topic_phrases, validate_prompt

ROLE_SHIFTS: dict[str, dict[str, float]] = {
    "opening": {
        "curiosity_index": 0.08,
        "sentence_variance": 0.04,
        "emotional_intensity": 0.04,
        "metaphor_density": 0.03,
    },
    "development": {
        "curiosity_index": -0.04,
        "emotional_intensity": -0.04,
        "storytelling_index": 0.05,
        "sentence_variance": -0.02,
    },
    "close": {"assertiveness_index": 0.07, "emotional_valence": 0.04, "curiosity_index": -0.04},
}
"""How each paragraph role leans away from the article target (before re-centring), by dimension."""

DEFAULT_SENTENCES = 5


@dataclass(frozen=True)
class Outline:
    """What one paragraph is for: its role, the topic phrases it must mention, and its sentence count."""

    index: int
    role: str
    """``opening``, ``development`` or ``close`` (a one-paragraph article is an ``opening``)."""
    topics: tuple[str, ...]
    """Topic phrases from the prompt; the paragraph mentions at least its ``focus``."""
    focus: str
    sentences: int = DEFAULT_SENTENCES


def roles_for(num_paragraphs: int) -> list[str]:
    """``opening``, then ``development`` paragraphs, then ``close`` (1 paragraph: just ``opening``)."""
    if num_paragraphs == 1:
        return ["opening"]
    return ["opening", *["development"] * (num_paragraphs - 2), "close"]


def spread_targets(target: list[float], roles: list[str]) -> list[list[float]]:
    """Per-paragraph targets: role shifts re-centred so their mean is ``target``, kept inside [0, 1]."""
    base = np.asarray(target, dtype=np.float64)
    shifts = np.zeros((len(roles), len(HRV_DIMENSIONS)))
    for row, role in enumerate(roles):
        for name, value in ROLE_SHIFTS[role].items():
            shifts[row, HRV_DIMENSIONS.index(name)] = value
    if len(roles) > 1:
        shifts -= shifts.mean(axis=0, keepdims=True)
    else:
        shifts[:] = 0.0
    targets = np.clip(base + shifts, 0.0, 1.0)
    for _ in range(4):  # hand back what clipping removed, to the rows that still have room
        error = base - targets.mean(axis=0)
        if np.all(np.abs(error) < 1e-9):
            break
        room = np.where(error > 0, 1.0 - targets, targets)
        total = room.sum(axis=0)
        share = np.divide(room, total, out=np.zeros_like(room), where=total > 0)
        targets = np.clip(targets + share * error * len(roles), 0.0, 1.0)
    return [row.tolist() for row in targets]


def carried_target(targets: list[list[float]], index: int, written: list[float]) -> list[float]:
    """Paragraph ``index``'s target with the gap the paragraphs before it left carried forward: the
    article so far measures ``written`` (its HRV) where its ``index`` paragraphs aimed at
    ``targets[:index]`` on average, and the remaining paragraphs share the difference equally, so
    the article as a whole still aims at the mean of ``targets``. Kept inside [0, 1]."""
    if index == 0:
        return list(targets[0])
    planned = np.asarray(targets, dtype=np.float64)
    left = planned[:index].sum(axis=0) - index * np.asarray(written, dtype=np.float64)
    return np.clip(planned[index] + left / (len(planned) - index), 0.0, 1.0).tolist()


class PlannerLayer:
    """Plans an article: an ``Outline`` and an 8-value HRV target per paragraph."""

    def __init__(self, sentences_per_paragraph: int = DEFAULT_SENTENCES) -> None:
        if not 2 <= sentences_per_paragraph <= 12:
            raise ValueError(f"sentences_per_paragraph must be in [2, 12], got {sentences_per_paragraph}")
        self.sentences_per_paragraph = sentences_per_paragraph

    def plan_paragraphs(
        self, prompt: str, num_paragraphs: int = 3, target: list[float] | None = None
    ) -> tuple[list[Outline], list[list[float]]]:
        """(outlines, per-paragraph targets) for ``num_paragraphs`` (1-``MAX_PARAGRAPHS``) paragraphs about ``prompt``.

        ``target`` is the article's HRV (8 floats in [0, 1]); without it the default profile's vector
        (``core.hrv_types.default_target``, ``builtin/professional``) is used. The mean of the
        returned targets equals ``target`` (to 1e-9 unless the target sits on an edge the shifts
        cannot straddle).
        """
        prompt = validate_prompt(prompt)
        num_paragraphs = validate_num_paragraphs(num_paragraphs)
        article_target = validate_hrv(target, what="target HRV") if target is not None else default_target()
        topics = tuple(topic_phrases(prompt))
        roles = roles_for(num_paragraphs)
        targets = spread_targets(article_target, roles)
        outlines = [
            Outline(
                index=i,
                role=role,
                topics=topics,
                focus=topics[i % len(topics)],
                sentences=self.sentences_per_paragraph,
            )
            for i, role in enumerate(roles)
        ]
        return outlines, targets


def validate_num_paragraphs(value: object) -> int:
    """An int in [1, ``MAX_PARAGRAPHS``], or a ``ValidationError`` naming the value."""
    from resonance_os.core.errors import ValidationError

    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or not 1 <= int(value) <= MAX_PARAGRAPHS
    ):
        raise ValidationError(
            f"num_paragraphs must be a whole number from 1 to {MAX_PARAGRAPHS}, got {value!r}"
        )
    return int(value)
