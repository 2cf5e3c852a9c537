"""Held-out early stopping on the tiny seeded Llama: checks, the drift guard, patience, restoring the best."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers", reason="the LM policy needs the local extra (transformers, peft)")
pytest.importorskip("peft", reason="the LM policy needs the local extra (transformers, peft)")

from tiny_lm import make_model, make_tokenizer  # noqa: E402

from resonance_os.llm.early_stopping import HeldOutEarlyStopping  # noqa: E402
from resonance_os.llm.grpo import GRPO, GRPOConfig  # noqa: E402
from resonance_os.llm.policy import LMPolicy, PolicyConfig  # noqa: E402
from resonance_os.rl.errors import ConfigError  # noqa: E402

TRAIN = ["the cat sat on the mat", "a dog ran", "one two three"]
HELDOUT = ["hello world", "red blue green"]
SAMPLING = dict(max_new_tokens=6, temperature=1.0, chat_template=False)  # plain-string prompts


def vowel_share(prompts, completions):
    """Share of the completion's words that open with a vowel: varies within every group."""
    return [sum(w[0] in "aeiou" for w in c.split()) / max(len(c.split()), 1) for c in completions]


def make_policy() -> LMPolicy:
    tok = make_tokenizer()
    return LMPolicy(tok, make_model(len(tok)), PolicyConfig(lora_rank=4, lora_alpha=8))


def trainer_for(policy: LMPolicy, learning_rate: float) -> GRPO:
    config = GRPOConfig(
        group_size=4, prompts_per_step=2, max_new_tokens=6, learning_rate=learning_rate, seed=0
    )
    return GRPO(policy, vowel_share, TRAIN, config)


def stopper(policy: LMPolicy, **kwargs) -> HeldOutEarlyStopping:
    return HeldOutEarlyStopping(
        policy, HELDOUT, vowel_share, **{"every": 2, "samples": 4, **SAMPLING, **kwargs}
    )


def test_the_start_is_the_reference_and_checks_come_every_n_steps():
    policy = make_policy()
    stop = stopper(policy, max_drift=None)
    assert stop.checks == [
        {"step": 0, "heldout_reward": stop.checks[0]["heldout_reward"], "judge": stop.start_judge,
         "drift": 0.0, "within_drift": True}
    ]  # fmt: skip
    assert stop.start_judge < 0  # a mean log-probability
    trainer_for(policy, 5e-3).learn(5, callback=stop)
    assert [c["step"] for c in stop.checks] == [0, 2, 4]
    assert stop.stopped_at is None


def test_drift_from_the_start_counts_only_what_this_training_moves():
    policy = make_policy()
    trainer_for(policy, 0.05).learn(6)  # trained before, on purpose: far from the reference now
    from_reference = stopper(policy, max_drift=0.5)
    from_start = stopper(policy, max_drift=0.5, drift_from="start")
    with policy.reference():
        assert from_reference.start_judge == pytest.approx(stopper(policy).start_judge)
    # the start is the policy as passed: its own samples, reward and judge (what a stop puts back)
    reward, judge = from_start._evaluate()
    assert (from_start.checks[0]["heldout_reward"], from_start.start_judge) == pytest.approx((reward, judge))
    assert from_start.start_judge != pytest.approx(from_reference.start_judge)
    # an untouched policy's first check: no drift from its start, whatever it drifted before
    assert from_start(type("Trainer", (), {"num_timesteps": 2})(), {})
    assert from_start.checks[-1]["drift"] == pytest.approx(0.0, abs=1e-6)
    with pytest.raises(ConfigError, match="'reference' or 'start'"):
        stopper(policy, drift_from="base")


def test_drift_stops_training_and_the_best_weights_come_back():
    policy = make_policy()
    stop = stopper(policy, max_drift=0.5)
    trainer = trainer_for(policy, 0.01)
    trainer.learn(40, callback=stop)
    assert stop.stopped_at is not None and trainer.num_timesteps == stop.stopped_at < 40
    last = stop.checks[-1]
    assert last["drift"] > 0.5 and not last["within_drift"]
    best = stop.best  # a check after the start: it raised the held-out reward within the drift limit
    assert 0 < best["step"] < last["step"] and best["heldout_reward"] > stop.checks[0]["heldout_reward"]
    # the policy now computes what it did at the best check: same seeded samples, same figures
    reward, judge = stop._evaluate()
    assert (reward, judge) == pytest.approx((best["heldout_reward"], best["judge"]), abs=1e-6)


def test_a_run_that_never_helps_returns_the_policy_it_started_with():
    policy = make_policy()
    start = [p.detach().clone() for p in policy.trainable_parameters()]
    # the held-out reward never improves on the start, so patience 2 stops at the second check
    stop = HeldOutEarlyStopping(
        policy, HELDOUT, lambda prompts, completions: [0.0] * len(completions), every=2, samples=4,
        max_drift=None, patience=2, **SAMPLING,
    )  # fmt: skip
    trainer = trainer_for(policy, 0.01)
    trainer.learn(30, callback=stop)
    assert stop.stopped_at == trainer.num_timesteps == 4 and stop.best["step"] == 0
    assert [c["step"] for c in stop.checks] == [0, 2, 4] and stop.checks[-1]["drift"] > 0  # it did train
    assert all(torch.equal(p, s) for p, s in zip(policy.trainable_parameters(), start))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"every": 0}, "every=0"),
        ({"samples": 0}, "samples=0"),
        ({"max_drift": 0.0}, "max_drift=0.0"),
        ({"patience": 0}, "patience=0"),
    ],
)
def test_bad_settings_are_named(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        stopper(make_policy(), **kwargs)


def test_prompts_and_reward_are_checked():
    policy = make_policy()
    with pytest.raises(ConfigError, match="held-out prompts"):
        HeldOutEarlyStopping(policy, [], vowel_share, **SAMPLING)
    with pytest.raises(ConfigError, match="reward_fn"):
        HeldOutEarlyStopping(policy, HELDOUT, "cat", **SAMPLING)
    with pytest.raises(ConfigError, match="returned 1 rewards"):
        HeldOutEarlyStopping(policy, HELDOUT, lambda p, c: [0.0], **SAMPLING)
