import math

import numpy as np
import pytest

from resonance_os.core import (
    DEFAULT_DRIFT_THRESHOLD,
    DEFAULT_RESONANCE_THRESHOLD,
    HRV_DIMENSIONS,
    HRVProfile,
    HRVVector,
    InvalidHRVError,
    ResonanceError,
    validate_hrv,
)
from resonance_os.core.hrv_constants import HRV_DESCRIPTIONS

GOOD = [0.1, 0.5, 0.2, 0.9, 0.3, 0.0, 1.0, 0.7]


def test_dimensions_are_the_documented_order():
    assert HRV_DIMENSIONS == [
        "sentence_variance",
        "emotional_valence",
        "emotional_intensity",
        "assertiveness_index",
        "curiosity_index",
        "metaphor_density",
        "storytelling_index",
        "active_voice_ratio",
    ]
    assert DEFAULT_RESONANCE_THRESHOLD == 0.92
    assert DEFAULT_DRIFT_THRESHOLD == 0.05
    assert set(HRV_DESCRIPTIONS) == set(HRV_DIMENSIONS)


def test_validate_accepts_sequences_arrays_and_mappings():
    assert validate_hrv(GOOD) == GOOD
    assert validate_hrv(np.array(GOOD)) == GOOD
    assert validate_hrv(dict(zip(HRV_DIMENSIONS, GOOD))) == GOOD


@pytest.mark.parametrize(
    ("values", "fragment"),
    [
        (GOOD[:7], "must have 8 values"),
        (GOOD + [0.5], "got 9"),
        ([*GOOD[:3], math.nan, *GOOD[4:]], "assertiveness_index is nan"),
        ([*GOOD[:2], math.inf, *GOOD[3:]], "emotional_intensity is inf"),
        ([*GOOD[:7], 1.5], "active_voice_ratio = 1.5 is outside [0, 1]"),
        ([-0.1, *GOOD[1:]], "sentence_variance = -0.1 is outside [0, 1]"),
        (["high", *GOOD[1:]], "sentence_variance must be a number"),
        ("0.1,0.2", "got the string"),
        ({"sentence_variance": 0.2}, "missing"),
    ],
)
def test_validate_rejects_bad_vectors_naming_the_dimension(values, fragment):
    with pytest.raises(InvalidHRVError) as info:
        validate_hrv(values)
    assert fragment in str(info.value)
    assert isinstance(info.value, ResonanceError)
    assert isinstance(info.value, ValueError)


def test_vector_access_by_name_and_index():
    vector = HRVVector(GOOD)
    assert vector["curiosity_index"] == 0.3
    assert vector[3] == 0.9
    assert vector.to_dict()["active_voice_ratio"] == 0.7
    assert vector.to_numpy().shape == (8,)
    assert list(vector) == GOOD
    with pytest.raises(InvalidHRVError):
        HRVVector([2.0] * 8)


def test_profile_validates_its_vector_and_has_a_key():
    profile = HRVProfile(name="brand", vector=GOOD, tenant="acme")
    assert isinstance(profile.vector, HRVVector)
    assert profile.key == "acme/brand"
    with pytest.raises(InvalidHRVError):
        HRVProfile(name="bad", vector=[0.5] * 7)
