"""The generation engine on the tiny model: its numbers are the model's, batching never changes a
request's tokens, prompts are computed once, short requests overtake long ones, adapters by name."""

from __future__ import annotations

import asyncio

import pytest
import torch

pytest.importorskip("transformers", reason="the engine needs the local extra (transformers, peft)")
pytest.importorskip("peft", reason="LoRA checkpoints need peft")

from tiny_lm import make_model, one_step_lora  # noqa: E402

from resonance_os.llm.adapters import AdapterError
from resonance_os.llm.engine import EngineConfig, GenerationEngine
from resonance_os.llm.errors import PromptTooLongError
from resonance_os.llm.policy import LMPolicy, PolicyConfig
from resonance_os.llm.sampling_params import SamplingParams
from resonance_os.rl.errors import ConfigError

PROMPTS = ["the cat sat on the mat", "a dog ran", "one two three four five six seven eight nine zero one two"]


def teacher_forced(model, prompt: list[int], completion: list[int]) -> torch.Tensor:
    """log softmax of each completion token under one plain forward pass over prompt + completion."""
    ids = torch.tensor([prompt + completion])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, len(prompt) - 1 : -1].float()
    return logits.log_softmax(-1).gather(-1, torch.tensor(completion)[:, None]).squeeze(-1)


def test_tokens_and_logprobs_are_the_models_in_a_mixed_batch(tokenizer, engine):
    reference = make_model(len(tokenizer), context=128)
    prompts = [engine.encode_chat([{"role": "user", "content": p}]) for p in PROMPTS]
    params = SamplingParams(max_tokens=12, temperature=1.0, seed=3, logprobs=True, ignore_eos=True)
    handles = [engine.submit(p, params) for p in prompts]  # different lengths, one batch
    for prompt, handle in zip(prompts, handles):
        choice = handle.result(timeout=60).choices[0]
        assert len(choice.token_ids) == 12 and choice.finish_reason == "length"
        expected = teacher_forced(reference, prompt, choice.token_ids)
        got = torch.tensor([lp.logprob for lp in choice.logprobs])
        torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)


def test_greedy_equals_transformers_generate(tokenizer, engine):
    reference = make_model(len(tokenizer), context=128)
    prompt = engine.encode_chat([{"role": "user", "content": PROMPTS[0]}])
    out = reference.generate(
        torch.tensor([prompt]), max_new_tokens=10, do_sample=False, pad_token_id=0, eos_token_id=None
    )
    ours = engine.submit(prompt, SamplingParams(max_tokens=10, temperature=0, ignore_eos=True)).result(
        timeout=60
    )
    assert ours.choices[0].token_ids == out[0, len(prompt) :].tolist()
    assert ours.prompt_token_ids == prompt


def test_same_seed_same_tokens_whatever_the_batch(engine):
    prompt = engine.encode_chat([{"role": "user", "content": PROMPTS[1]}])
    params = SamplingParams(max_tokens=16, seed=42, n=2, ignore_eos=True)
    alone = engine.submit(prompt, params).result(timeout=60)
    crowd = [
        engine.submit(engine.encode(p), SamplingParams(max_tokens=20, seed=i)) for i, p in enumerate(PROMPTS)
    ]
    again = engine.submit(prompt, params)
    for h in crowd:
        h.result(timeout=60)
    again = again.result(timeout=60)
    assert [c.token_ids for c in again.choices] == [c.token_ids for c in alone.choices]
    assert alone.choices[0].token_ids != alone.choices[1].token_ids  # choices draw differently
    other = engine.submit(prompt, SamplingParams(max_tokens=16, seed=43, ignore_eos=True)).result(timeout=60)
    assert other.choices[0].token_ids != alone.choices[0].token_ids


def test_a_prompt_is_computed_once_for_its_n_samples_and_reused_by_later_requests(engine):
    system = {"role": "system", "content": "one two three four five six seven eight nine zero"}
    prompt = engine.encode_chat([system, {"role": "user", "content": "the cat sat"}])
    before = engine.stats()
    engine.submit(prompt, SamplingParams(max_tokens=4, n=8, seed=1)).result(timeout=60)
    after = engine.stats()
    assert after.prefill_tokens - before.prefill_tokens == len(prompt)  # not 8 x
    assert after.prefix_hit_tokens - before.prefix_hit_tokens == 7 * len(prompt)
    follow = engine.encode_chat([system, {"role": "user", "content": "a dog ran under the tree"}])
    done = engine.submit(follow, SamplingParams(max_tokens=4)).result(timeout=60)
    shared = next(i for i, (a, b) in enumerate(zip(prompt, follow)) if a != b)
    assert done.prefill_tokens == len(follow) - shared  # the system prompt came from the prefix store


