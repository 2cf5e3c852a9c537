import pytest

from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.generation.planner_layer import PlannerLayer
from resonance_os.generation.refiner_layer import RefinerLayer
from resonance_os.generation.sentence_layer import SentenceLayer
from resonance_os.profiling.hrv_extractor import HRVExtractor

PARAGRAPH = (
    "Remote work shapes the daily routine. The team reshapes the weekly plan in small and steady steps. "
    "Most readers guide the morning meeting across every part of the organization. "
    "The engineers track the monthly report."
)


@pytest.fixture(scope="module")
def refiner():
    return RefinerLayer(HRVExtractor())


def test_one_round_follows_the_gap_directions(refiner):
    extractor = refiner.extractor
    before = extractor.extract(PARAGRAPH)
    gaps = [0.0] * 8
    gaps[HRV_DIMENSIONS.index("curiosity_index")] = 0.4
    gaps[HRV_DIMENSIONS.index("active_voice_ratio")] = -0.3
    gaps[HRV_DIMENSIONS.index("metaphor_density")] = 0.3
    after = extractor.extract(refiner.refine(PARAGRAPH, gaps, seed=0))
    for name, sign in (("curiosity_index", 1), ("active_voice_ratio", -1), ("metaphor_density", 1)):
        i = HRV_DIMENSIONS.index(name)
        assert sign * (after[i] - before[i]) > 0.05, name
    untouched = HRV_DIMENSIONS.index("sentence_variance")
    assert after[untouched] == pytest.approx(before[untouched], abs=0.05)


def test_closed_loop_cuts_the_error_on_planned_paragraphs(refiner):
    outline = PlannerLayer().plan_paragraphs("remote work", 1)[0][0]
    layer = SentenceLayer()
    before, after = [], []
    for seed, target in enumerate(
        [[0.6, 0.3, 0.55, 0.3, 0.4, 0.2, 0.7, 0.75], [0.3, 0.7, 0.4, 0.8, 0.05, 0.0, 0.2, 1.0]] * 4
    ):
        text = " ".join(layer.generate_sentences(outline, target, seed=seed))
        result = refiner.refine_to_target(text, target, seed=seed)
        assert result.error <= result.initial_error
        assert result.steps <= refiner.max_steps
        before.append(result.initial_error)
        after.append(result.error)
    assert sum(after) < 0.75 * sum(before)


def test_bad_feedback(refiner):
    with pytest.raises(ValidationError, match="scalar feedback"):
        refiner.refine(PARAGRAPH, 0.4)
    with pytest.raises(ValidationError, match="8 gaps"):
        refiner.refine(PARAGRAPH, [0.1, 0.2])
