"""The built-in templates are places real prose reaches, on the extractor's current scales."""

from __future__ import annotations

import numpy as np
import pytest

from resonance_os.core.hrv_constants import HRV_DIMENSIONS, TYPICAL_HRV
from resonance_os.profiles.templates import BUILTIN_TEMPLATES
from resonance_os.profiling.hrv_extractor import HRVExtractor
from resonance_os.quality.corpus import mixed_paragraphs


@pytest.fixture(scope="module")
def real_prose_quantiles() -> dict[str, np.ndarray]:
    texts = mixed_paragraphs(600, seed=0, split="train")
    vectors = np.array([HRVExtractor().extract(t) for t in texts])
    return {d: np.percentile(vectors[:, i], [10, 50, 90]) for i, d in enumerate(HRV_DIMENSIONS)}


def test_typical_ranges_match_what_the_extractor_measures_on_real_prose(real_prose_quantiles) -> None:
    for dimension, measured in real_prose_quantiles.items():
        assert np.allclose(TYPICAL_HRV[dimension], measured, atol=0.03), (
            f"{dimension}: TYPICAL_HRV says {TYPICAL_HRV[dimension]}, the corpus measures {measured.round(3)}; "
            "the extractor's scale moved: update TYPICAL_HRV and recheck the built-in templates"
        )


@pytest.mark.parametrize("name", sorted(BUILTIN_TEMPLATES))
def test_every_template_value_lies_inside_real_prose_range(name: str, real_prose_quantiles) -> None:
    vector = BUILTIN_TEMPLATES[name].vector
    for dimension, (low, _, high) in real_prose_quantiles.items():
        assert low - 0.01 <= vector[dimension] <= high + 0.01, (dimension, vector[dimension], low, high)
