import pytest

from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.core.hrv_types import default_target
from resonance_os.generation.hrf_model import HRFModel
from resonance_os.generation.human_resonant_writer import HumanResonantWriter
from resonance_os.quality.damage import word_salad
from resonance_os.quality.reward import WritingReward

CREATIVE = [0.6, 0.65, 0.6, 0.55, 0.35, 0.3, 0.7, 0.93]
TECHNICAL = [0.35, 0.52, 0.25, 0.55, 0.1, 0.03, 0.2, 0.8]
PROSE = (
    "The library opened a small garden behind the reading room last spring. Volunteers planted "
    "beans, herbs and a row of sunflowers along the fence. Children who came for story time began "
    "to water the beds, and some of them now keep a notebook of what grows each week."
)


@pytest.fixture(scope="module")
def model():
    return HRFModel()


def test_text_written_for_a_target_scores_higher_on_it(model):
    writer = HumanResonantWriter(backend="builtin")
    creative = writer.generate("city gardens", target_hrv=CREATIVE, num_paragraphs=1, seed=3).text
    technical = writer.generate("city gardens", target_hrv=TECHNICAL, num_paragraphs=1, seed=3).text
    # the same text (same writing quality) is predicted to resonate more with the target it was written for
    assert model.predict(creative, CREATIVE) > model.predict(creative, TECHNICAL)
    assert model.predict(technical, TECHNICAL) > model.predict(technical, CREATIVE)
    for text in (creative, technical):
        assert 0.0 <= model.predict(text) <= 1.0


def test_per_dimension_keys_and_ranges(model):
    scores = model.per_dimension("The river rose at dawn. We ran to the boats!", CREATIVE)
    assert list(scores) == [*HRV_DIMENSIONS, "fluency", "coherence", "repetition"]
    assert all(0.0 <= v <= 1.0 for v in scores.values())


def test_word_salad_and_repetition_score_below_real_prose(model):
    repeated = " ".join([PROSE.split(". ")[0] + "."] * 4)
    for damaged in (word_salad(PROSE, seed=1), repeated):
        assert model.predict(damaged) < model.predict(PROSE) - 0.1
    assert model.per_dimension(word_salad(PROSE, seed=1))["fluency"] < model.per_dimension(PROSE)["fluency"]


def test_the_reward_is_chosen_by_name_as_everywhere():
    assert HRFModel(reward="fast").reward.kind == "fast"
    given = WritingReward()
    assert HRFModel(reward=given).reward is given
    assert HRFModel(reward=given).predict(PROSE) == given.predict(PROSE, default_target())
    with pytest.raises(ValidationError, match="fast, lm"):
        HRFModel(reward="best")
