"""The trainers' sampler (``llm.sampling.sample_ids``) runs on the generation engine: greedy equals
transformers' ``generate``, samples follow the policy's distribution, a group's prompt is computed once."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers", reason="the LM policy needs the local extra (transformers, peft)")
pytest.importorskip("peft", reason="the LM policy needs the local extra (transformers, peft)")

from tiny_lm import make_model, make_tokenizer  # noqa: E402

from resonance_os.llm.policy import LMPolicy, PolicyConfig
from resonance_os.llm.sampling import sample_ids

PROMPTS = ["the cat sat on the mat", "a dog ran", "one two three four five six seven eight nine"]


@pytest.fixture
def policy():
    """A LoRA policy one step away from its base model (so the merged adapters matter)."""
    tokenizer = make_tokenizer()
    policy = LMPolicy(tokenizer, make_model(len(tokenizer)), PolicyConfig(lora_rank=4, lora_alpha=8))
    ids = policy.encode_prompts(PROMPTS, chat_template=False)
    s = sample_ids(policy, ids, n=2, max_new_tokens=6, seed=0)
    opt = torch.optim.Adam(policy.trainable_parameters(), lr=5e-2)
    (-policy.token_logprobs(s.input_ids, s.attention_mask, s.completion_mask).sum()).backward()
    opt.step()
    return policy


def test_greedy_equals_transformers_generate_on_the_trained_adapter(policy):
    ids = policy.encode_prompts(PROMPTS, chat_template=False)
    s = sample_ids(policy, ids, n=2, max_new_tokens=10, temperature=0.0)
    for k, prompt in enumerate(ids):
        with torch.no_grad():
            out = policy.model.generate(
                torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                max_new_tokens=10, do_sample=False, pad_token_id=policy.tokenizer.pad_token_id,
            )  # fmt: skip
        expected = out[0, len(prompt) :].tolist()
        for row in (2 * k, 2 * k + 1):
            length = int(s.completion_mask[row].sum())
            assert s.completion_ids[row, :length].tolist() == expected[:length]
            assert s.prompt_ids[row][s.prompt_mask[row].bool()].tolist() == prompt


def test_a_group_computes_its_prompt_once(policy):
    ids = policy.encode_prompts(PROMPTS, chat_template=False)
    s = sample_ids(policy, ids, n=8, max_new_tokens=4, seed=1)
    assert len(s.texts) == 24
    assert s.prefill_tokens == sum(len(p) for p in ids)  # not 8 times that
    shared = [list(range(3, 23)) + [30 + i] for i in range(3)]  # 20 tokens in common
    s = sample_ids(policy, shared, n=4, max_new_tokens=4, seed=1)
    assert s.prefill_tokens == 21 + 2 * 1  # the common start computed once, then one token each


def test_first_tokens_follow_the_policy_distribution(policy):
    ids = policy.encode_prompts(["a dog ran"], chat_template=False)
    s = sample_ids(policy, ids, n=4000, max_new_tokens=1, temperature=0.8, seed=3)
    with torch.no_grad():
        logits = policy.forward_logits(torch.tensor(ids), torch.ones(1, len(ids[0]), dtype=torch.long)).logits
    expected = (logits[0, -1].float() / 0.8).softmax(-1)
    counts = torch.bincount(s.completion_ids[:, 0], minlength=expected.numel()).float()
    assert 0.5 * (counts / counts.sum() - expected).abs().sum() < 0.05  # total variation distance
    recomputed = (logits[0, -1].float() / 0.8).log_softmax(-1)[s.completion_ids[:, 0]]
    torch.testing.assert_close(s.logprobs[:, 0], recomputed, atol=1e-5, rtol=0)


def test_seeded_and_independent_across_prompts(policy):
    ids = policy.encode_prompts(["a dog ran", "a dog ran"], chat_template=False)
    a = sample_ids(policy, ids, n=4, max_new_tokens=8, seed=5)
    b = sample_ids(policy, ids, n=4, max_new_tokens=8, seed=5)
    assert torch.equal(a.completion_ids, b.completion_ids) and a.texts == b.texts
    assert not torch.equal(a.completion_ids[:4], a.completion_ids[4:])  # same prompt, its own draws
    assert a.prompt_index == [0] * 4 + [1] * 4


def test_training_mode_and_weights_are_left_as_they_were(policy):
    policy.train()
    before = [p.detach().clone() for p in policy.model.parameters()]
    sample_ids(policy, policy.encode_prompts(PROMPTS, chat_template=False), n=2, max_new_tokens=4, seed=0)
    assert policy.model.training
    assert all(p.requires_grad for p in policy.trainable_parameters())
    assert all(torch.equal(a, b) for a, b in zip(before, policy.model.parameters()))


def test_repetition_penalty_and_ngram_ban_equal_transformers_generate():
    """The local writer backend's decoding settings: greedy under both equals ``generate``'s."""
    from resonance_os.llm.engine import GenerationEngine
    from resonance_os.llm.sampling_params import SamplingParams

    tokenizer = make_tokenizer()
    model = make_model(len(tokenizer)).eval()
    prompt = tokenizer("the cat sat on the mat the cat")["input_ids"]
    engine = GenerationEngine(model, tokenizer, borrowed=True)

    def greedy(**settings):
        handle = engine.submit(prompt, SamplingParams(max_tokens=16, temperature=0.0, **settings))
        engine.run_pending()
        return handle.result().choices[0].token_ids

    penalised = greedy(repetition_penalty=1.3, no_repeat_ngram_size=3)
    with torch.no_grad():
        out = model.generate(
            torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long), max_new_tokens=16,
            do_sample=False, repetition_penalty=1.3, no_repeat_ngram_size=3, pad_token_id=tokenizer.pad_token_id,
        )  # fmt: skip
    assert penalised == out[0, len(prompt) :].tolist()[: len(penalised)]
    assert len(penalised) == 16 or penalised[-1] == tokenizer.eos_token_id
    assert penalised != greedy()  # the settings act


def test_the_nucleus_found_in_the_head_is_the_nucleus_of_a_full_sort():
    from resonance_os.llm.engine import nucleus

    gen = torch.Generator().manual_seed(0)
    sharpness = torch.tensor([0.5, 2.0, 5.0, 10.0, 20.0, 40.0])[:, None]
    probs = (sharpness * torch.randn(6, 3000, generator=gen)).softmax(-1)
    top_p = torch.tensor([0.9, 0.95, 0.5, 0.99, 0.3, 0.9])
    ordered, order = probs.sort(dim=-1, descending=True)
    reference = torch.zeros_like(probs, dtype=torch.bool).scatter(
        -1, order, ordered.cumsum(-1) - ordered < top_p[:, None]
    )
    sizes = reference.sum(-1)
    assert sizes.min() < 32 < sizes.max()  # rows that end in a 32-token head and rows that go past it
    for head in (1, 32, 3000):
        assert torch.equal(nucleus(probs, top_p, head), reference)
