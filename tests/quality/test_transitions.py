"""The transition order model of the fast coherence term: its mean over all orders is exact, the
training script scores orders exactly as the package reads them and rebuilds the same model from the
same data, and the shipped model prefers the real order of held-out paragraphs of other domains."""

from __future__ import annotations

import importlib.util
import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from resonance_os.quality import corpus, damage
from resonance_os.quality.coherence import coherence_model, text_units
from resonance_os.quality.transitions import PAIR_FEATURES, SENTENCE_FEATURES, TransitionModel

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "train_coherence_transitions.py"
HELDOUT = json.loads((Path(__file__).parent / "data" / "heldout_order_paragraphs.json").read_text("utf-8"))
GARDEN = (
    "The garden behind the old stone house had been neglected for many years. "
    "Its narrow paths were covered with moss and the broken branches of an apple tree. "
    "Last spring, my sister finally decided that she would restore it. "
    "She cleared the paths and planted red roses along the wall. "
    "Now the garden is the quietest place in the neighbourhood."
)
STORY = "Tom met a dog. The dog barked at him. He was tired. First, it rains. Then Tom and Ann left? So they slept."


def random_model(seed: int = 0, hidden: int = 6, embed: int = 3, rich: bool = False) -> TransitionModel:
    """A transition model with random weights of the shipped shapes (two known openings, two stop
    words; ``rich``: also learned embeddings of three stems and the elementwise-product pair term)."""
    rng = np.random.default_rng(seed)
    function = {"the": 0, "was": 1}
    stems = {"garden": 1, "path": 2, "dog": 3} if rich else {}
    shapes = {
        "first_embedding": (3, embed),
        "opening_embedding": (3, embed),
        "sentence_w": (SENTENCE_FEATURES + len(function) + 2 * embed + 2 * rich, hidden),
        "sentence_b": (hidden,),
        "role_w": (hidden, 3),
        "role_b": (3,),
        "pair_a": (hidden, hidden),
        "pair_b": (hidden, hidden),
        "pair_p": (PAIR_FEATURES, hidden),
        "pair_bias": (hidden,),
        "pair_out": (hidden, 2),
        "pair_out_bias": (2,),
    }
    if rich:
        shapes |= {"stem_embedding": (4, 2), "pair_m": (hidden, hidden)}
    weights = {k: rng.normal(size=s).astype(np.float32) for k, s in shapes.items()}
    openings = {"the_garden": 1, "she_cleared": 2}
    return TransitionModel(weights, {"the": 1, "she": 2}, openings, 2.0, -0.3, function, stems)


def load_script():
    spec = importlib.util.spec_from_file_location("train_coherence_transitions", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_gain_averages_to_zero_over_every_order_and_tells_orders_apart() -> None:
    units = text_units(GARDEN)
    for model in (random_model(), random_model(rich=True), coherence_model().transitions or random_model(1)):
        gains = [model.order_gain([units[i] for i in order]) for order in itertools.permutations(range(5))]
        assert abs(np.mean(gains)) < 1e-5
        assert max(gains) - min(gains) > 1e-3
    assert random_model().order_gain(units[:1]) == 0.0


def test_the_training_script_scores_orders_as_the_package_reads_them() -> None:
    """The script's torch twin of the model, over padded batches and order indicators, gives the same
    score differences as the numpy inference that ships."""
    torch = pytest.importorskip("torch")
    script = load_script()
    paragraphs = [text_units(GARDEN), text_units(STORY)]
    for model in (random_model(), random_model(rich=True)):
        arrays = script.Arrays(
            paragraphs, model.first_words, model.openings, model.function_words, model.stems
        )
        weights = {k: torch.from_numpy(v) for k, v in model.weights.items()}
        roles, adjacent, precedence = script.parts(weights, *script.tensors(arrays, np.arange(2)))
        identity = np.tile(np.arange(script.SIZE), (2, 1))
        real = script.scores(roles, adjacent, precedence, identity, arrays.lengths).numpy()
        rng = np.random.default_rng(0)
        for _ in range(3):
            orders = script.random_orders(arrays.lengths, rng)
            other = script.scores(roles, adjacent, precedence, orders, arrays.lengths).numpy()
            for b, units in enumerate(paragraphs):
                shuffled = [units[i] for i in orders[b, : len(units)]]
                want = model.order_gain(units) - model.order_gain(shuffled)
                assert real[b] - other[b] == pytest.approx(want, abs=1e-3)


def test_the_script_rebuilds_the_same_model_from_the_same_paragraphs(tmp_path, monkeypatch) -> None:
    pytest.importorskip("torch")
    script = load_script()
    books = tmp_path / "books"
    books.mkdir()
    paragraphs = corpus.document_paragraphs(corpus.pydoc_paragraphs("train"))[:120]
    rows = [{"domain": "novels", "source": f"book{k % 40}", "text": p} for k, p in enumerate(paragraphs)]
    (books / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    written = []
    for name in ("a.npz", "b.npz"):
        out = tmp_path / name
        argv = [
            "x",
            "--books",
            str(books),
            "--out",
            str(out),
            "--epochs",
            "1",
            "--hidden",
            "8",
            "--function-words",
            "--stems",
            "4",
            "--bilinear",
            "--no-docstrings",
            "--no-extra",
        ]
        monkeypatch.setattr(sys, "argv", argv)
        script.main()
        written.append(TransitionModel.load(out))
    a, b = written
    assert a.weights.keys() == b.weights.keys() and (a.alpha, a.beta) == (b.alpha, b.beta)
    assert all(np.array_equal(a.weights[k], b.weights[k]) for k in a.weights)
    assert len(a.function_words) > 100 and a.alpha > 0
    units = text_units(GARDEN)
    assert a.order_logit(units) == b.order_logit(units)


def test_the_shipped_model_prefers_the_real_order_of_heldout_paragraphs_of_other_domains() -> None:
    """18 held-out paragraphs (history, essays, the Rust book), 5 shuffles each."""
    model = coherence_model()
    if model.transitions is None:
        pytest.skip("coherence.json names no transition model")
    wins = []
    for i, row in enumerate(HELDOUT["paragraphs"]):
        real = model.order_logit(text_units(row["text"]))
        for seed in range(5):
            other = model.order_logit(text_units(damage.shuffle_sentences(row["text"], seed=1000 * seed + i)))
            wins.append(1.0 if real > other else 0.5 if real == other else 0.0)
    assert np.mean(wins) >= RATE
    assert model.linear.transitions is None and model.linear.weights is model.weights


RATE = 0.7
"""The shipped model's floor on these pairs (measured 0.756, the linear order weights alone 0.778: 90 pairs)."""
