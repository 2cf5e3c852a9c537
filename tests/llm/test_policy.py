"""LMPolicy and sampling on a tiny seeded Llama-style model (about 80k parameters, built offline)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers", reason="the LM policy needs the local extra (transformers, peft)")
pytest.importorskip("peft", reason="the LM policy needs the local extra (transformers, peft)")

from tiny_lm import make_model, make_tokenizer  # noqa: E402

from resonance_os.llm.errors import LLMError, PromptTooLongError, ReferenceUnavailableError
from resonance_os.llm.policy import LMPolicy, PolicyConfig
from resonance_os.llm.sampling import sample, sample_ids
from resonance_os.rl.errors import CheckpointError, ConfigError

PROMPTS = ["the cat sat on the mat", "a dog ran", "one two three four five six seven eight nine"]
LORA = PolicyConfig(lora_rank=4, lora_alpha=8)


def recompute(policy, s, temperature=1.0):
    with torch.no_grad():
        return policy.token_logprobs(
            s.input_ids, s.attention_mask, s.completion_mask, temperature=temperature
        )


def train_step(policy, s, lr=1e-2):
    opt = torch.optim.Adam(policy.trainable_parameters(), lr=lr)
    loss = -(policy.token_logprobs(s.input_ids, s.attention_mask, s.completion_mask)).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()


@pytest.fixture
def tokenizer():
    return make_tokenizer()


@pytest.fixture
def model(tokenizer):
    return make_model(len(tokenizer))


@pytest.fixture
def policy(tokenizer, model):
    return LMPolicy(tokenizer, model, LORA)


def test_sampled_logprobs_equal_teacher_forced_at_temperature_one(policy):
    s = sample(policy, PROMPTS, n=3, max_new_tokens=12, seed=0)
    assert s.completion_ids.shape == s.logprobs.shape == s.completion_mask.shape
    assert s.completion_ids.shape[0] == len(PROMPTS) * 3 == len(s.texts)
    assert s.prompt_index == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert (s.prompt_mask[:, -1] == 1).all() and (s.prompt_mask[1, 0] == 0)  # left padded
    torch.testing.assert_close(recompute(policy, s), s.logprobs, atol=1e-5, rtol=0)
    assert (s.logprobs[s.completion_mask == 0] == 0).all()


@pytest.mark.parametrize("temperature,top_p", [(0.7, 1.0), (1.5, 1.0), (0.7, 0.8)])
def test_logprobs_are_of_the_tempered_distribution(policy, temperature, top_p):
    s = sample(policy, PROMPTS, n=2, max_new_tokens=10, temperature=temperature, top_p=top_p, seed=3)
    torch.testing.assert_close(recompute(policy, s, temperature), s.logprobs, atol=1e-5, rtol=0)
    gap = (recompute(policy, s, 1.0) - s.logprobs).abs().max()
    assert gap > 1e-3  # not the untempered log-probabilities


def test_top_p_keeps_to_the_nucleus(policy):
    s = sample(policy, PROMPTS, n=4, max_new_tokens=10, temperature=1.0, top_p=0.3, seed=1)
    full = sample(policy, PROMPTS, n=4, max_new_tokens=10, temperature=1.0, top_p=1.0, seed=1)
    # tokens drawn from a small nucleus are likelier on average than unrestricted draws
    mean = (s.logprobs.sum() / s.completion_mask.sum()).item()
    assert mean > (full.logprobs.sum() / full.completion_mask.sum()).item()


def test_left_padding_does_not_change_logprobs(policy):
    alone = sample_ids(policy, [policy.encode_prompts(["a dog ran"])[0]], n=1, max_new_tokens=8, seed=5)
    padded_ids = torch.cat([torch.zeros(1, 7, dtype=torch.long), alone.input_ids], dim=1)
    padded_mask = torch.cat([torch.zeros(1, 7, dtype=torch.long), alone.attention_mask], dim=1)
    with torch.no_grad():
        lp = policy.token_logprobs(padded_ids, padded_mask, alone.completion_mask)
    torch.testing.assert_close(lp, alone.logprobs, atol=1e-5, rtol=0)
    # and inside a sampled batch: each padded row matches its own unpadded recomputation
    s = sample(policy, PROMPTS, n=1, max_new_tokens=8, seed=2)
    row = 1  # the shortest prompt, most padding
    start = int((s.prompt_mask[row] == 0).sum())
    with torch.no_grad():
        own = policy.token_logprobs(
            s.input_ids[row : row + 1, start:],
            s.attention_mask[row : row + 1, start:],
            s.completion_mask[row : row + 1],
        )
    torch.testing.assert_close(own, s.logprobs[row : row + 1], atol=1e-5, rtol=0)


def test_stop_strings_cut_completions(policy):
    free = sample(policy, PROMPTS, n=4, max_new_tokens=16, seed=4)
    word = next(w for text in free.texts for w in text.split() if w not in ("the",))
    s = sample(policy, PROMPTS, n=4, max_new_tokens=16, seed=4, stop=[word])
    assert "stop" in s.finish_reasons
    for r, reason in enumerate(s.finish_reasons):
        length = int(s.completion_mask[r].sum())
        assert word not in s.texts[r]
        assert (s.completion_mask[r, length:] == 0).all()
        assert (s.completion_ids[r, length:] == policy.tokenizer.pad_token_id).all()
        if reason == "stop":
            # the token that completed the stop string is kept (it was sampled); nothing after it
            decode = policy.tokenizer.decode
            assert word in decode(s.completion_ids[r, :length]) and word not in decode(
                s.completion_ids[r, : length - 1]
            )
    torch.testing.assert_close(recompute(policy, s), s.logprobs, atol=1e-5, rtol=0)


def test_eos_ends_a_completion_and_is_kept(policy):
    eos = policy.tokenizer.eos_token_id
    with torch.no_grad():  # make EOS likely after a few tokens
        policy.base_model.get_output_embeddings().weight[eos] *= 0
    s = sample(policy, PROMPTS, n=4, max_new_tokens=40, seed=0)
    assert "eos" in s.finish_reasons
    r = s.finish_reasons.index("eos")
    length = int(s.completion_mask[r].sum())
    assert int(s.completion_ids[r, length - 1]) == eos
    assert "<|im_end|>" not in s.texts[r]


def test_same_seed_same_samples(policy):
    a = sample(policy, PROMPTS, n=3, max_new_tokens=10, seed=11, top_p=0.9)
    b = sample(policy, PROMPTS, n=3, max_new_tokens=10, seed=11, top_p=0.9)
    c = sample(policy, PROMPTS, n=3, max_new_tokens=10, seed=12, top_p=0.9)
    assert torch.equal(a.completion_ids, b.completion_ids) and a.texts == b.texts
    assert torch.equal(a.logprobs, b.logprobs)
    assert not torch.equal(a.completion_ids, c.completion_ids)
    state = torch.random.get_rng_state()
    sample(policy, PROMPTS, n=1, max_new_tokens=4, seed=0)
    assert torch.equal(state, torch.random.get_rng_state())  # the global RNG is left alone


def test_greedy_and_chat_messages(policy):
    messages = [[{"role": "system", "content": "hello"}, {"role": "user", "content": "the cat"}]]
    a = sample(policy, messages, n=2, max_new_tokens=6, temperature=0.0, seed=0)
    b = sample(policy, messages, n=2, max_new_tokens=6, temperature=0.0, seed=9)
    assert torch.equal(a.completion_ids, b.completion_ids)
    assert torch.equal(a.completion_ids[0], a.completion_ids[1])
    text = policy.tokenizer.decode(a.prompt_ids[0])
    assert text.startswith("<|im_start|> system hello") and text.endswith("<|im_start|> assistant")
    torch.testing.assert_close(recompute(policy, a), a.logprobs, atol=1e-5, rtol=0)


def test_lora_starts_as_identity_and_reference_stays_fixed(tokenizer, model):
    base = copy.deepcopy(model)
    policy = LMPolicy(tokenizer, model, LORA)
    assert 0 < policy.num_parameters(trainable_only=True) < policy.num_parameters() // 5
    s = sample(policy, PROMPTS, n=2, max_new_tokens=10, seed=0)
    with torch.no_grad():
        want = LMPolicy(tokenizer, base, PolicyConfig(finetune="full", reference_copy=False)).token_logprobs(
            s.input_ids, s.attention_mask, s.completion_mask
        )
    before = recompute(policy, s)
    with policy.reference():
        ref_before = recompute(policy, s)
    torch.testing.assert_close(before, want, atol=1e-6, rtol=0)
    torch.testing.assert_close(ref_before, before, atol=0, rtol=0)

    policy.train()
    train_step(policy, s)
    policy.eval()
    after = recompute(policy, s)
    with policy.reference():
        ref_after = recompute(policy, s)
    assert (after - before).abs().max() > 1e-3
    assert (after * s.completion_mask).sum() > (before * s.completion_mask).sum()  # the step raised log p
    torch.testing.assert_close(ref_after, ref_before, atol=0, rtol=0)


def test_full_finetuning_keeps_a_frozen_reference(tokenizer, model):
    policy = LMPolicy(tokenizer, model, PolicyConfig(finetune="full"))
    assert policy.num_parameters(trainable_only=True) == policy.num_parameters()
    s = sample(policy, PROMPTS, n=2, max_new_tokens=8, seed=0)
    before = recompute(policy, s)
    train_step(policy, s, lr=1e-3)
    with policy.reference():
        torch.testing.assert_close(recompute(policy, s), before, atol=0, rtol=0)
    assert (recompute(policy, s) - before).abs().max() > 1e-3
    bare = LMPolicy(
        tokenizer, make_model(len(tokenizer)), PolicyConfig(finetune="full", reference_copy=False)
    )
    with pytest.raises(ReferenceUnavailableError, match="reference_copy=True"):
        with bare.reference():
            pass


def test_lora_save_load_round_trip(tmp_path: Path, tokenizer, model, policy):
    s = sample(policy, PROMPTS, n=2, max_new_tokens=10, seed=0)
    train_step(policy, s)
    want = recompute(policy, s)
    opt_state = {"step": 3, "lr": torch.tensor(0.5)}
    path = policy.save(tmp_path / "ckpt", metadata={"steps": 1}, states={"optimizer": opt_state})
    assert (path / "weights" / "adapter.safetensors").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]

    fresh = make_model(len(tokenizer))  # same seed: the same base weights
    loaded, states = LMPolicy.load(path, make_tokenizer(), fresh, return_states=True)
    assert loaded.config == LORA
    assert states["optimizer"]["step"] == 3
    torch.testing.assert_close(recompute(loaded, s), want, atol=0, rtol=0)
    with pytest.raises(LLMError, match="base model"):
        LMPolicy.load(path, tokenizer)


def test_full_checkpoint_round_trip_with_tied_weights(tmp_path: Path, tokenizer):
    policy = LMPolicy(tokenizer, make_model(len(tokenizer), tied=True), PolicyConfig(finetune="full"))
    s = sample(policy, PROMPTS, n=2, max_new_tokens=8, seed=0)
    train_step(policy, s, lr=1e-3)
    want = recompute(policy, s)
    path = policy.save(tmp_path / "full")
    loaded = LMPolicy.load(path, tokenizer)  # rebuilt from the saved model config
    head, emb = loaded.model.get_output_embeddings(), loaded.model.get_input_embeddings()
    assert head.weight.data_ptr() == emb.weight.data_ptr()
    torch.testing.assert_close(recompute(loaded, s), want, atol=0, rtol=0)


def test_a_killed_save_leaves_no_half_checkpoint(tmp_path: Path, monkeypatch, policy):
    import resonance_os.rl.checkpoint as ckpt

    s = sample(policy, PROMPTS, n=1, max_new_tokens=6, seed=0)
    first = policy.save(tmp_path / "ckpt")
    want = recompute(policy, s)
    train_step(policy, s)

    def dying_save(tensors, filename):
        Path(filename).write_bytes(b"half a file")
        raise KeyboardInterrupt("killed mid-save")

    monkeypatch.setattr(ckpt, "save_file", dying_save)
    with pytest.raises(KeyboardInterrupt):
        policy.save(tmp_path / "ckpt")
    with pytest.raises(KeyboardInterrupt):
        policy.save(tmp_path / "other")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]  # no temp folder, no "other"
    monkeypatch.undo()
    loaded = LMPolicy.load(first, make_tokenizer(), make_model(len(policy.tokenizer)))
    torch.testing.assert_close(recompute(loaded, s), want, atol=0, rtol=0)  # the old one intact


def test_merged_model_equals_adapter_model(tmp_path: Path, tokenizer, policy):
    s = sample(policy, PROMPTS, n=2, max_new_tokens=10, seed=0)
    train_step(policy, s)
    want = recompute(policy, s)
    merged = policy.merge()
    assert not any("lora" in name for name, _ in merged.named_parameters())
    as_full = LMPolicy(tokenizer, merged, PolicyConfig(finetune="full", reference_copy=False))
    torch.testing.assert_close(recompute(as_full, s), want, atol=1e-5, rtol=0)
    torch.testing.assert_close(recompute(policy, s), want, atol=0, rtol=0)  # the policy is unchanged

    exported = LMPolicy.from_pretrained(policy.export(tmp_path / "export"), PolicyConfig(finetune="full"))
    torch.testing.assert_close(recompute(exported, s), want, atol=1e-5, rtol=0)


def test_fp32_head_on_a_bf16_model(tokenizer):
    policy = LMPolicy(tokenizer, make_model(len(tokenizer)).to(torch.bfloat16), LORA)
    s = sample(policy, PROMPTS[:1], n=2, max_new_tokens=6, seed=0)
    out = policy.forward_logits(s.input_ids, s.attention_mask)
    assert out.logits.dtype == torch.float32
    assert (
        policy.forward_logits(s.input_ids, s.attention_mask, fp32_head=False).logits.dtype == torch.bfloat16
    )
    assert policy.base_model.get_output_embeddings().weight.dtype == torch.bfloat16  # hook removed, not cast
    lp = policy.token_logprobs(s.input_ids, s.attention_mask, s.completion_mask)
    assert lp.dtype == torch.float32
    lp.sum().backward()
    assert any(p.grad is not None for p in policy.trainable_parameters())


def test_prompt_longer_than_context_is_a_clear_error(tokenizer):
    policy = LMPolicy(tokenizer, make_model(len(tokenizer), context=32), LORA)
    long_prompt = " ".join(["cat"] * 40)
    with pytest.raises(PromptTooLongError, match="context of 32 tokens") as info:
        sample(policy, [long_prompt], max_new_tokens=4)
    assert isinstance(info.value, ValueError)
    with pytest.raises(PromptTooLongError, match="lower max_new_tokens"):
        sample(policy, ["the cat"], max_new_tokens=30)


@pytest.mark.parametrize(
    "field,value",
    [
        ("finetune", "qlora"),
        ("lora_rank", 0),
        ("lora_rank", 2.5),
        ("lora_alpha", -1),
        ("lora_dropout", 1.0),
        ("target_modules", []),
        ("target_modules", ""),
    ],
)
def test_bad_policy_config_is_a_clear_error(field, value):
    with pytest.raises(ConfigError, match=field) as info:
        PolicyConfig(**{field: value})
    assert isinstance(info.value, ValueError)


def test_policy_config_round_trips_and_unknown_targets_fail(tokenizer, model):
    cfg = PolicyConfig(lora_rank=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.05)
    assert PolicyConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ConfigError, match="unknown PolicyConfig fields"):
        PolicyConfig.from_dict({"rank": 4})
    with pytest.raises(ConfigError, match="match no layer"):
        LMPolicy(tokenizer, model, PolicyConfig(target_modules=["c_attn"]))


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"n": 0}, "n=0"),
        ({"max_new_tokens": 0}, "max_new_tokens"),
        ({"temperature": -1.0}, "temperature"),
        ({"top_p": 0.0}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
        ({"stop": [""]}, "stop"),
        ({"seed": "x"}, "seed"),
    ],
)
def test_bad_sampling_options_are_clear_errors(policy, kwargs, match):
    with pytest.raises(ConfigError, match=match):
        sample(policy, PROMPTS, **kwargs)


def test_load_rejects_a_missing_checkpoint(tmp_path: Path, tokenizer):
    with pytest.raises(CheckpointError, match="no checkpoint folder"):
        LMPolicy.load(tmp_path / "nothing", tokenizer)


def test_wrapping_a_model_in_lora_shows_the_user_no_library_deprecation_warning(tokenizer, model):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # peft reads transformers' deprecated alias
        policy = LMPolicy(tokenizer, model, LORA)
    assert policy.is_lora
