"""A policy update from transitions: teacher-forced log-probs of the recorded tokens, a GRPO loss on
their advantages; calls with a positive advantage become likelier, negative ones less likely, and the
recorded sampling log-probs are used as pi_old when every token has one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))
from tiny_lm import make_model, make_tokenizer  # noqa: E402

from resonance_os.llm.policy import LMPolicy, PolicyConfig  # noqa: E402
from resonance_os.traces import Transition  # noqa: E402
from resonance_os.traces.update import TransitionUpdater, UpdateConfig, sampled_logprobs  # noqa: E402

PROMPT = [5, 6, 7, 8]


def _call(response: list[int], logprobs: list | None = None) -> Transition:
    return Transition(PROMPT, response, 1.0, "0" * 16, "ro", "at", "*", logprobs=logprobs)


def _logp(policy: LMPolicy, response: list[int]) -> float:
    ids = torch.tensor([PROMPT + response])
    with torch.no_grad():
        return float(policy.token_logprobs(ids, torch.ones_like(ids), torch.ones(1, len(response))).sum())


@pytest.fixture
def policy():
    torch.manual_seed(0)
    tokenizer = make_tokenizer()
    return LMPolicy(tokenizer, make_model(len(tokenizer)), PolicyConfig(lora_rank=4))


def test_updates_move_probability_toward_positive_advantages(policy):
    good, bad = [20, 21], [30]
    before = (_logp(policy, good), _logp(policy, bad))
    updater = TransitionUpdater(policy, UpdateConfig(learning_rate=5e-3))
    for _ in range(15):
        metrics = updater.step([(_call(good), 1.0), (_call(bad), -1.0), (_call([]), 1.0)])
    assert metrics["samples"] == 2.0  # the call without response tokens is skipped
    after = (_logp(policy, good), _logp(policy, bad))
    assert after[0] > before[0] + 0.5 and after[1] < before[1] - 0.5


def test_recorded_sampling_logprobs_are_the_old_policy(policy):
    updater = TransitionUpdater(policy, UpdateConfig(learning_rate=5e-3))
    stale = [
        {"token": "x", "logprob": -30.0},
        {"token": "y", "logprob": -30.0},
    ]  # sampled by a far older policy
    metrics = updater.step([(_call([20, 21], stale), 1.0)])
    assert metrics["clip_fraction_high"] == 1.0 and metrics["ratio_mean"] > 1e6  # pi / pi_old, clipped
    on_policy = updater.step([(_call([20, 21]), 1.0)])
    assert on_policy["ratio_mean"] == pytest.approx(1.0) and on_policy["clip_fraction"] == 0.0
    assert sampled_logprobs(_call([20, 21], stale[:1])) is None  # not one per token: on-policy instead
    with pytest.raises(ValueError, match="token ids"):
        updater.step([(_call([]), 1.0)])
