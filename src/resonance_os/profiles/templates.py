"""Built-in target profiles: starting points a tenant can copy, and the default target.

Values are chosen inside the range the extractor produces on real prose (on 2,000 ~85-word
paragraphs of mixed text the per-dimension means are roughly: sentence_variance 0.50, valence 0.59,
intensity 0.52, assertiveness 0.62, curiosity 0.19, metaphor 0.09, storytelling 0.51, active voice
0.91), so each template is reachable by ordinary writing rather than an extreme corner of the cube.
"""

from __future__ import annotations

from resonance_os.core.hrv_constants import (
    BUILTIN_TENANT,
    DEFAULT_TARGET_HRV,
    DEFAULT_TARGET_NAME,
    HRV_DIMENSIONS,
)
from resonance_os.core.hrv_types import HRVProfile

__all__ = ["BUILTIN_TEMPLATES", "BUILTIN_TENANT", "DEFAULT_PROFILE", "DEFAULT_PROFILE_NAME"]


def _template(name: str, description: str, **values: float) -> HRVProfile:
    assert list(values) == HRV_DIMENSIONS, "templates list every dimension in HRV order"
    return HRVProfile(name=name, vector=values, tenant=BUILTIN_TENANT, description=description)


BUILTIN_TEMPLATES: dict[str, HRVProfile] = {
    t.name: t
    for t in (
        _template(
            DEFAULT_TARGET_NAME,  # "professional": its vector is core's default target
            "Business and product writing: even cadence, mildly positive, confident rather than "
            "hedged, few questions or figures of speech, some narrative, almost all active voice.",
            **DEFAULT_TARGET_HRV,
        ),
        _template(
            "creative",
            "Essays and stories: bursty cadence, warm and felt, questions and figurative language, "
            "strongly narrative (past tense, people, time), active voice.",
            sentence_variance=0.60,
            emotional_valence=0.65,
            emotional_intensity=0.60,
            assertiveness_index=0.55,
            curiosity_index=0.35,
            metaphor_density=0.30,
            storytelling_index=0.70,
            active_voice_ratio=0.93,
        ),
        _template(
            "technical",
            "Documentation and reference: uniform sentences, neutral and low-key, precise claims "
            "with some hedging, literal, expository, more passives than other prose.",
            sentence_variance=0.35,
            emotional_valence=0.52,
            emotional_intensity=0.25,
            assertiveness_index=0.55,
            curiosity_index=0.10,
            metaphor_density=0.03,
            storytelling_index=0.20,
            active_voice_ratio=0.80,
        ),
    )
}
"""The built-in templates by name (tenant ``"builtin"``), in HRV order; copy one with
``HRVProfileManager.create_from_template(tenant, name, template)``."""

DEFAULT_PROFILE_NAME = DEFAULT_TARGET_NAME
DEFAULT_PROFILE: HRVProfile = BUILTIN_TEMPLATES[DEFAULT_PROFILE_NAME]
"""The target used when none is given (the demo's and the writer's default): ``professional``."""
