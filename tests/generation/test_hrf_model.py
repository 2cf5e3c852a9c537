import pytest

from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.generation.hrf_model import HRFModel, quality_signals
from resonance_os.generation.human_resonant_writer import HumanResonantWriter

CREATIVE = [0.6, 0.65, 0.6, 0.55, 0.35, 0.3, 0.7, 0.93]
TECHNICAL = [0.35, 0.52, 0.25, 0.55, 0.1, 0.03, 0.2, 0.8]


@pytest.fixture(scope="module")
def model():
    return HRFModel()


def test_text_written_for_a_target_scores_higher_on_it(model):
    writer = HumanResonantWriter()
    creative = writer.generate("city gardens", target_hrv=CREATIVE, num_paragraphs=1, seed=3).text
    technical = writer.generate("city gardens", target_hrv=TECHNICAL, num_paragraphs=1, seed=3).text
    assert model.predict(creative, CREATIVE) > model.predict(technical, CREATIVE) + 0.03
    assert model.predict(technical, TECHNICAL) > model.predict(creative, TECHNICAL) + 0.03
    for text in (creative, technical):
        assert 0.0 <= model.predict(text) <= 1.0


def test_per_dimension_keys_and_ranges(model):
    scores = model.per_dimension("The river rose at dawn. We ran to the boats!", CREATIVE)
    assert list(scores) == [*HRV_DIMENSIONS, "length", "repetition", "readability"]
    assert all(0.0 <= v <= 1.0 for v in scores.values())


def test_quality_signals_penalise_repetition_and_run_ons():
    varied = "The team met early. Plans changed by noon, and everyone adapted quickly to the new schedule."
    repeated = "The team met early. The team met early. The team met early. The team met early."
    assert quality_signals(repeated)["repetition"] < quality_signals(varied)["repetition"] - 0.3
    run_on = " ".join(["word"] * 120) + "."
    assert quality_signals(run_on)["length"] == 0.0
