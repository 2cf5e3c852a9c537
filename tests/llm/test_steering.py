"""Residual-stream steering hooks (llm.steering) on a tiny random Llama."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers", reason="steering needs the local extra (transformers)")

from tiny_lm import make_model, make_tokenizer  # noqa: E402

from resonance_os.llm.errors import ConfigError  # noqa: E402
from resonance_os.llm.policy import LMPolicy, PolicyConfig  # noqa: E402
from resonance_os.llm.steering import (  # noqa: E402
    decoder_layers,
    residual_means,
    residual_states,
    steering,
    typical_norm,
)


@pytest.fixture(scope="module")
def lm():
    tokenizer = make_tokenizer()
    return tokenizer, make_model(len(tokenizer), seed=3)


def _batch(tokenizer, texts):
    tokenizer.padding_side = "left"
    return tokenizer(texts, return_tensors="pt", padding=True)


def _greedy(model, inputs, n=8):
    return model.generate(**inputs, max_new_tokens=n, do_sample=False, pad_token_id=0)


def test_addition_shifts_the_residual_stream_by_strength_times_vector(lm):
    tokenizer, model = lm
    inputs = _batch(tokenizer, ["the cat sat on the mat", "a dog ran"])
    vector = torch.randn(model.config.hidden_size, generator=torch.Generator().manual_seed(0))
    before = residual_states(model, inputs["input_ids"], inputs["attention_mask"], [0])[0]
    with steering(model, {0: 0.7 * vector}):
        after = residual_states(model, inputs["input_ids"], inputs["attention_mask"], [0])[0]
    torch.testing.assert_close(after - before, (0.7 * vector).expand_as(before), atol=1e-5, rtol=0)


def test_per_row_additions_steer_each_row_of_one_batch(lm):
    tokenizer, model = lm
    inputs = _batch(tokenizer, ["the cat sat", "the cat sat", "the cat sat"])
    vector = torch.randn(model.config.hidden_size, generator=torch.Generator().manual_seed(1))
    strengths = torch.tensor([-1.0, 0.0, 0.5])
    before = residual_states(model, inputs["input_ids"], inputs["attention_mask"], [1])[1]
    with steering(model, {1: strengths[:, None] * vector}):
        after = residual_states(model, inputs["input_ids"], inputs["attention_mask"], [1])[1]
    shift = (after - before).mean(1)
    torch.testing.assert_close(shift, strengths[:, None] * vector, atol=1e-5, rtol=0)
    assert torch.equal(after[1], before[1])  # the strength-0 row is untouched, bit for bit


def test_strength_zero_is_bit_identical_to_no_steering(lm):
    tokenizer, model = lm
    inputs = _batch(tokenizer, ["the cat sat on", "one two"])
    vector = torch.randn(model.config.hidden_size)
    plain = _greedy(model, inputs)
    with steering(model, {0: 0.0 * vector, 1: torch.zeros(2, model.config.hidden_size)}):
        steered_off = _greedy(model, inputs)
        logits_off = model(**inputs).logits
    assert torch.equal(plain, steered_off)
    assert torch.equal(model(**inputs).logits, logits_off)


def test_steering_moves_generation_toward_the_direction_and_per_row_in_one_generate(lm):
    tokenizer, model = lm
    # The unembedding's "red" row minus its "blue" row, added after the last layer: steered along it
    # the model prefers "red" to "blue" more, against it less.
    red, blue = (tokenizer.convert_tokens_to_ids(w) for w in ("red", "blue"))
    head = model.get_output_embeddings().weight.detach()
    direction = head[red] - head[blue]
    direction = direction / direction.norm() * 4.0
    inputs = _batch(tokenizer, ["the cat sat on the"] * 3)
    with steering(model, {1: torch.tensor([-4.0, 0.0, 4.0])[:, None] * direction}):
        logits = model(**inputs).logits[:, -1]
        steered_rows = _greedy(model, inputs, n=4)
    margin = logits[:, red] - logits[:, blue]
    assert margin[0] < margin[1] < margin[2]
    plain = _greedy(model, _batch(tokenizer, ["the cat sat on the"]), n=4)
    assert torch.equal(steered_rows[1], plain[0])  # the unsteered row generates exactly as alone
    with steering(model, {1: 4.0 * direction}):
        alone = _greedy(model, _batch(tokenizer, ["the cat sat on the"]), n=4)
    assert torch.equal(steered_rows[2], alone[0])  # a per-row strength acts as it does on its own


def test_hooks_are_removed_after_the_block_also_after_an_error(lm):
    tokenizer, model = lm
    inputs = _batch(tokenizer, ["the cat"])
    plain = model(**inputs).logits
    with pytest.raises(RuntimeError):
        with steering(model, {0: torch.ones(model.config.hidden_size)}):
            raise RuntimeError("boom")
    assert all(not layer._forward_hooks for layer in decoder_layers(model))
    assert torch.equal(model(**inputs).logits, plain)


def test_bad_additions_are_refused_with_the_fix(lm):
    tokenizer, model = lm
    h = model.config.hidden_size
    with pytest.raises(ConfigError, match="from 0 to 1"):
        with steering(model, {2: torch.ones(h)}):
            pass
    with pytest.raises(ConfigError, match=f"expected \\({h},\\)"):
        with steering(model, {0: torch.ones(h + 1)}):
            pass
    inputs = _batch(tokenizer, ["the cat", "a dog"])
    with pytest.raises(ConfigError, match="one delta per row"):
        with steering(model, {0: torch.ones(3, h)}):
            model(**inputs)
    with pytest.raises(ConfigError, match="decoder layers"):
        decoder_layers(torch.nn.Linear(2, 2))


def test_steering_finds_the_layers_of_an_lm_policy(lm):
    tokenizer, model = lm
    policy = LMPolicy(tokenizer, make_model(len(tokenizer), seed=3), PolicyConfig(lora_rank=2, lora_alpha=4))
    assert len(decoder_layers(policy.forward_model)) == model.config.num_hidden_layers
    inputs = _batch(tokenizer, ["the cat sat"])
    plain = policy.forward_model(**inputs).logits
    with steering(policy.forward_model, {0: torch.ones(model.config.hidden_size)}):
        steered = policy.forward_model(**inputs).logits
    assert not torch.allclose(plain, steered)


def test_residual_means_average_only_the_span_and_norm_is_a_median(lm):
    tokenizer, model = lm
    inputs = _batch(tokenizer, ["the cat sat on the mat", "a dog ran"])
    span = inputs["attention_mask"].bool().clone()
    span[:, -1] = False
    states = residual_states(model, inputs["input_ids"], inputs["attention_mask"], [0])[0]
    means = residual_means(model, inputs["input_ids"], inputs["attention_mask"], span, [0])[0]
    for row in range(2):
        torch.testing.assert_close(means[row], states[row][span[row]].mean(0))
    norm = typical_norm(model, inputs["input_ids"], inputs["attention_mask"], span, 0)
    assert norm == pytest.approx(float(states.norm(dim=-1)[span].median()))
    with pytest.raises(ConfigError, match="at least one position"):
        residual_means(model, inputs["input_ids"], inputs["attention_mask"], torch.zeros_like(span), [0])
