"""ResonanceOS: measure, write toward and learn the Human Resonance Vector (HRV) of text.

The names the original ResonanceOS exported at the top level are available here too
(``from resonance_os import HumanResonantWriter, HRVProfileManager, HRVExtractor, HRV_DIMENSIONS,
HRVVector, HRVProfile``); the three classes are imported on first use, so ``import resonance_os.rl``
stays light. ``docs/migrating.md`` maps every original call to ours.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.core.hrv_types import HRVProfile, HRVVector

if TYPE_CHECKING:
    from resonance_os.generation.human_resonant_writer import HumanResonantWriter
    from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager
    from resonance_os.profiling.hrv_extractor import HRVExtractor

__version__ = "0.1.0"

__all__ = [
    "HRV_DIMENSIONS",
    "HRVExtractor",
    "HRVProfile",
    "HRVProfileManager",
    "HRVVector",
    "HumanResonantWriter",
]


def __getattr__(name: str) -> Any:
    if name == "HumanResonantWriter":
        from resonance_os.generation.human_resonant_writer import HumanResonantWriter

        return HumanResonantWriter
    if name == "HRVProfileManager":
        from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager

        return HRVProfileManager
    if name == "HRVExtractor":
        from resonance_os.profiling.hrv_extractor import HRVExtractor

        return HRVExtractor
    raise AttributeError(f"module 'resonance_os' has no attribute {name!r}")