def test_concurrent_requests_with_one_prefix_share_it(engine):
    system = {"role": "system", "content": "one two three four five six seven eight nine zero"}
    prompts = [
        engine.encode_chat([system, {"role": "user", "content": q}]) for q in ("the cat", "a dog", "red bird")
    ]
    handles = [engine.submit(p, SamplingParams(max_tokens=3)) for p in prompts]
    computed = [h.result(timeout=60).prefill_tokens for h in handles]
    assert computed[0] == len(prompts[0])
    assert all(c < len(p) - 10 for c, p in zip(computed[1:], prompts[1:]))


def test_a_short_request_finishes_while_a_long_one_runs(engine):
    long = engine.submit(engine.encode(PROMPTS[2]), SamplingParams(max_tokens=100, ignore_eos=True, seed=0))
    for _ in long:  # the long request is decoding
        if len(long.choices[0].token_ids) >= 5:
            break
    short = engine.submit(engine.encode(PROMPTS[1]), SamplingParams(max_tokens=3, ignore_eos=True))
    assert len(short.result(timeout=60).choices[0].token_ids) == 3
    assert not long.done
    assert len(long.result(timeout=60).choices[0].token_ids) == 100


def test_streamed_deltas_add_up_to_the_result(engine):
    handle = engine.submit(engine.encode(PROMPTS[0]), SamplingParams(max_tokens=15, seed=5, n=2))

    async def collect():
        texts = ["", ""]
        async for deltas in handle.stream():
            for d in deltas:
                texts[d.index] += d.text
        return texts

    texts = asyncio.run(collect())
    assert texts == [c.text for c in handle.result().choices]


def test_stop_strings_and_stop_tokens(engine, tokenizer):
    prompt = engine.encode(PROMPTS[0])
    free = (
        engine.submit(prompt, SamplingParams(max_tokens=30, seed=2, ignore_eos=True))
        .result(timeout=60)
        .choices[0]
    )
    word = free.text.split()[3]
    stopped = engine.submit(
        prompt, SamplingParams(max_tokens=30, seed=2, ignore_eos=True, stop=[" " + word])
    ).result()
    choice = stopped.choices[0]
    assert choice.finish_reason == "stop" and choice.text == free.text[: free.text.find(" " + word)]
    token = free.token_ids[2]
    by_id = engine.submit(
        prompt, SamplingParams(max_tokens=30, seed=2, ignore_eos=True, stop_token_ids=[token])
    )
    assert by_id.result().choices[0].token_ids == free.token_ids[:3]


def test_adapters_by_name_in_one_batch(tmp_path, tokenizer, engine):
    policy = one_step_lora(tokenizer, tmp_path / "run" / "policy")
    engine.load_adapter("tuned", tmp_path / "run")  # a run folder with policy/ inside
    assert engine.adapters() == ["tuned"]
    prompt = engine.encode(PROMPTS[0])
    params = SamplingParams(max_tokens=10, temperature=0, ignore_eos=True, logprobs=True)
    base, tuned = engine.submit(prompt, params), engine.submit(prompt, params, adapter="tuned")
    base, tuned = base.result(timeout=60).choices[0], tuned.result(timeout=60).choices[0]
    assert base.token_ids != tuned.token_ids
    with torch.no_grad(), policy.fast_forward():
        expected = teacher_forced(policy.base_model, prompt, tuned.token_ids)
    torch.testing.assert_close(
        torch.tensor([lp.logprob for lp in tuned.logprobs]), expected, atol=1e-4, rtol=1e-4
    )
    engine.unload_adapter("tuned")
    assert engine.adapters() == []
    with pytest.raises(AdapterError, match="no adapter named 'tuned'"):
        engine.submit(prompt, params, adapter="tuned")


