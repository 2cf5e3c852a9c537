"""Many LoRA adapters on one frozen base model (llm/lora_slots.py): a mixed batch computes what each
adapter computes alone, gradients reach only the rows' own adapters, state round-trips."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers", reason="the LoRA slots wrap a transformers causal LM")

from tiny_lm import make_model, make_tokenizer  # noqa: E402

from resonance_os.llm.errors import ConfigError, LLMError  # noqa: E402
from resonance_os.llm.lora_slots import LoraSlots, LoraSpec  # noqa: E402


@pytest.fixture
def slots():
    tokenizer = make_tokenizer()
    return LoraSlots(make_model(len(tokenizer), seed=0))


def logits(slots, ids, names):
    with slots.route(names):
        return slots.model(input_ids=ids).logits


def perturb(params, seed):
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in params:
            p.add_(torch.randn(p.shape, generator=generator) * 0.1)


def test_a_fresh_adapter_is_the_base_model_and_a_mixed_batch_equals_separate_passes(slots):
    ids = torch.randint(5, 40, (4, 10), generator=torch.Generator().manual_seed(0))
    base = logits(slots, ids, None)
    a = slots.add("a", LoraSpec(rank=4), seed=1)
    b = slots.add("b", LoraSpec(rank=2, train_mlp=False, train_unembed=False), seed=2)
    torch.testing.assert_close(logits(slots, ids, "a"), base)  # B = 0 at the start
    perturb(a, 3)
    perturb(b, 4)
    mixed = logits(slots, ids, ["a", "b", None, "a"])
    torch.testing.assert_close(mixed[[0, 3]], logits(slots, ids[[0, 3]], "a"), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(mixed[[1]], logits(slots, ids[[1]], "b"), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(mixed[[2]], base[[2]], rtol=1e-5, atol=1e-5)
    assert not torch.allclose(mixed[0], base[0])


def test_gradients_reach_only_the_adapters_of_the_rows_that_used_them(slots):
    a = slots.add("a", LoraSpec(rank=4), seed=1)
    b = slots.add("b", LoraSpec(rank=4), seed=2)
    ids = torch.randint(5, 40, (2, 8), generator=torch.Generator().manual_seed(1))
    out = logits(slots, ids, ["a", "a"])
    out.logsumexp(-1).sum().backward()
    assert all(p.grad is not None for p in a) and all(p.grad is None for p in b)
    assert not any(p.requires_grad for p in slots.model.parameters() if all(p is not q for q in a + b))


def test_state_round_trips_and_seeds_fix_the_init(slots):
    a = slots.add("a", LoraSpec(rank=4), seed=7)
    perturb(a, 1)
    state = slots.state_dict("a")
    slots.add("copy", LoraSpec(rank=4), seed=0)
    slots.load_state_dict("copy", state)
    ids = torch.randint(5, 40, (2, 8), generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(logits(slots, ids, "copy"), logits(slots, ids, "a"))
    slots.add("x", LoraSpec(rank=4), seed=9)
    slots.add("y", LoraSpec(rank=4), seed=9)
    assert all(torch.equal(p, q) for p, q in zip(slots.parameters("x"), slots.parameters("y"), strict=True))
    slots.remove("a")
    with pytest.raises(LLMError, match="no adapter named 'a'"):
        slots.state_dict("a")
    with pytest.raises(LLMError, match="do not fit"):
        slots.load_state_dict("x", {"nope": torch.zeros(1)})
    with pytest.raises(ConfigError, match="at least one"):
        LoraSpec(rank=4, train_mlp=False, train_attn=False, train_unembed=False)
