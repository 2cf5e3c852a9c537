"""The HRV nearest-profile rule: a text is attributed to the profile its measured HRV is nearest.

Distance is the mean |gap| over the 8 dimensions (``core.hrv_types.mean_gap``), the figure the writer
aims to bring under 0.05. A writer's profile is what ``resonance profiles from-text`` would save for
the writer's train paragraphs joined: the ``HRVExtractor``'s measure of the whole text.

    from resonance_os.voice.profile_match import attribute_hrv, nearest_profile

    attribute_hrv(text)                              # ProfileMatch(name="austen", gaps={...})
    nearest_profile(text, {"technical": [...], ...}) # against any named profiles
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from resonance_os.core.hrv_types import mean_gap
from resonance_os.profiling.hrv_extractor import HRVExtractor
from resonance_os.voice.corpora import WRITERS, load_writer


@dataclass(frozen=True)
class ProfileMatch:
    """The nearest profile's name and the mean |gap| to every profile."""

    name: str
    gaps: dict[str, float]


@cache
def _extractor() -> HRVExtractor:
    return HRVExtractor()


@cache
def writer_profiles(writers: tuple[str, ...] = WRITERS) -> dict[str, tuple[float, ...]]:
    """Each writer's HRV measured on all its train paragraphs (the from-text profile of them)."""
    extractor = _extractor()
    return {name: tuple(extractor.extract("\n\n".join(load_writer(name, "train")))) for name in writers}


def match_hrv(measured: Sequence[float], profiles: Mapping[str, Sequence[float]]) -> ProfileMatch:
    """The profile nearest an already measured HRV."""
    gaps = {name: mean_gap(values, measured) for name, values in profiles.items()}
    return ProfileMatch(min(gaps, key=gaps.__getitem__), gaps)


def nearest_profile(text: str, profiles: Mapping[str, Sequence[float]]) -> ProfileMatch:
    """The profile whose HRV ``text`` measures nearest (``ValidationError`` for text with no words)."""
    return match_hrv(_extractor().extract(text), profiles)


def attribute_hrv(text: str) -> ProfileMatch:
    """The shipped writer whose train-paragraph profile ``text`` measures nearest."""
    return nearest_profile(text, writer_profiles())
