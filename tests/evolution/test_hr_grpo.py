"""HR-GRPO on the tiny seeded Llama (tests/llm/tiny_lm.py): metrics, the reward GRPO sees, targets, errors.

The tiny model's tokenizer is word-level over a few dozen words, so its paragraphs are poor and mostly
emptied by the writer's cleaning: the writing reward is low, which is fine here. No real model loads.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="the LM policy needs the local extra (transformers, peft)")
pytest.importorskip("peft", reason="the LM policy needs the local extra (transformers, peft)")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))
from tiny_lm import make_model, make_tokenizer  # noqa: E402

from resonance_os.core.errors import ProfileNotFoundError, ValidationError  # noqa: E402
from resonance_os.evolution.hr_grpo import (  # noqa: E402
    HR_GRPO_DEFAULTS,
    HRReward,
    evaluate_hr_grpo,
    heldout_prompts,
    hr_messages,
    train_hr_grpo,
    train_prompts,
)
from resonance_os.generation.llm_writing import SYSTEM_PROMPT, clean_reply  # noqa: E402
from resonance_os.llm.grpo import GRPOConfig  # noqa: E402
from resonance_os.llm.policy import LMPolicy, PolicyConfig  # noqa: E402
from resonance_os.profiles.templates import BUILTIN_TEMPLATES  # noqa: E402
from resonance_os.quality.reward import WritingReward  # noqa: E402
from resonance_os.rl.errors import ConfigError  # noqa: E402
from resonance_os.rl.logger import read_metrics  # noqa: E402

TOPICS = ["making bread at home", "walking meetings", "the history of the bicycle"]
FAST = {"max_new_tokens": 32, "learning_rate": 1e-3, "temperature": 1.5}


@pytest.fixture(scope="module")
def writing_reward():
    return WritingReward()


@pytest.fixture
def policy():
    tok = make_tokenizer()
    return LMPolicy(tok, make_model(len(tok), seed=0, context=256), PolicyConfig(lora_rank=4, lora_alpha=8))


def test_two_steps_log_metrics_and_the_quality_terms(policy, writing_reward, tmp_path):
    trainer = train_hr_grpo(
        profile="builtin/creative", prompts=TOPICS, steps=2, policy=policy, config=FAST, seed=0,
        log_dir=tmp_path, reward=writing_reward,
    )  # fmt: skip
    assert trainer.num_timesteps == 2 and len(trainer.history) == 2
    rows = read_metrics(tmp_path)
    assert [r["timesteps"] for r in rows] == [1, 2]
    for key in ("episode_reward_mean", "reward_writing", "reward_resonance", "reward_fluency", "reward_coherence",
                "reward_topic", "reward_repetition", "loss", "time_generate", "time_score", "time_train"):  # fmt: skip
        assert key in rows[-1], key
    # the quality terms are logged with weight 0: the reward is the writing reward alone
    assert rows[-1]["episode_reward_mean"] == pytest.approx(rows[-1]["reward_writing"])
    # the CPU defaults apply under the caller's overrides
    assert trainer.config.group_size == HR_GRPO_DEFAULTS["group_size"] == 4
    assert trainer.config.prompts_per_step == 2 and trainer.config.loss_type == "dapo"
    assert trainer.config.max_new_tokens == 32 and trainer.config.seed == 0
    # prompts are the writer's own paragraph prompts
    assert trainer.prompts[0] == hr_messages(TOPICS[0], trainer.hr_target)
    assert trainer.prompts[0][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert "making bread at home" in trainer.prompts[0][1]["content"]


def test_the_reward_given_to_grpo_is_the_writing_reward_of_the_cleaned_completion(policy, writing_reward):
    trainer = train_hr_grpo(
        target_hrv=[0.5] * 8,
        prompts=TOPICS,
        steps=1,
        policy=policy,
        config=FAST,
        seed=1,
        reward=writing_reward,
    )
    last = trainer.hr_reward.last
    assert len(last) == trainer.config.group_size * trainer.config.prompts_per_step
    for s in last:
        assert s.topic in TOPICS
        assert s.text == clean_reply(s.completion)
        expected = writing_reward.score(s.text, [0.5] * 8, prompt=s.topic).reward if s.text else 0.0
        assert s.reward == pytest.approx(expected, abs=1e-12)
    assert trainer.history[-1]["episode_reward_mean"] == pytest.approx(
        sum(s.reward for s in last) / len(last)
    )

    # and on paragraphs that survive cleaning (the tiny model rarely writes one): real, non-zero rewards
    hr = HRReward([0.5] * 8, reward=writing_reward)
    chat = hr_messages(TOPICS[0], [0.5] * 8)
    hr.register(TOPICS[0], chat)
    completions = [
        "Bread at home starts with flour, water and patience. The dough rises slowly overnight. "
        "In the morning the kitchen smells warm",  # unfinished last sentence: cut
        "Here is the paragraph:\nMaking bread at home is a small pleasure. I knead the dough by hand.",
        "the the the five",  # nothing usable: reward 0
    ]
    rewards = hr([chat] * 3, completions)
    for completion, value in zip(completions, rewards):
        text = clean_reply(completion)
        expected = writing_reward.score(text, [0.5] * 8, prompt=TOPICS[0]).reward if text else 0.0
        assert value == pytest.approx(expected, abs=1e-12)
    assert rewards[0] > 0 and rewards[1] > 0 and rewards[2] == 0.0
    assert hr.last[0].text.endswith("overnight.")
    assert hr.term("fluency")([chat] * 3, completions)[0] == pytest.approx(hr.last[0].score.fluency)


def test_a_feedback_reward_model_is_blended(writing_reward):
    class Always:
        def predict(self, text, target_hrv):
            return 1.0

    hr = HRReward([0.5] * 8, reward=writing_reward, reward_model=Always(), reward_model_weight=0.25)
    text = "Making bread at home is a small pleasure. I knead the dough by hand."
    base = writing_reward.score(text, [0.5] * 8, prompt=TOPICS[0]).reward
    assert hr([TOPICS[0]], [text]) == [pytest.approx(0.75 * base + 0.25)]
    assert [name.__name__ for name, _ in hr.functions()][-1] == "feedback"  # logged as reward_feedback

    class Broken:
        def predict(self, text, target_hrv):
            return 3.0

    with pytest.raises(ValidationError, match="predict returned 3.0"):
        HRReward([0.5] * 8, reward=writing_reward, reward_model=Broken())([TOPICS[0]], [text])


def test_the_target_resolves_from_a_profile_key(policy, writing_reward):
    trainer = train_hr_grpo(
        profile="builtin/creative", prompts=TOPICS[:1], steps=0, policy=policy, reward=writing_reward
    )
    assert trainer.hr_target == BUILTIN_TEMPLATES["creative"].vector.to_list()
    assert trainer.hr_source == "profile builtin/creative"
    assert trainer.hr_reward.target == trainer.hr_target
    default = train_hr_grpo(prompts=TOPICS[:1], steps=0, policy=policy, reward=writing_reward)
    assert default.hr_source.startswith("default profile")


def test_default_prompts_come_from_the_draft_pool_and_are_disjoint():
    train, heldout = train_prompts(), heldout_prompts()
    assert len(train) >= 10 and len(heldout) >= 10
    assert not set(train) & set(heldout)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"profile": "builtin/creative", "target_hrv": [0.5] * 8},
            ValidationError,
            "either target_hrv or profile",
        ),
        ({"profile": "builtin/nope"}, ProfileNotFoundError, "no built-in profile"),
        ({"target_hrv": [2.0] * 8}, ValidationError, "target HRV"),
        ({"prompts": []}, ValidationError, "non-empty list of topics"),
        ({"prompts": "bread"}, ValidationError, "non-empty list of topics"),
        ({"prompts": ["  "]}, ValidationError, "prompt is empty"),
        ({"steps": -1}, ValidationError, "steps=-1"),
        ({"steps": 1.5}, ValidationError, "steps=1.5"),
        ({"seed": "x"}, ValidationError, "seed="),
        ({"policy": object()}, ValidationError, "LMPolicy"),
        ({"config": 3}, ValidationError, "config must be"),
        ({"config": {"group_size": 1}}, ConfigError, "group_size"),
        ({"config": {"nonsense": 1}}, ConfigError, "unknown GRPO settings"),
        ({"reward_model": object()}, ValidationError, "predict"),
        ({"reward": "gpt"}, ValidationError, "reward must be one of fast, lm"),
        ({"reward_model_weight": 2.0, "reward_model": WritingReward}, ValidationError, "reward_model_weight"),
    ],
)
def test_bad_inputs_give_clear_errors(kwargs, error, match, policy, writing_reward):
    kwargs = {"prompts": TOPICS, "steps": 0, "policy": policy, "reward": writing_reward, **kwargs}
    with pytest.raises(error, match=match):
        train_hr_grpo(**kwargs)


def test_early_stopping_checks_held_out_topics(policy, writing_reward):
    trainer = train_hr_grpo(
        profile="builtin/creative", prompts=TOPICS, steps=3, policy=policy, config=FAST, seed=0,
        reward=writing_reward, early_stop_every=1, max_drift=None,
    )  # fmt: skip
    stop = trainer.hr_early_stopping
    assert [c["step"] for c in stop.checks] == [0, 1, 2, 3] and stop.stopped_at is None
    # the checks read the last held-out topics, never the first ones a benchmark reports on
    checked = [chat[1]["content"] for chat in stop.prompts]
    assert all(any(t in c for c in checked) for t in heldout_prompts()[-4:])
    assert not any(t in c for c in checked for t in heldout_prompts()[:8])
    assert train_hr_grpo(profile="builtin/creative", prompts=TOPICS, steps=0, policy=policy, config=FAST,
                         reward=writing_reward).hr_early_stopping is None  # fmt: skip


def test_evaluate_before_and_after(policy, writing_reward):
    target = [0.5] * 8
    trainer = train_hr_grpo(
        target_hrv=target, prompts=TOPICS, steps=2, policy=policy, config=FAST, seed=0, reward=writing_reward
    )
    opts = {"samples": 2, "seed": 3, "max_new_tokens": 24, "reward": writing_reward}
    after = evaluate_hr_grpo(trainer.policy, TOPICS[:2], target, **opts)
    assert set(after) >= {
        "resonance",
        "fluency",
        "coherence",
        "topic",
        "repetition",
        "reward",
        "empty",
        "samples",
    }
    assert after["n"] == 4 and len(after["samples"]) == 4
    assert all(0.0 <= after[k] <= 1.0 for k in ("resonance", "fluency", "reward", "empty"))
    assert evaluate_hr_grpo(trainer.policy, TOPICS[:2], target, **opts) == after  # seeded
    before = evaluate_hr_grpo(trainer.policy, TOPICS[:2], target, reference=True, **opts)
    with trainer.policy.reference():
        assert evaluate_hr_grpo(trainer.policy, TOPICS[:2], target, **opts) == before
    with pytest.raises(ValidationError, match="samples"):
        evaluate_hr_grpo(trainer.policy, TOPICS, target, samples=0)
    with pytest.raises(ValidationError, match="target HRV"):
        evaluate_hr_grpo(trainer.policy, TOPICS, [0.5] * 3)


def test_a_grpo_config_object_is_used_as_is(policy, writing_reward):
    cfg = GRPOConfig(group_size=2, prompts_per_step=1, max_new_tokens=8, seed=5)
    trainer = train_hr_grpo(prompts=TOPICS, steps=1, policy=policy, config=cfg, reward=writing_reward)
    assert trainer.config == cfg and len(trainer.hr_reward.last) == 2


def test_style_power_raises_the_style_term_to_a_power(writing_reward):
    text = "Making bread at home is a small pleasure. I knead the dough by hand."
    score = writing_reward.score(text, [0.5] * 8, prompt=TOPICS[0])
    chat = hr_messages(TOPICS[0], [0.5] * 8)
    for power in (1.0, 4.0):
        hr = HRReward([0.5] * 8, reward=writing_reward, style_power=power)
        hr.register(TOPICS[0], chat)
        assert hr([chat], [text])[0] == pytest.approx(
            score.reward * score.resonance ** (power - 1), abs=1e-12
        )
    for bad in (0.5, 100, True, "2"):
        with pytest.raises(ValidationError, match="style_power"):
            HRReward([0.5] * 8, reward=writing_reward, style_power=bad)
