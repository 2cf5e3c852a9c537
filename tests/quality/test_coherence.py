"""The coherence term: real sentence order beats other orders on held-out prose, unrelated sentences
score low, and the score is a defined, deterministic number in [0, 1]."""

from __future__ import annotations

import itertools
import json
import random
from importlib.resources import files

import pytest

from resonance_os.profiling.sentences import split_sentences
from resonance_os.quality import corpus
from resonance_os.quality.coherence import CoherenceModel, coherence_model

GARDEN = (
    "The garden behind the old stone house had been neglected for many years. "
    "Its narrow paths were covered with moss and the broken branches of an apple tree. "
    "Last spring, my sister finally decided that she would restore it. "
    "She cleared the paths and planted red roses along the wall. "
    "Now the garden is the quietest place in the neighbourhood."
)
TEMPLATE = (
    "The morning meeting is threatened by the work on team culture. "
    "Possibly the effect on the front desk is deeply delightful. "
    "The new budget was approved by the parking committee. "
    "A quiet lunch improves the mood of the night shift. "
    "Honestly the printer remains a mystery to the visitors."
)


def _sentences(text: str) -> list[str]:
    return [text[slice(*s.span())] for s in split_sentences(text)]


@pytest.fixture(scope="module")
def heldout() -> list[list[str]]:
    """Held-out pydoc paragraphs (stdlib, never trained on) as lists of sentences, 3+ each."""
    items = [_sentences(p) for p in corpus.document_paragraphs(corpus.pydoc_paragraphs("heldout"))]
    return [s for s in items if len(s) >= 3]


def test_shipped_model_loads() -> None:
    data = json.loads(files("resonance_os.quality").joinpath("data/coherence.json").read_text("utf-8"))
    model = coherence_model()
    assert model is coherence_model()
    assert model == CoherenceModel.from_json(data)
    assert len(model.weights) >= 20 and model.alpha > 0
    assert len(model.connected_weights) == 5


def test_real_order_beats_other_orders_on_heldout_pydoc(heldout: list[list[str]]) -> None:
    model, rng = coherence_model(), random.Random(0)
    wins = []
    for sentences in heldout:
        real = model.order_score(sentences)
        for _ in range(10):
            order = rng.sample(sentences, len(sentences))
            if order != sentences:
                other = model.order_score(order)
                wins.append(1.0 if real > other else 0.5 if real == other else 0.0)
    assert len(heldout) >= 30
    assert sum(wins) / len(wins) > 0.56  # measured 0.61 (scripts/train_coherence.py: 0.610)


def test_unrelated_sentences_score_lower_than_real_paragraphs(heldout: list[list[str]]) -> None:
    model, rng = coherence_model(), random.Random(0)
    real = [model.score(" ".join(s)) for s in heldout]
    mixed = []
    for p, sentences in enumerate(heldout):
        others = rng.sample([q for q in range(len(heldout)) if q != p], len(sentences))
        mixed.append(model.score(" ".join(rng.choice(heldout[q]) for q in others)))
    assert sum(real) / len(real) - sum(mixed) / len(mixed) > 0.15  # measured about 0.3
    assert model.score(TEMPLATE) < 0.1 < 0.3 < model.score(GARDEN)


def test_mean_over_all_orders_is_zero() -> None:
    """``order_score`` is ``S - E[S]`` with ``E`` exact: it averages to 0 over every order."""
    model = coherence_model()
    sentences = _sentences(GARDEN)[:4]
    scores = [model.order_score(list(order)) for order in itertools.permutations(sentences)]
    assert abs(sum(scores) / len(scores)) < 1e-9
    assert max(scores) - min(scores) > 0.5
    assert model.order_score(sentences) > 0


@pytest.mark.parametrize(
    "text",
    [
        GARDEN,
        TEMPLATE,
        "Yes. Yes. Yes. Yes.",
        "It is. However, it is. So it is! Then? First.",
        "a " * 500 + ". b.",
    ],
)
def test_score_in_unit_interval_and_deterministic(text: str) -> None:
    model = coherence_model()
    value = model.score(text)
    assert 0.0 <= value <= 1.0
    assert (
        value
        == model.score(text)
        == CoherenceModel.from_json(json.loads(json.dumps(model.__dict__))).score(text)
    )


def test_single_sentence_and_empty_text() -> None:
    model = coherence_model()
    assert model.score("The garden was quiet.") == 0.5
    assert model.score("") == 0.0
    assert model.score("  ... !? ") == 0.0
    assert model.order_score(["The garden was quiet."]) == 0.0
