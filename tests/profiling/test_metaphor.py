"""metaphor_density counts unmarked metaphor (nominal, appositive, verb, bare simile) and not literal copulas."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.profiling.hrv_extractor import HRVExtractor

METAPHOR = HRV_DIMENSIONS.index("metaphor_density")
DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"


@pytest.fixture(scope="module")
def extractor() -> HRVExtractor:
    return HRVExtractor()


def _constructions(extractor: HRVExtractor, text: str) -> dict[str, int]:
    return extractor.analyze(text).evidence["metaphor_density"]["constructions"]


@pytest.mark.parametrize(
    ("text", "construction"),
    [
        ("Time is a thief.", "nominal"),
        ("Grief was an ocean.", "nominal"),
        ("The market was a roaring lion that swallowed small companies whole.", "nominal"),
        ("Our new manager is a volcano.", "nominal"),
        ("Her uncle, a rock, never once complained.", "appositive"),
        ("Prices soared after the announcement.", "verb"),
        ("The idea swallowed him whole.", "verb"),
        ("It slipped through my fingers like sand.", "simile"),
        ("The rumour spread like wildfire through the village.", "simile"),
        ("The city was a sea of lights.", "frame"),
    ],
)
def test_figurative_constructions_are_counted(extractor: HRVExtractor, text: str, construction: str) -> None:
    assert _constructions(extractor, text).get(construction, 0) >= 1
    assert extractor.extract(text)[METAPHOR] > 0.3


@pytest.mark.parametrize(
    "text",
    [
        "The cat is an animal.",
        "She is a doctor.",
        "He was a teacher at the village school.",
        "We are a team.",
        "The reason was a fire in the kitchen.",
        "The winner is a horse from Kentucky.",
        "My dog is a terrier.",
        "The event was a concert in the park.",
        "In the morning, the sun rose over the hills.",
        "I would like a coffee, please.",
        "The birds soared over the lake.",
        "Love is blind, they say.",
        "A bore is a man who talks when you want him to listen.",
        "The price jump was large.",
    ],
)
def test_literal_sentences_score_zero(extractor: HRVExtractor, text: str) -> None:
    analysis = extractor.analyze(text)
    assert analysis.evidence["metaphor_density"]["figurative_markers"] == []
    assert analysis.hrv[METAPHOR] == 0.0


def _pairs(name: str) -> list[dict[str, str]]:
    return [
        json.loads(line) for line in (DATA / f"metaphor_pairs_{name}.jsonl").read_text("utf-8").splitlines()
    ]


def test_held_out_set_is_sourced_and_disjoint_from_the_dev_set() -> None:
    held_out, dev = _pairs("heldout"), _pairs("dev")
    assert len(held_out) >= 80
    assert all(p["source"] and p["figurative"] != p["literal"] for p in held_out)
    sentences = {p["figurative"] for p in dev} | {p["literal"] for p in dev}
    assert not sentences & ({p["figurative"] for p in held_out} | {p["literal"] for p in held_out})


def test_held_out_pairs_ranked_without_false_alarms(extractor: HRVExtractor) -> None:
    """Regression guard on the held-out set (measured 0.41 accuracy, 0 false alarms; the extractor
    before the unmarked-metaphor rules: 0.19)."""
    pairs = _pairs("heldout")
    right = sum(
        extractor.extract(p["figurative"])[METAPHOR] > extractor.extract(p["literal"])[METAPHOR]
        for p in pairs
    )
    alarms = sum(
        bool(extractor.analyze(p["literal"]).evidence["metaphor_density"]["figurative_markers"])
        for p in pairs
    )
    assert right / len(pairs) >= 0.38
    assert alarms == 0
