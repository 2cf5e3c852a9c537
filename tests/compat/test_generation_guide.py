"""The original generation systems guide's layer calls, rewritten."""

import pytest

from resonance_os.core.errors import ValidationError
from resonance_os.generation.hrf_model import HRFModel
from resonance_os.generation.planner_layer import PlannerLayer
from resonance_os.generation.sentence_layer import SentenceLayer

TARGET = [0.7, 0.6, 0.8, 0.5, 0.4, 0.3, 0.6, 0.7]


def test_planner_sentence_layer_and_hrf_model_as_the_guide_calls_them():
    paragraphs, target_hrvs = PlannerLayer().plan_paragraphs("Climate change solutions", num_paragraphs=5)
    assert len(paragraphs) == len(target_hrvs) == 5

    sentences = SentenceLayer().generate_sentences(
        outline="Introduction to renewable energy", target_hrv=TARGET, seed=0
    )
    assert len(sentences) >= 2 and "renewable energy" in sentences[0].lower()
    for outline, target_hrv in zip(paragraphs[:1], target_hrvs[:1]):
        assert SentenceLayer().generate_sentences(outline, target_hrv, seed=0)

    score = HRFModel().predict(
        "The innovative technology transforms how we approach sustainable energy solutions."
    )
    assert 0.0 <= score <= 1.0
    with pytest.raises(ValidationError, match="outline must be an Outline"):
        SentenceLayer().generate_sentences(outline=42, target_hrv=TARGET)
