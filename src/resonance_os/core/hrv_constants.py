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

DEFAULT_TARGET_HRV: dict[str, float] = {
    "sentence_variance": 0.40,
    "emotional_valence": 0.62,
    "emotional_intensity": 0.35,
    "assertiveness_index": 0.65,
    "curiosity_index": 0.10,
    "metaphor_density": 0.05,
    "storytelling_index": 0.30,
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
