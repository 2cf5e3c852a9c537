"""The extractor's public surface: shapes, ranges, evidence, bad input and messy text."""

from __future__ import annotations

import json
import math

import pytest

from resonance_os.core.errors import ResonanceError, ValidationError
from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.core.hrv_types import validate_hrv
from resonance_os.profiling.hrv_extractor import HRVAnalysis, HRVExtractor

STORY = (
    "Yesterday the old harbour was quiet. Suddenly a boat appeared, like a ghost in the fog! "
    '"Who is there?" she asked. Nobody answered. The rope had been cut, and I think it was done on purpose. '
    "Why would anyone do that? It was clearly a warning."
)


@pytest.fixture(scope="module")
def extractor() -> HRVExtractor:
    return HRVExtractor()


def test_extract_returns_eight_floats_in_unit_interval(extractor: HRVExtractor) -> None:
    hrv = extractor.extract(STORY)
    assert len(hrv) == len(HRV_DIMENSIONS) == 8
    assert all(isinstance(v, float) and 0.0 <= v <= 1.0 and math.isfinite(v) for v in hrv)
    assert validate_hrv(hrv) == hrv


def test_no_dimension_is_constant(extractor: HRVExtractor) -> None:
    texts = [
        STORY,
        "The function returns a list. The list is sorted by key and may be modified by the caller.",
        "I absolutely LOVE it! Best day ever!!! Why not?",
        "Perhaps it might work. It seems somewhat unclear, like a fog over a sea of numbers.",
    ]
    vectors = [extractor.extract(t) for t in texts]
    for k, name in enumerate(HRV_DIMENSIONS):
        assert len({round(v[k], 6) for v in vectors}) > 1, f"{name} is constant over different texts"


def test_extract_is_deterministic_and_matches_analyze(extractor: HRVExtractor) -> None:
    assert extractor.extract(STORY) == extractor.extract(STORY)
    analysis = extractor.analyze(STORY)
    assert analysis.hrv == extractor.extract(STORY)
    assert list(analysis.as_dict()) == HRV_DIMENSIONS


def test_extract_many_equals_extract_each(extractor: HRVExtractor) -> None:
    texts = [STORY, "A plain sentence.", "Is this a question?"]
    assert extractor.extract_many(texts) == [extractor.extract(t) for t in texts]
    assert extractor.extract_many(iter(texts)) == extractor.extract_many(texts)


def test_evidence_shows_what_was_counted(extractor: HRVExtractor) -> None:
    a = extractor.analyze(STORY)
    assert isinstance(a, HRVAnalysis)
    ev = a.evidence
    assert set(ev) == set(HRV_DIMENSIONS)
    assert ev["sentence_variance"]["sentence_lengths"] == [6, 10, 5, 2, 13, 5, 5]
    assert a.n_sentences == 7 and a.n_words == sum(ev["sentence_variance"]["sentence_lengths"])
    assert ev["curiosity_index"]["questions"] == ['"Who is there?" she asked.', "Why would anyone do that?"]
    assert "why" in ev["curiosity_index"]["curiosity_markers"]
    phrases = [p["phrase"] for p in ev["active_voice_ratio"]["passives"]]
    assert phrases == ["been cut", "was done"]
    first = ev["active_voice_ratio"]["passives"][0]
    assert STORY[first["start"] : first["end"]] == "been cut"
    assert "i think" in ev["assertiveness_index"]["hedges"]
    assert "clearly" in ev["assertiveness_index"]["boosters"]
    assert "like a ghost" in ev["metaphor_density"]["figurative_markers"]
    assert {"yesterday", "suddenly"} <= set(ev["storytelling_index"]["time_markers"])
    assert {"appeared", "asked", "answered"} <= set(ev["storytelling_index"]["past_tense_verbs"])
    assert ev["storytelling_index"]["dialogue_sentences"] == ['"Who is there?" she asked.']
    assert ev["emotional_intensity"]["exclamatory_sentences"] == [
        "Suddenly a boat appeared, like a ghost in the fog!"
    ]
    assert "warning" in ev["emotional_valence"]["negative_words"]


def test_to_dict_is_json_serialisable(extractor: HRVExtractor) -> None:
    payload = extractor.analyze(STORY).to_dict()
    restored = json.loads(json.dumps(payload))
    assert list(restored["hrv"]) == HRV_DIMENSIONS
    assert restored["evidence"]["active_voice_ratio"]["passive_count"] == 2


@pytest.mark.parametrize("text", ["", "   ", "\n\t \n"])
def test_empty_text_raises_validation_error(extractor: HRVExtractor, text: str) -> None:
    with pytest.raises(ValidationError, match="empty"):
        extractor.extract(text)
    with pytest.raises(ResonanceError):
        extractor.analyze(text)


