"""The voice check's two attributions: the stylometric classifier and the HRV nearest-profile rule."""

from __future__ import annotations

import pytest

from resonance_os.core.errors import ValidationError
from resonance_os.voice.corpora import WRITERS, load_writer, load_writer_records
from resonance_os.voice.profile_match import attribute_hrv, match_hrv, writer_profiles
from resonance_os.voice.stylometry import (
    StylometricClassifier,
    WriterReward,
    fit_classifier,
    normalise_typography,
)


@pytest.fixture(scope="module")
def small_classifier() -> StylometricClassifier:
    return fit_classifier(per_writer=200)


def test_classifier_attributes_held_out_books_far_above_chance(small_classifier) -> None:
    for name in WRITERS:
        heldout = load_writer(name, "heldout")[:60]
        hits = sum(a.writer == name for a in small_classifier.attribute_many(heldout))
        assert hits / len(heldout) >= 0.65, name  # chance is 1/3


@pytest.fixture(scope="module")
def word_classifier() -> StylometricClassifier:
    return fit_classifier(per_writer=200, features="words")


def test_the_training_family_reads_words_and_attributes_held_out_books_too(word_classifier) -> None:
    for name in WRITERS:
        heldout = load_writer(name, "heldout")[:60]
        hits = sum(a.writer == name for a in word_classifier.attribute_many(heldout))
        assert hits / len(heldout) >= 0.65, name
    # punctuation marks are words: the same words with Poe's dashes and semicolons read differently
    plain = word_classifier.probabilities(["I said it was so and went on to the house"])[0]
    marked = word_classifier.probabilities(["I said - it was so; and went on - to the house"])[0]
    assert plain != marked


def test_writer_reward_is_the_probability_of_its_writer(word_classifier) -> None:
    reward = WriterReward("poe", word_classifier)
    poe, austen = load_writer("poe", "heldout")[0], load_writer("austen", "heldout")[0]
    assert reward.predict(poe, [0.5] * 8) == pytest.approx(word_classifier.probabilities([poe])[0]["poe"])
    assert 0.0 <= reward.predict(austen) < reward.predict(poe) <= 1.0
    with pytest.raises(ValidationError, match="not 'dickens'"):
        WriterReward("dickens", word_classifier)
    with pytest.raises(ValidationError, match="'characters' or 'words'"):
        StylometricClassifier(["a text", "another"], ["austen", "poe"], features="letters")


def test_probabilities_cover_every_writer_and_sum_to_one(small_classifier) -> None:
    attribution = small_classifier.attribute(load_writer("poe", "heldout")[0])
    assert set(attribution.probabilities) == set(WRITERS)
    assert type(attribution.writer) is str  # not numpy's string: printed and JSON-serialised as is
    assert sum(attribution.probabilities.values()) == pytest.approx(1.0)
    assert attribution.writer == max(attribution.probabilities, key=attribution.probabilities.get)


def test_classifier_refuses_bad_input(small_classifier) -> None:
    with pytest.raises(ValidationError, match="non-empty"):
        small_classifier.attribute("   ")
    with pytest.raises(ValidationError, match="two writers"):
        StylometricClassifier(["a text", "another"], ["austen", "austen"])


def test_typography_does_not_name_the_edition() -> None:
    assert normalise_typography("\u201cWell\u2014no,\u201d she said--\u2018quite\u2019") == (
        "\"Well - no,\" she said - 'quite'"
    )


def test_nearest_profile_is_the_smallest_mean_gap() -> None:
    profiles = {"low": [0.2] * 8, "high": [0.8] * 8}
    match = match_hrv([0.3] * 8, profiles)
    assert match.name == "low"
    assert match.gaps["low"] == pytest.approx(0.1)
    assert match.gaps["high"] == pytest.approx(0.5)


def test_hrv_rule_tells_held_out_passages_apart_better_than_chance() -> None:
    assert set(writer_profiles()) == set(WRITERS)
    hits = total = 0
    for name in WRITERS:
        records = load_writer_records(name, "heldout")[:150]
        for i in range(0, len(records) - 2, 3):
            passage = "\n\n".join(r.text for r in records[i : i + 3])
            hits += attribute_hrv(passage).name == name
            total += 1
    assert hits / total > 0.4  # chance 1/3; measured 0.50 on all held-out passages
