"""Prompt log-probs (teacher forcing) through the generation engine: the numbers of a plain forward
pass, in a batch with other requests, on an adapter, and only the tail with ``prompt_logprobs_last_n``
(whose start then comes from the prefix store)."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers", reason="the engine needs the local extra (transformers, peft)")
pytest.importorskip("peft", reason="LoRA checkpoints need peft")

from tiny_lm import make_model, one_step_lora  # noqa: E402

from resonance_os.llm.sampling_params import SamplingParams
from resonance_os.rl.errors import ConfigError

PROMPTS = [
    "the cat sat on the mat",
    "a dog ran",
    "one two three four five six seven eight nine zero one two",
]


def plain_forward(model, prompt: list[int]) -> list[float]:
    """log p(prompt[i] | prompt[:i]) for i >= 1 from one forward pass over the prompt."""
    ids = torch.tensor([prompt])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, :-1].float()
    return logits.log_softmax(-1).gather(-1, ids[0, 1:, None]).squeeze(-1).tolist()


def assert_scores(got: list[float | None], expected: list[float], unscored: int) -> None:
    assert len(got) == len(expected) + 1
    assert got[:unscored] == [None] * unscored
    torch.testing.assert_close(
        torch.tensor(got[unscored:]), torch.tensor(expected[unscored - 1 :]), atol=1e-4, rtol=1e-4
    )


def test_prompt_logprobs_equal_a_plain_forward_pass_in_a_mixed_batch(tokenizer, engine):
    reference = make_model(len(tokenizer), context=128)
    prompts = [engine.encode(p) for p in PROMPTS]
    scoring = SamplingParams(max_tokens=1, prompt_logprobs=True)
    sampling = SamplingParams(max_tokens=6, temperature=1.0, seed=1, ignore_eos=True)
    handles = [engine.submit(p, scoring if i != 1 else sampling) for i, p in enumerate(prompts)]
    handles.append(engine.submit(prompts[1], SamplingParams(max_tokens=5, n=3, seed=2, prompt_logprobs=True)))
    results = [h.result(timeout=60) for h in handles]
    assert results[1].prompt_logprobs is None  # not asked: nothing computed
    for prompt, result in zip([prompts[0], prompts[2], prompts[1]], [results[0], results[2], results[3]]):
        assert_scores(result.prompt_logprobs, plain_forward(reference, prompt), unscored=1)
    assert [len(c.token_ids) for c in results[3].choices] == [5, 5, 5]  # sampling still runs


def test_prompt_logprobs_on_an_adapter(tmp_path, tokenizer, engine):
    policy = one_step_lora(tokenizer, tmp_path / "run" / "policy")
    engine.load_adapter("tuned", tmp_path / "run")
    prompt = engine.encode(PROMPTS[0])
    params = SamplingParams(max_tokens=1, prompt_logprobs=True)
    base, tuned = engine.submit(prompt, params), engine.submit(prompt, params, adapter="tuned")
    base, tuned = base.result(timeout=60), tuned.result(timeout=60)
    with torch.no_grad(), policy.fast_forward():
        expected = plain_forward(policy.base_model, prompt)
    assert_scores(tuned.prompt_logprobs, expected, unscored=1)
    assert max(abs(a - b) for a, b in zip(base.prompt_logprobs[1:], tuned.prompt_logprobs[1:])) > 1e-3


def test_last_n_scores_the_tail_and_reuses_the_stored_start(tokenizer, engine):
    reference = make_model(len(tokenizer), context=128)
    context = engine.encode(PROMPTS[2])
    engine.submit(context, SamplingParams(max_tokens=1)).result(timeout=60)  # stores the context
    completion = engine.encode("the cat sat")
    prompt = context + completion
    params = SamplingParams(max_tokens=1, prompt_logprobs=True, prompt_logprobs_last_n=len(completion))
    done = engine.submit(prompt, params).result(timeout=60)
    assert_scores(done.prompt_logprobs, plain_forward(reference, prompt), unscored=len(context))
    # the context came from the prefix store but for the token whose logits score the first completion token
    assert done.prefill_tokens == len(completion) + 1
    whole = engine.submit(prompt, SamplingParams(max_tokens=1, prompt_logprobs=True)).result(timeout=60)
    assert whole.prefill_tokens == len(prompt)  # scoring everything computes everything
    assert_scores(whole.prompt_logprobs, plain_forward(reference, prompt), unscored=1)


def test_a_one_token_prompt_has_no_scores(engine):
    done = engine.submit([5], SamplingParams(max_tokens=1, prompt_logprobs=True)).result(timeout=60)
    assert done.prompt_logprobs == [None]


def test_bad_last_n_is_a_clear_error(engine):
    prompt = engine.encode(PROMPTS[1])
    with pytest.raises(ConfigError, match="prompt_logprobs_last_n=.*at most"):
        engine.submit(prompt, SamplingParams(prompt_logprobs=True, prompt_logprobs_last_n=len(prompt)))
    with pytest.raises(ConfigError, match="prompt_logprobs_last_n=.*prompt_logprobs=True"):
        SamplingParams(prompt_logprobs_last_n=2)
