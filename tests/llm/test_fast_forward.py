"""The fast paths of LMPolicy (lean LoRA layers, LoRA merged while sampling, skipped mode switches)
give the numbers of peft's own forward: same tokens, same log-probs, same gradients."""

from __future__ import annotations

import copy

import pytest
import torch

pytest.importorskip("transformers", reason="the LM policy needs the local extra (transformers, peft)")
pytest.importorskip("peft", reason="the LM policy needs the local extra (transformers, peft)")

from tiny_lm import make_model, make_tokenizer  # noqa: E402

from resonance_os.llm.grpo import GRPO, GRPOConfig
from resonance_os.llm.policy import LMPolicy, PolicyConfig
from resonance_os.llm.sampling import sample
from resonance_os.rl.errors import ConfigError

PROMPTS = ["the cat sat on the mat", "a dog ran", "one two three four five six seven eight nine"]


def trained_policy(config: PolicyConfig | None = None, seed: int = 1) -> LMPolicy:
    """A LoRA policy whose B matrices are non-zero (a fresh adapter is the identity and hides bugs);
    A keeps peft's initialisation, B gets entries of the size a few hundred updates leave."""
    tok = make_tokenizer()
    policy = LMPolicy(tok, make_model(len(tok)), config or PolicyConfig(lora_rank=4, lora_alpha=8))
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in policy.model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
    return policy


@pytest.fixture
def no_fast_path(monkeypatch):
    """Within the test's second half: peft's own forward everywhere (the fast paths decline)."""

    def disable() -> None:
        monkeypatch.setattr(LMPolicy, "_lean_layers", lambda self, merged: None)

    return disable


def test_merged_sampling_equals_peft_sampling(no_fast_path):
    policy = trained_policy()
    params = {k: v.clone() for k, v in policy.model.state_dict().items()}
    modules = [type(m) for m in policy.model.modules()]
    fast = sample(policy, PROMPTS, n=4, max_new_tokens=12, seed=7, temperature=0.9)
    # The module tree and every weight are exactly as before.
    assert [type(m) for m in policy.model.modules()] == modules
    after = policy.model.state_dict()
    assert after.keys() == params.keys() and all(torch.equal(after[k], params[k]) for k in params)
    no_fast_path()
    slow = sample(policy, PROMPTS, n=4, max_new_tokens=12, seed=7, temperature=0.9)
    assert torch.equal(fast.completion_ids, slow.completion_ids)
    assert torch.equal(fast.completion_mask, slow.completion_mask)
    assert fast.texts == slow.texts
    torch.testing.assert_close(fast.logprobs, slow.logprobs, atol=1e-5, rtol=0)
    with torch.no_grad():
        forced = policy.token_logprobs(
            fast.input_ids, fast.attention_mask, fast.completion_mask, temperature=0.9
        )
    torch.testing.assert_close(forced, fast.logprobs, atol=1e-5, rtol=0)


def test_lean_lora_forward_and_gradients_are_bitwise_peft(no_fast_path):
    policy = trained_policy()
    s = sample(policy, PROMPTS, n=2, max_new_tokens=10, seed=0)

    def logp_and_grads():
        policy.model.zero_grad(set_to_none=True)
        logp = policy.token_logprobs(s.input_ids, s.attention_mask, s.completion_mask)
        (logp * torch.linspace(-1, 1, logp.shape[1])).sum().backward()
        return logp.detach(), [p.grad.clone() for p in policy.trainable_parameters()]

    fast_logp, fast_grads = logp_and_grads()
    no_fast_path()
    slow_logp, slow_grads = logp_and_grads()
    assert torch.equal(fast_logp, slow_logp)
    assert len(fast_grads) == len(slow_grads) > 0
    assert all(torch.equal(a, b) for a, b in zip(fast_grads, slow_grads))


