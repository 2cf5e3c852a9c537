"""The Human Resonance Vector (HRV): its eight dimensions, in order, and the default thresholds."""

from __future__ import annotations

HRV_DIMENSIONS: list[str] = [
    "sentence_variance",
    "emotional_valence",
    "emotional_intensity",
    "assertiveness_index",
    "curiosity_index",
    "metaphor_density",
    "storytelling_index",
    "active_voice_ratio",
]
"""Dimension names in the order every HRV uses (index i of a vector is ``HRV_DIMENSIONS[i]``)."""

HRV_DIM: int = len(HRV_DIMENSIONS)

DEFAULT_RESONANCE_THRESHOLD: float = 0.92
"""Similarity to the target at or above which text counts as resonant."""

DEFAULT_DRIFT_THRESHOLD: float = 0.05
"""Drop in similarity from the baseline that counts as drift."""

BUILTIN_TENANT: str = "builtin"
"""Tenant of the built-in profile templates (``profiles.templates.BUILTIN_TEMPLATES``)."""

DEFAULT_TARGET_NAME: str = "professional"
DEFAULT_TARGET_KEY: str = f"{BUILTIN_TENANT}/{DEFAULT_TARGET_NAME}"
"""The default profile's key, ``"builtin/professional"``."""

TYPICAL_HRV: dict[str, tuple[float, float, float]] = {
    "sentence_variance": (0.29, 0.45, 0.60),
    "emotional_valence": (0.39, 0.52, 0.64),
    "emotional_intensity": (0.05, 0.14, 0.26),
    "assertiveness_index": (0.25, 0.50, 0.83),
    "curiosity_index": (0.00, 0.00, 0.15),
    "metaphor_density": (0.00, 0.00, 0.40),
    "storytelling_index": (0.04, 0.18, 0.65),
    "active_voice_ratio": (0.44, 0.87, 1.00),
}
"""(10th percentile, median, 90th percentile) of each dimension on real prose: the extractor on the
training split of ``quality.corpus.mixed_paragraphs(600, seed=0, split="train")`` (496 paragraphs of
about 85 words, half Python reference prose, half fortunes). What "low" and "high" mean for a
dimension (``typical_position``); the built-in templates sit inside these ranges. A test recomputes
them, so a change to the extractor that moves a scale says so."""


def typical_position(dimension: str, value: float) -> float:
    """Where ``value`` sits in real prose's range of ``dimension``: 0 at the 10th percentile, 1 at the
    90th (below 0 or above 1 outside it)."""
    low, _, high = TYPICAL_HRV[dimension]
    return (value - low) / (high - low)


DEFAULT_TARGET_HRV: dict[str, float] = {
    "sentence_variance": 0.42,
    "emotional_valence": 0.55,
    "emotional_intensity": 0.14,
    "assertiveness_index": 0.62,
    "curiosity_index": 0.03,
    "metaphor_density": 0.02,
    "storytelling_index": 0.22,
    "active_voice_ratio": 0.92,
}
"""The target used when none is given, in ``HRV_DIMENSIONS`` order: the built-in ``professional``
profile's vector (``profiles.templates`` builds that template from it; generation falls back on it
without opening the profile layer). ``hrv_types.default_target()`` gives it as 8 floats."""

HRV_DESCRIPTIONS: dict[str, str] = {
    "sentence_variance": "Cadence: spread of sentence lengths (0 = uniform lengths, 1 = very bursty).",
    "emotional_valence": "Polarity of feeling (0 = negative, 0.5 = neutral, 1 = positive).",
    "emotional_intensity": "Strength of feeling regardless of sign (0 = flat, 1 = intense).",
    "assertiveness_index": "Boosters vs hedges (0 = heavily hedged, 0.5 = balanced, 1 = emphatic).",
    "curiosity_index": "Questions and curiosity markers (0 = none, 1 = inquisitive throughout).",
    "metaphor_density": "Figurative language: similes, nominal and verb metaphors, frames, idioms (0 = literal).",
    "storytelling_index": "Narrative markers: past tense, time markers, people, dialogue (0 = expository).",
    "active_voice_ratio": "Share of finite verb groups in active voice (1 = no passives).",
}

GAP_CONVENTION = "gap = target − measured: + means the text needs more of that dimension, − less"
"""The one sign convention for a dimension's gap, stated wherever a gap is shown (CLI, Studio, API)."""

REWARD_TERM_MEANINGS: dict[str, str] = {
    "resonance": "How closely the text's style matches the target on the 8 dimensions (1 = the same; "
    "it is 1 minus the average gap).",
    "fluency": "How naturally the wording reads to a language model (1 = reads naturally).",
    "coherence": "How well each sentence follows from the ones before it (1 = connected throughout).",
    "topic": "How much the text is about the prompt (empty without a prompt).",
    "repetition": "A penalty for repeated phrases, copied passages and leftover instructions (0 = none).",
    "reward": "The overall score: the style match times the writing quality, so a text scores high only "
    "when it both sounds like the voice and reads well (0 to 1).",
}
"""Each writing-reward term in one plain sentence, shown next to its number (the formula is in
docs/reward.md)."""
