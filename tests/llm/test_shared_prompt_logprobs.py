"""``token_logprobs(..., group_size=G)``: an RL group's prompt computed once for its G completions gives
the log-probs and gradients of computing it for every row, and GRPO's update uses it."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers", reason="the LM policy needs the local extra (transformers, peft)")
pytest.importorskip("peft", reason="the LM policy needs the local extra (transformers, peft)")

from tiny_lm import make_model, make_tokenizer  # noqa: E402

from resonance_os.llm.errors import LLMError
from resonance_os.llm.grpo import GRPO, GRPOConfig
from resonance_os.llm.policy import LMPolicy, PolicyConfig
from resonance_os.llm.sampling import sample

PROMPTS = ["the cat sat on the mat", "a dog ran", "one two three four five six seven eight nine"]
G = 3


def lora_policy(config: PolicyConfig | None = None) -> LMPolicy:
    """A LoRA policy with non-zero B (a fresh adapter is the identity and would hide a wrong path)."""
    tok = make_tokenizer()
    policy = LMPolicy(tok, make_model(len(tok)), config or PolicyConfig(lora_rank=4, lora_alpha=8))
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for name, p in policy.model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
    return policy


def grouped_batch(policy: LMPolicy, max_new_tokens: int = 10):
    """G sampled completions for each prompt (prompts of different lengths, so the prompt columns are
    left-padded; completions of different lengths, so the completion mask has padding)."""
    batch = sample(policy, PROMPTS, n=G, max_new_tokens=max_new_tokens, seed=5, temperature=1.0)
    c = batch.completion_mask.shape[1]
    if c > 2:  # the tiny model never ends a reply: end every other row early, as an end token would
        ended = torch.arange(len(batch.input_ids)) % 2 == 1
        batch.completion_mask[ended, c // 2 :] = 0
        batch.completion_ids[ended, c // 2 :] = policy.tokenizer.pad_token_id
    return batch


def logprobs_and_grads(policy: LMPolicy, batch, group_size: int, temperature: float):
    policy.model.zero_grad()
    policy.train()
    logp = policy.token_logprobs(
        batch.input_ids,
        batch.attention_mask,
        batch.completion_mask,
        temperature=temperature,
        group_size=group_size,
    )
    (logp.sum() / batch.completion_mask.sum()).backward()
    grads = {n: p.grad.clone() for n, p in policy.model.named_parameters() if p.grad is not None}
    return logp.detach(), grads


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_a_groups_prompt_computed_once_gives_the_same_logprobs_and_gradients(temperature):
    policy = lora_policy()
    batch = grouped_batch(policy)
    every_row, grads_every = logprobs_and_grads(policy, batch, 1, temperature)
    shared, grads_shared = logprobs_and_grads(policy, batch, G, temperature)
    assert torch.allclose(shared, every_row, atol=1e-5)
    assert torch.all(shared[batch.completion_mask == 0] == 0)
    assert grads_shared.keys() == grads_every.keys() and any("lora_A" in n for n in grads_shared)
    for name, grad in grads_every.items():
        assert torch.allclose(grads_shared[name], grad, atol=1e-6, rtol=1e-4), name


def test_a_one_token_completion_is_predicted_by_the_prompt_pass_alone():
    policy = lora_policy()
    batch = grouped_batch(policy, max_new_tokens=1)
    every_row, _ = logprobs_and_grads(policy, batch, 1, 1.0)
    shared, _ = logprobs_and_grads(policy, batch, G, 1.0)
    assert shared.shape == (len(PROMPTS) * G, 1)
    assert torch.allclose(shared, every_row, atol=1e-5)


def test_rows_that_do_not_share_their_prompt_are_refused():
    policy = lora_policy()
    batch = grouped_batch(policy)
    shuffled = torch.tensor([0, 3, 6, 1, 4, 7, 2, 5, 8])  # each "group" now mixes three prompts
    with pytest.raises(LLMError, match="share their prompt.*group_size=1"):
        policy.token_logprobs(
            batch.input_ids[shuffled],
            batch.attention_mask[shuffled],
            batch.completion_mask[shuffled],
            group_size=G,
        )
    with pytest.raises(LLMError, match="group_size=4 must be a positive integer dividing the 9 rows"):
        policy.token_logprobs(batch.input_ids, batch.attention_mask, batch.completion_mask, group_size=4)


def test_grpo_updates_with_each_prompt_computed_once_per_group(monkeypatch):
    """GRPO's update passes its group size, and the step trains as before (loss finite, weights move)."""
    policy = lora_policy()
    seen: list[int] = []
    token_logprobs = LMPolicy.token_logprobs

    def recording(self, *args, **kwargs):
        seen.append(kwargs.get("group_size", 1))
        return token_logprobs(self, *args, **kwargs)

    monkeypatch.setattr(LMPolicy, "token_logprobs", recording)
    cfg = GRPOConfig(
        group_size=G, prompts_per_step=2, max_new_tokens=8, chat_template=False, learning_rate=1e-2
    )
    trainer = GRPO(
        policy, lambda prompts, completions, **kw: [len(c) / 10 for c in completions], PROMPTS, cfg
    )
    before = {n: p.detach().clone() for n, p in policy.model.named_parameters() if p.requires_grad}
    trainer.learn(1, progress_bar=False)
    assert seen and set(seen) == {G}
    assert torch.isfinite(torch.tensor(trainer.history[0]["loss"]))
    assert any(not torch.equal(p, before[n]) for n, p in policy.model.named_parameters() if p.requires_grad)