def test_reference_is_the_base_model_on_the_fast_path():
    policy = trained_policy()
    base = LMPolicy(
        make_tokenizer(),
        make_model(len(policy.tokenizer)),
        PolicyConfig(finetune="full", reference_copy=False),
    )
    s = sample(policy, PROMPTS, n=2, max_new_tokens=8, seed=0)
    with torch.no_grad(), policy.reference():
        ref = policy.token_logprobs(s.input_ids, s.attention_mask, s.completion_mask)
    with torch.no_grad():
        want = base.token_logprobs(s.input_ids, s.attention_mask, s.completion_mask)
        own = policy.token_logprobs(s.input_ids, s.attention_mask, s.completion_mask)
    torch.testing.assert_close(ref, want, atol=1e-6, rtol=0)
    assert (own - ref).abs().max() > 1e-3  # the adapter is on outside reference()
    with policy.reference():
        r = sample(policy, PROMPTS, n=2, max_new_tokens=8, seed=0)
    torch.testing.assert_close(
        r.logprobs, sample(base, PROMPTS, n=2, max_new_tokens=8, seed=0).logprobs, atol=1e-5, rtol=0
    )


def test_a_changed_adapter_is_picked_up_by_the_next_merge():
    policy = trained_policy()
    first = sample(policy, PROMPTS, n=2, max_new_tokens=8, seed=0)
    with torch.no_grad():
        for name, p in policy.model.named_parameters():
            if "lora_B" in name:
                p.mul_(-1.0)
    second = sample(policy, PROMPTS, n=2, max_new_tokens=8, seed=0)
    with torch.no_grad():
        forced = policy.token_logprobs(second.input_ids, second.attention_mask, second.completion_mask)
    torch.testing.assert_close(forced, second.logprobs, atol=1e-5, rtol=0)
    assert not torch.allclose(first.logprobs, second.logprobs)


def test_mode_switches_only_when_dropout_can_matter():
    plain = trained_policy()
    assert plain.set_mode(True) is False and plain.model.training is False  # no dropout: skipped
    dropped = trained_policy(PolicyConfig(lora_rank=4, lora_alpha=8, lora_dropout=0.5))
    assert dropped.set_mode(True) is False and dropped.model.training is True
    s = sample(dropped, PROMPTS, n=2, max_new_tokens=8, seed=0)  # sampled in eval mode ...
    assert dropped.model.training is True  # ... and the caller's mode restored
    dropped.eval()
    with torch.no_grad():
        forced = dropped.token_logprobs(s.input_ids, s.attention_mask, s.completion_mask)
    torch.testing.assert_close(forced, s.logprobs, atol=1e-5, rtol=0)


def test_grpo_with_lora_dropout_trains_in_train_mode_and_matches_peft(no_fast_path):
    def run():
        policy = trained_policy(PolicyConfig(lora_rank=4, lora_alpha=8, lora_dropout=0.2))
        cfg = GRPOConfig(group_size=4, prompts_per_step=2, max_new_tokens=8, learning_rate=1e-3, seed=3)
        trainer = GRPO(policy, lambda p, c: [float(len(x)) for x in c], PROMPTS, cfg)
        trainer.learn(2, progress_bar=False)
        assert policy.model.training is False
        return trainer.history, copy.deepcopy(policy.model.state_dict())

    fast_hist, fast_state = run()
    no_fast_path()
    slow_hist, slow_state = run()
    for a, b in zip(fast_hist, slow_hist):
        assert a["episode_reward_mean"] == b["episode_reward_mean"]
        assert a["loss"] == pytest.approx(b["loss"], abs=1e-6)
    for key in fast_state:
        torch.testing.assert_close(
            fast_state[key], slow_state[key], atol=1e-5, rtol=0
        )  # Adam: ~lr on near-zero grads


def _teacher_forced(policy: LMPolicy, samples) -> torch.Tensor:
    return policy.token_logprobs(samples.input_ids, samples.attention_mask, samples.completion_mask).detach()


