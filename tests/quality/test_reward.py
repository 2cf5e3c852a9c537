"""The combined writing reward on held-out real prose and damaged versions of it."""

import random

import pytest

from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.profiles.templates import BUILTIN_TEMPLATES
from resonance_os.quality import corpus, damage
from resonance_os.quality.reward import (
    REWARD_TERMS,
    REWARDS,
    WritingReward,
    make_reward,
    quality_factor,
    reward_kind,
)

PROFESSIONAL = BUILTIN_TEMPLATES["professional"].vector.to_list()


@pytest.fixture(scope="module")
def reward():
    return WritingReward()


@pytest.fixture(scope="module")
def held_out():
    return corpus.document_paragraphs(corpus.pydoc_paragraphs("heldout"))


@pytest.mark.parametrize("make", [damage.word_salad, damage.shuffle_within_sentences])
def test_held_out_prose_beats_its_scrambled_versions(reward, held_out, make):
    wins = sum(
        reward.score(text, PROFESSIONAL).reward > reward.score(make(text, seed=i), PROFESSIONAL).reward
        for i, text in enumerate(held_out)
    )
    assert wins / len(held_out) >= 0.95


def test_prose_about_the_prompt_beats_the_same_prose_under_another_prompt(reward, held_out):
    rng = random.Random(0)
    wins = 0
    for text in held_out:
        words = sorted({w.strip(".,;:()") for w in text.split() if len(w) > 8 and w.isalpha()})
        prompt = " ".join(words[:3]) or "language reference"
        other = rng.choice([p for p in held_out if p is not text])
        wins += (
            reward.score(text, PROFESSIONAL, prompt=prompt).reward
            > reward.score(other, PROFESSIONAL, prompt=prompt).reward
        )
    assert wins / len(held_out) >= 0.8


def test_the_reward_is_resonance_times_the_quality_factor(reward, held_out):
    scored = reward.score(held_out[0], PROFESSIONAL, prompt="names and binding")
    assert scored.reward == pytest.approx(
        scored.resonance * quality_factor(scored.fluency, scored.coherence, scored.topic, scored.repetition)
    )
    assert scored.resonance == pytest.approx(
        1 - sum(abs(m - t) for m, t in zip(scored.hrv, PROFESSIONAL)) / len(PROFESSIONAL)
    )
    payload = scored.to_dict()
    assert list(payload["hrv"]) == HRV_DIMENSIONS
    assert set(REWARD_TERMS) <= set(payload) and payload["meta_text"] == []


def test_meta_text_and_copying_zero_the_reward(reward, held_out):
    text = held_out[1]
    assert reward.score("Here is the revised paragraph: " + text, PROFESSIONAL).reward == 0.0
    copied = reward.score(text, PROFESSIONAL, context=[text])
    assert copied.repetition == 1.0 and copied.reward == 0.0


def test_bad_input_is_a_clear_error(reward):
    with pytest.raises(ValidationError, match="non-empty"):
        reward.score("   ", PROFESSIONAL)
    with pytest.raises(ValidationError, match="8"):
        reward.score("Fine text.", [0.5] * 7)
    with pytest.raises(ValidationError, match="reward must be one of fast, lm"):
        WritingReward(model="gpt")


def test_a_text_scored_again_gives_what_a_fresh_reward_gives(reward, held_out):
    """The reward remembers a text's HRV and quality terms; the prompt, the context and the target
    still count, and the caller's HRV still replaces the measured one."""
    text = held_out[0]
    creative, technical = (BUILTIN_TEMPLATES[n].vector.to_list() for n in ("creative", "technical"))
    reward.score(text, creative, prompt="gardens")
    for kwargs in (
        {"prompt": "gardens"},
        {"prompt": "taxes"},
        {"prompt": "gardens", "context": [text]},
        {"hrv": [0.5] * 8},
    ):
        assert reward.score(text, technical, **kwargs) == WritingReward().score(text, technical, **kwargs)


def test_the_reward_is_chosen_by_name_or_passed_as_built(reward):
    """make_reward is the one way callers choose: "fast" by default, a built reward as it is."""
    assert REWARDS == ("fast", "lm")
    assert make_reward().kind == make_reward("fast").kind == reward.kind == "fast"
    assert make_reward(reward) is reward and reward_kind(reward) == "fast"
    assert make_reward("fast", similarity_method="cosine").similarity_method.value == "cosine"
    text = "The garden opens at dawn. Volunteers water the beds before the heat."
    assert make_reward("fast").score(text, PROFESSIONAL) == reward.score(text, PROFESSIONAL)
    for bad in ("gpt", "FAST", "", 1):
        with pytest.raises(ValidationError, match="reward must be one of fast, lm .*got"):
            make_reward(bad)


@pytest.mark.slow
def test_the_lm_choice_builds_the_reward_smollm2_reads():
    from resonance_os.quality.coherence import LMCoherence
    from resonance_os.quality.fluency import LMFluency

    lm = make_reward("lm")
    assert lm.kind == "lm" and reward_kind(lm) == "lm"
    assert isinstance(lm.fluency_model, LMFluency) and isinstance(lm.coherence_model, LMCoherence)
    assert 0.0 <= lm.score("The garden opens at dawn. It closes at dusk.", PROFESSIONAL).reward <= 1.0