def test_peft_folders_load_and_foreign_adapters_are_refused(tmp_path, tokenizer, engine):
    policy = one_step_lora(tokenizer, tmp_path / "ckpt")
    policy.model.save_pretrained(tmp_path / "peft")
    engine.load_adapter("peft", tmp_path / "peft")
    prompt = engine.encode(PROMPTS[1])
    params = SamplingParams(max_tokens=8, temperature=0, ignore_eos=True)
    engine.load_adapter("ckpt", tmp_path / "ckpt")
    a = engine.submit(prompt, params, adapter="peft").result(timeout=60).choices[0].token_ids
    b = engine.submit(prompt, params, adapter="ckpt").result(timeout=60).choices[0].token_ids
    assert a == b
    from transformers import LlamaConfig, LlamaForCausalLM

    other = LlamaForCausalLM(LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2))  # fmt: skip
    wrong = LMPolicy(tokenizer, other, PolicyConfig(lora_rank=4))
    wrong.save(tmp_path / "wrong")
    with pytest.raises(AdapterError, match="does not fit the served model"):
        engine.load_adapter("wrong", tmp_path / "wrong")
    with pytest.raises(AdapterError, match="no LoRA adapter"):
        engine.load_adapter("empty", tmp_path)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"temperature": 3.0}, "temperature"),
        ({"top_p": 0.0}, "top_p"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"n": 0}, "n="),
        ({"top_logprobs": 21}, "top_logprobs"),
        ({"stop": [""]}, "stop"),
        ({"seed": 1.5}, "seed"),
        ({"frequency_penalty": 9}, "frequency_penalty"),
    ],
)
def test_bad_sampling_values_are_clear_errors(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        SamplingParams(**kwargs)


def test_bad_requests_are_refused_before_they_queue(engine):
    with pytest.raises(PromptTooLongError, match="context of 128"):
        engine.submit(list(range(5, 25)) * 6, SamplingParams(max_tokens=20))
    with pytest.raises(ConfigError, match="n=64"):
        engine.submit([5, 6], SamplingParams(n=64))
    with pytest.raises(ConfigError, match="token ids"):
        engine.submit([5, 10_000], SamplingParams())
    with pytest.raises(AdapterError, match="no adapter named 'x'"):
        engine.submit([5, 6], SamplingParams(), adapter="x")


def test_penalties_and_top_k(engine):
    prompt = engine.encode(PROMPTS[0])
    top1 = engine.submit(prompt, SamplingParams(max_tokens=8, top_k=1, seed=9, ignore_eos=True)).result(
        timeout=60
    )
    greedy = engine.submit(prompt, SamplingParams(max_tokens=8, temperature=0, ignore_eos=True)).result(
        timeout=60
    )
    assert top1.choices[0].token_ids == greedy.choices[0].token_ids
    looping = engine.submit(prompt, SamplingParams(max_tokens=12, temperature=0, ignore_eos=True)).result()
    params = SamplingParams(max_tokens=12, temperature=0, ignore_eos=True, presence_penalty=2.0)
    penalised = engine.submit(prompt, params).result(timeout=60).choices[0].token_ids
    assert len(set(penalised)) > len(set(looping.choices[0].token_ids))  # greedy loops; the penalty breaks it


def test_a_cancelled_request_leaves_the_batch(engine):
    handle = engine.submit(engine.encode(PROMPTS[2]), SamplingParams(max_tokens=100, ignore_eos=True, n=2))
    next(iter(handle))  # it is running
    handle.cancel()
    with pytest.raises(Exception, match="cancelled"):
        handle.result(timeout=60)
    assert engine.stats().running == 0 and len(handle.choices[0].token_ids) < 100


def test_precision_is_detected_and_overridable(monkeypatch):
    from resonance_os.llm import precision

    monkeypatch.delenv(precision.DTYPE_ENV, raising=False)
    expected = torch.bfloat16 if "amx_bf16" in precision.cpu_flags() else torch.float32
    assert precision.fast_dtype("cpu") == expected
    monkeypatch.setenv(precision.DTYPE_ENV, "bfloat16")
    assert precision.fast_dtype("cpu") == torch.bfloat16
    monkeypatch.setenv(precision.DTYPE_ENV, "int8")
    with pytest.raises(ConfigError, match="int8"):
        precision.fast_dtype("cpu")


def test_prompts_sharing_a_prefix_start_in_the_same_step(tokenizer):
    engine = GenerationEngine(
        make_model(len(tokenizer), context=128), tokenizer, EngineConfig(min_prefix_tokens=4)
    )
    system = {"role": "system", "content": "one two three four five six seven eight nine zero"}
    prompts = [
        engine.encode_chat([system, {"role": "user", "content": q}]) for q in ("the cat", "a dog", "red bird")
    ]
    handles = [engine.submit(p, SamplingParams(max_tokens=4, ignore_eos=True)) for p in prompts]
    with engine:  # all three wait before the first step
        computed = [h.result(timeout=60).prefill_tokens for h in handles]
        assert engine.stats().decode_steps == 3  # admitted together, decoded in lockstep
    assert computed[0] == len(prompts[0]) and all(c < len(p) - 10 for c, p in zip(computed[1:], prompts[1:]))
