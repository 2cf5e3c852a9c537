import numpy as np
import pytest

from resonance_os.core.errors import InvalidHRVError, ValidationError
from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.generation.planner_layer import PlannerLayer, carried_target
from resonance_os.profiles.templates import DEFAULT_PROFILE


@pytest.mark.parametrize(
    "target",
    [
        [0.4, 0.62, 0.35, 0.65, 0.1, 0.05, 0.3, 0.92],
        [0.0] * 8,
        [1.0] * 8,
        [0.5, 0.5, 0.5, 0.5, 0.02, 0.0, 0.5, 1.0],
    ],
)
@pytest.mark.parametrize("n", [1, 2, 3, 6])
def test_paragraph_targets_vary_but_average_to_the_article_target(target, n):
    outlines, targets = PlannerLayer().plan_paragraphs("remote work", n, target)
    assert len(outlines) == len(targets) == n
    arr = np.array(targets)
    assert arr.shape == (n, 8) and arr.min() >= 0.0 and arr.max() <= 1.0
    np.testing.assert_allclose(arr.mean(axis=0), target, atol=1e-6)
    if n >= 3 and 0.1 < target[4] < 0.9:
        curiosity = arr[:, HRV_DIMENSIONS.index("curiosity_index")]
        assert curiosity[0] > curiosity[1], "the opening is more curious than the middle"


def test_carried_target_hands_the_earlier_paragraphs_gap_to_the_rest():
    targets = [[0.2] * 8, [0.4] * 8, [0.6] * 8, [0.8] * 8]
    assert carried_target(targets, 0, [0.9] * 8) == targets[0]
    # on plan so far: the planned target
    np.testing.assert_allclose(carried_target(targets, 2, [0.3] * 8), targets[2])
    # two paragraphs 0.1 too high: 0.2 to take back, shared by the two left
    np.testing.assert_allclose(carried_target(targets, 2, [0.4] * 8), [0.5] * 8)
    # the last paragraph takes all that is left, inside [0, 1]
    written = [0.1, 0.9, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    aimed = carried_target(targets, 3, written)
    np.testing.assert_allclose(aimed[:3], [1.0, 0.0, 0.5])


def test_outlines_have_roles_and_topics():
    outlines, _ = PlannerLayer().plan_paragraphs("remote work and team culture", 3)
    assert [o.role for o in outlines] == ["opening", "development", "close"]
    assert outlines[0].focus == "remote work" and outlines[1].focus == "team culture"


def test_default_target_is_the_default_profile():
    _, targets = PlannerLayer().plan_paragraphs("remote work", 1)
    assert targets[0] == pytest.approx(DEFAULT_PROFILE.vector.to_list())


def test_bad_inputs():
    with pytest.raises(ValidationError, match="num_paragraphs"):
        PlannerLayer().plan_paragraphs("remote work", 0)
    with pytest.raises(InvalidHRVError, match="curiosity_index"):
        PlannerLayer().plan_paragraphs("remote work", 2, [0.5, 0.5, 0.5, 0.5, 1.5, 0.5, 0.5, 0.5])