def test_text_without_words_raises_validation_error(extractor: HRVExtractor) -> None:
    with pytest.raises(ValidationError, match="no words"):
        extractor.extract("!!! ... ???")


@pytest.mark.parametrize("bad", [None, 42, ["a list"], b"bytes"])
def test_non_string_raises_type_error_with_message(extractor: HRVExtractor, bad: object) -> None:
    with pytest.raises(TypeError, match="text must be a str"):
        extractor.extract(bad)  # type: ignore[arg-type]


def test_bytes_error_says_how_to_fix(extractor: HRVExtractor) -> None:
    with pytest.raises(TypeError, match="decode"):
        extractor.extract(b"hello")  # type: ignore[arg-type]


MESSY = {
    "unicode": "Ünïcödé tëxt — naïve café… 日本語のテキスト。 Emoji 😀 here! Ελληνικά κείμενα.",
    "curly": "\u201cIt\u2019s wonderful,\u201d she said. \u2018Really?\u2019 he asked.",
    "bullets": "Things to pack:\n- a tent\n- two lamps\n* a stove\n\u2022 maps\n1. boots\n2) socks",
    "markdown": "# Title\n\n**Bold** claims are *clearly* made here.\n\n> A quote was given.\n\n`code` and [a link](http://x.y).",
    "html": "<p>The <b>door</b> was opened &amp; closed.</p><ul><li>It&rsquo;s fine</li></ul><br/>Done",
    "no punctuation": "no punctuation at all just words flowing on and on like a river in the night",
    "single word": "Hello",
    "numbers": "3.14 2.71 1.41",
    "windows newlines": "First line.\r\nSecond line was written.\r\n",
}


@pytest.mark.parametrize("name", list(MESSY))
def test_messy_text_gives_valid_output(extractor: HRVExtractor, name: str) -> None:
    text = MESSY[name]
    hrv = extractor.extract(text)
    assert validate_hrv(hrv) == hrv
    analysis = extractor.analyze(text)
    assert analysis.hrv == hrv
    json.dumps(analysis.to_dict())


def test_bullets_and_headings_split_into_units(extractor: HRVExtractor) -> None:
    a = extractor.analyze(MESSY["bullets"])
    assert a.evidence["sentence_variance"]["sentence_lengths"] == [3, 2, 2, 2, 1, 1, 1]


def test_html_offsets_point_into_original_text(extractor: HRVExtractor) -> None:
    text = MESSY["html"]
    passive = extractor.analyze(text).evidence["active_voice_ratio"]["passives"][0]
    assert text[passive["start"] : passive["end"]] == passive["phrase"] == "was opened"


def test_multi_megabyte_text_completes_with_valid_output(extractor: HRVExtractor) -> None:
    block = (
        "The harbour was quiet when we arrived. Why was nobody there? I think the boats had been moved! "
        "Later, she said the storm came like a wall of water.\n\n"
    )
    text = block * (3_000_000 // len(block))
    assert len(text) > 2_900_000
    hrv = extractor.extract(text)
    assert validate_hrv(hrv) == hrv
    assert hrv == pytest.approx(extractor.extract(block * 4), abs=1e-9)


def test_one_long_line_without_sentence_punctuation(extractor: HRVExtractor) -> None:
    text = " ".join(["word"] * 200_000)
    hrv = extractor.extract(text)
    assert hrv[HRV_DIMENSIONS.index("sentence_variance")] == 0.0


PATHOLOGICAL = {
    "run of full stops": "a" + "." * 200_000 + " b",
    "run of exclamation marks": "Wow " + "!" * 200_000 + " ok",
    "spaces after a full stop": "a." + " " * 200_000 + "b",
    "one huge word": "x" * 1_000_000,
    "passives in one long unpunctuated sentence": "the file was used and " * 20_000,
    "only angle brackets": "<" * 200_000 + " word",
    "only quotes": '"' * 200_000 + " word",
}


@pytest.mark.parametrize("name", list(PATHOLOGICAL))
def test_pathological_inputs_finish_with_valid_output(extractor: HRVExtractor, name: str) -> None:
    """Runs that make a backtracking regex quadratic: these finish in milliseconds when linear."""
    text = PATHOLOGICAL[name]
    analysis = extractor.analyze(text)
    assert validate_hrv(analysis.hrv) == analysis.hrv
    for passive in analysis.evidence["active_voice_ratio"]["passives"][:3]:
        assert len(passive["sentence"]) <= 300
