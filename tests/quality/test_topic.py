import random

from resonance_os.quality import corpus
from resonance_os.quality.topic import topic_model

GARDEN = (
    "City gardens turn empty lots into places where neighbours grow food together. A garden needs "
    "water, soil and a few people who show up every week to weed and plant. When the harvest comes, "
    "the vegetables are shared, and the plot becomes a meeting place for the street."
)
SLOT_FILLED = (
    "The story of city gardens comforted the reading list with delightful results. Possibly the "
    "effect on the front desk is deeply delightful. The night shift indeed maps the town hall of "
    "city gardens in the middle of a crowded quarter."
)


def test_a_text_about_the_prompt_beats_one_that_only_drops_its_words_into_slots():
    model = topic_model()
    assert model.score(GARDEN, "city gardens") > model.score(SLOT_FILLED, "city gardens") + 0.1
    assert model.score(GARDEN, "city gardens") > 0.8


def test_held_out_paragraphs_score_higher_on_their_own_key_words_than_on_anothers():
    paragraphs = corpus.document_paragraphs(corpus.pydoc_paragraphs("heldout"))
    model = topic_model()
    rng = random.Random(0)
    wins = 0
    for text in paragraphs:
        prompt = " ".join(sorted({w for w in text.lower().split() if len(w) > 7 and w.isalpha()})[:3])
        other = rng.choice([p for p in paragraphs if p is not text])
        wins += model.score(text, prompt) > model.score(other, prompt)
    assert wins / len(paragraphs) > 0.85


def test_range_and_degenerate_inputs():
    model = topic_model()
    assert model.score(GARDEN, "the of and") == 0.0  # no content word in the prompt
    assert model.score("", "city gardens") == 0.0
    assert model.score(GARDEN, "zqxv blorft") == 0.0  # unknown words, never mentioned
    for prompt in ("city gardens", "électricité et vélos", "gardens"):
        assert 0.0 <= model.score(GARDEN, prompt) <= 1.0


def test_score_many_gives_what_score_gives_for_each_prompt():
    model = topic_model()
    prompts = ["city gardens", "coffee roasting", "water soil", "the of and"]
    for text in (GARDEN, SLOT_FILLED, ""):
        for many, one in zip(model.score_many(text, prompts), [model.score(text, p) for p in prompts]):
            assert abs(many - one) < 1e-6


def test_punctuation_does_not_change_how_much_a_text_is_about_its_prompt():
    """Splitting a sentence in two (as the refiner's split edit does) says no less about the prompt."""
    model = topic_model()
    split = GARDEN.replace("are shared, and the plot", "are shared. The plot")
    merged = GARDEN.replace("weed and plant. When", "weed and plant; when")
    for prompt in ("city gardens", "harvest", "meeting place"):
        assert model.score(split, prompt) == model.score(GARDEN, prompt)
        assert model.score(merged, prompt) == model.score(GARDEN, prompt)
    # mentions still count only where they are: the prompt's words once, at the start, score less
    late = "Empty lots are everywhere. " * 3 + "Nobody waters them or weeds them or plants anything there."
    assert model.score("City gardens. " + late, "city gardens") < model.score(GARDEN, "city gardens")
