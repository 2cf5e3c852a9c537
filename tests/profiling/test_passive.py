"""Passive voice by rule: be/get form, optional adverbs, past participle; and its exceptions."""

from __future__ import annotations

import pytest

from resonance_os.profiling.passive import detect_passives

PASSIVE = {
    "The file was deleted.": ["was deleted"],
    "The window is quickly and quietly closed.": [],  # "and" breaks the adverb run: not counted
    "The report was not always carefully checked.": ["was not always carefully checked"],
    "It has been shown that the method works.": ["been shown"],
    "The method can be overridden by subclasses.": ["be overridden"],
    "They got fired after the audit.": ["got fired"],
    "The house is being built.": ["being built"],
    "Mistakes were made and the keys were taken.": ["were made", "were taken"],
    "It\u2019s used everywhere.": ["It's used"],
    "Arguments aren't evaluated twice.": ["aren't evaluated"],
    "The value is set to None and the list is sorted.": ["is set", "is sorted"],
}
ACTIVE = [
    "The team wrote the report.",
    "I am tired.",
    "She was interested in the offer.",
    "He was naked and afraid.",
    "The supply is unlimited.",
    "It's been a long day.",
    "We are going home.",
    "The cat is on the mat.",
    "You are supposed to ask first.",
]


@pytest.mark.parametrize("sentence", list(PASSIVE))
def test_passives_found(sentence: str) -> None:
    assert [m.phrase for m in detect_passives(sentence)] == [
        p.replace("It's", "It\u2019s") if "\u2019" in sentence else p for p in PASSIVE[sentence]
    ]


@pytest.mark.parametrize("sentence", ACTIVE)
def test_active_and_adjectival_not_flagged(sentence: str) -> None:
    assert detect_passives(sentence) == []


def test_offsets_point_at_auxiliary_and_participle() -> None:
    text = "Intro line.\n\nLater the gate was firmly locked."
    (match,) = detect_passives(text)
    assert text[match.start : match.end] == "was firmly locked"
    assert text[match.participle_start : match.end] == "locked"