@pytest.mark.parametrize("finetune", ["lora", "full"])
def test_bf16_rollouts_sample_from_a_copy_that_follows_the_trained_weights(finetune):
    """``dtype=torch.bfloat16`` samples from a bf16 copy of the policy: its log-probs are the policy's
    up to bf16 rounding, the policy's own weights stay float32 and untouched, and a weight the
    optimiser changes reaches the copy at the next call."""
    config = PolicyConfig(lora_rank=4, lora_alpha=8) if finetune == "lora" else PolicyConfig(finetune="full")
    policy = trained_policy(config)
    before = {k: v.clone() for k, v in policy.model.state_dict().items()}
    modules = [type(m) for m in policy.model.modules()]
    drawn = sample(policy, PROMPTS, n=3, max_new_tokens=8, seed=4, dtype=torch.bfloat16)
    exact = _teacher_forced(policy, drawn)
    diff = (exact - drawn.logprobs)[drawn.completion_mask.bool()]
    assert 0 < diff.abs().mean() < 0.05 and diff.abs().max() < 0.5  # bf16 rounding, not another model
    assert all(
        torch.equal(v, before[k]) and v.dtype == torch.float32 for k, v in policy.model.state_dict().items()
    )
    assert [type(m) for m in policy.model.modules()] == modules  # the module tree is restored
    assert torch.equal(drawn.completion_ids, sample(policy, PROMPTS, n=3, max_new_tokens=8, seed=4,
                                                     dtype=torch.bfloat16).completion_ids)  # fmt: skip

    with torch.no_grad():  # an optimiser step on what this policy trains
        for name, p in policy.model.named_parameters():
            if p.requires_grad and ("lora_B" in name or finetune == "full"):
                p.add_(torch.randn_like(p) * 0.3)
    again = sample(policy, PROMPTS, n=3, max_new_tokens=8, seed=4, dtype=torch.bfloat16)
    moved = _teacher_forced(policy, again)
    tokens = again.completion_mask.bool()
    change = (_teacher_forced(policy, drawn) - exact)[drawn.completion_mask.bool()].abs().mean()
    assert (moved - again.logprobs)[tokens].abs().mean() < min(0.1, change / 3), change  # followed the change


def test_rollouts_in_the_policys_own_dtype_are_the_policy():
    policy = trained_policy()
    own = sample(policy, PROMPTS, n=2, max_new_tokens=6, seed=2, dtype=torch.float32)
    plain = sample(policy, PROMPTS, n=2, max_new_tokens=6, seed=2)
    assert torch.equal(own.completion_ids, plain.completion_ids) and torch.equal(own.logprobs, plain.logprobs)
    assert not policy._rollout_copies  # no copy was made
    for bad in ("bfloat16", torch.int8):
        with pytest.raises(ConfigError, match="not a floating-point torch dtype; use torch.bfloat16"):
            sample(policy, PROMPTS, n=1, max_new_tokens=2, dtype=bad)


def test_mixed_precision_forward_keeps_float32_weights_grads_and_head():
    """``policy.autocast(torch.bfloat16)``: the products run in bf16 (log-probs within bf16 rounding of
    float32), the gradients reach the float32 adapters, and the head's logits are float32 with
    ``fp32_head`` (bf16 without it)."""
    policy = trained_policy()
    drawn = sample(policy, PROMPTS, n=2, max_new_tokens=6, seed=3)
    args = (drawn.input_ids, drawn.attention_mask, drawn.completion_mask)
    exact = policy.token_logprobs(*args)
    with policy.autocast(torch.bfloat16):
        mixed = policy.token_logprobs(*args)
        logits = policy.forward_logits(drawn.input_ids, drawn.attention_mask).logits
        plain_head = policy.forward_logits(drawn.input_ids, drawn.attention_mask, fp32_head=False).logits
    assert logits.dtype == torch.float32 and plain_head.dtype == torch.bfloat16
    tokens = drawn.completion_mask.bool()
    gap = (mixed - exact)[tokens].abs()
    assert 0 < gap.mean() < 0.05
    mixed.sum().backward()
    grads = [p.grad for p in policy.trainable_parameters()]
    assert all(g is not None and g.dtype == torch.float32 for g in grads) and any(
        g.abs().sum() > 0 for g in grads
    )
    assert all(p.dtype == torch.float32 for p in policy.model.parameters())
    assert (
        policy.forward_logits(drawn.input_ids, drawn.attention_mask).logits.dtype == torch.float32
    )  # block left
