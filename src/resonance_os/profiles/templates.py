"""Built-in target profiles: starting points a tenant can copy, and the default target.

Every value lies between the 10th and 90th percentile of what the extractor measures on real prose
(``core.hrv_constants.TYPICAL_HRV``), so each template is a place real writing reaches, not a corner
of the cube: ``technical`` near the Python reference's medians, ``creative`` in the upper quarter of
the fortunes on the expressive dimensions (cadence, intensity, questions, figures, narrative),
``professional`` between them. A test checks this against the corpus.
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
            sentence_variance=0.56,
            emotional_valence=0.60,
            emotional_intensity=0.24,
            assertiveness_index=0.50,
            curiosity_index=0.12,
            metaphor_density=0.25,
            storytelling_index=0.55,
            active_voice_ratio=0.95,
        ),
        _template(
            "technical",
            "Documentation and reference: uniform sentences, neutral and low-key, precise claims "
            "with some hedging, literal, expository, more passives than other prose.",
            sentence_variance=0.36,
            emotional_valence=0.51,
            emotional_intensity=0.07,
            assertiveness_index=0.50,
            curiosity_index=0.00,
            metaphor_density=0.00,
            storytelling_index=0.08,
            active_voice_ratio=0.62,
        ),
    )
}
"""The built-in templates by name (tenant ``"builtin"``), in HRV order; copy one with
``HRVProfileManager.create_from_template(tenant, name, template)``."""

DEFAULT_PROFILE_NAME = DEFAULT_TARGET_NAME
DEFAULT_PROFILE: HRVProfile = BUILTIN_TEMPLATES[DEFAULT_PROFILE_NAME]
"""The target used when none is given (the demo's and the writer's default): ``professional``."""
