import math

import numpy as np
import pytest
from scipy import stats

from resonance_os.core.errors import InvalidHRVError, ValidationError
from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.core.hrv_types import HRVVector
from resonance_os.similarity.metrics import (
    MultiMethodSimilarity,
    SimilarityCalculator,
    SimilarityMethod,
)

A = [0.1, 0.5, 0.3, 0.7, 0.2, 0.9, 0.4, 0.6]
B = [0.2, 0.4, 0.3, 0.6, 0.1, 0.8, 0.5, 0.7]
ALL = list(SimilarityMethod)


@pytest.fixture
def calc() -> SimilarityCalculator:
    return SimilarityCalculator()


def test_known_values(calc):
    a, b = np.array(A), np.array(B)
    d = a - b
    expected = {
        SimilarityMethod.COSINE: a @ b / (np.linalg.norm(a) * np.linalg.norm(b)),
        SimilarityMethod.EUCLIDEAN: 1 - np.linalg.norm(d) / math.sqrt(8),
        SimilarityMethod.MANHATTAN: 1 - np.abs(d).sum() / 8,
        SimilarityMethod.PEARSON: (stats.pearsonr(a, b)[0] + 1) / 2,
        SimilarityMethod.SPEARMAN: (stats.spearmanr(a, b)[0] + 1) / 2,
    }
    for method, value in expected.items():
        assert calc.calculate_similarity(A, B, method) == pytest.approx(value, abs=1e-12), method


def test_spearman_ties_use_average_ranks(calc):
    a = [0.2, 0.2, 0.5, 0.5, 0.5, 0.9, 0.1, 0.0]
    b = [0.3, 0.1, 0.4, 0.4, 0.6, 0.6, 0.0, 0.2]
    rho = stats.spearmanr(a, b)[0]
    assert calc.calculate_similarity(a, b, "spearman") == pytest.approx((rho + 1) / 2, abs=1e-12)


def test_anticorrelated_vectors_score_zero_for_correlations(calc):
    up = [i / 7 for i in range(8)]
    down = up[::-1]
    assert calc.calculate_similarity(up, down, "pearson") == pytest.approx(0.0, abs=1e-12)
    assert calc.calculate_similarity(up, down, "spearman") == pytest.approx(0.0, abs=1e-12)


def test_opposite_corners_of_the_cube_score_zero(calc):
    zeros, ones = [0.0] * 8, [1.0] * 8
    assert calc.calculate_similarity(zeros, ones, "euclidean") == 0.0
    assert calc.calculate_similarity(zeros, ones, "manhattan") == 0.0


@pytest.mark.parametrize("method", ALL)
def test_identical_symmetric_and_bounded(calc, method):
    rng = np.random.default_rng(0)
    for _ in range(200):
        u, v = rng.random(8), rng.random(8)
        s = calc.calculate_similarity(u, v, method)
        assert 0.0 <= s <= 1.0
        assert s == pytest.approx(calc.calculate_similarity(v, u, method), abs=1e-12)
        assert calc.calculate_similarity(u, u, method) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("method", ALL)
def test_constant_and_zero_vectors_are_defined(calc, method):
    flat_a, flat_b, zero = [0.3] * 8, [0.8] * 8, [0.0] * 8
    for u, v in [(flat_a, flat_b), (flat_a, A), (zero, zero), (zero, A), (zero, flat_a)]:
        s = calc.calculate_similarity(u, v, method)
        assert not math.isnan(s) and 0.0 <= s <= 1.0
    assert calc.calculate_similarity(zero, zero, method) == 1.0


def test_documented_conventions_for_degenerate_vectors(calc):
    flat_a, flat_b, zero = [0.3] * 8, [0.8] * 8, [0.0] * 8
    for method in ("pearson", "spearman"):
        assert calc.calculate_similarity(flat_a, flat_b, method) == 1.0  # same (flat) shape
        assert calc.calculate_similarity(flat_a, A, method) == 0.5  # no linear relation
    assert calc.calculate_similarity(zero, A, "cosine") == 0.0
    assert calc.calculate_similarity(flat_a, flat_b, "cosine") == pytest.approx(1.0)


def test_weights_change_the_score_as_documented(calc):
    target = [0.5] * 8
    off_in_valence = [0.5, 0.9, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    plain = calc.calculate_similarity(off_in_valence, target, "manhattan")
    assert plain == pytest.approx(1 - 0.4 / 8)
    heavy = calc.calculate_similarity(off_in_valence, target, "manhattan", weights={"emotional_valence": 9.0})
    assert heavy == pytest.approx(1 - 0.4 * 9 / 16)  # weights 9 + 7 * 1 = 16
    ignored = calc.calculate_similarity(
        off_in_valence, target, "euclidean", weights={"emotional_valence": 0.0}
    )
    assert ignored == 1.0


def test_bad_weights_are_rejected_with_names(calc):
    with pytest.raises(ValidationError, match="emotional_valance"):
        calc.calculate_similarity(A, B, weights={"emotional_valance": 2.0})
    with pytest.raises(ValidationError, match="curiosity_index"):
        calc.calculate_similarity(A, B, weights={"curiosity_index": -1.0})
    with pytest.raises(ValidationError, match="all zero"):
        calc.calculate_similarity(A, B, weights=dict.fromkeys(HRV_DIMENSIONS, 0.0))


def test_inputs_are_validated(calc):
    with pytest.raises(InvalidHRVError, match="8 values"):
        calc.calculate_similarity(A[:7], B)
    with pytest.raises(InvalidHRVError, match="metaphor_density"):
        calc.calculate_similarity(A, [0.1, 0.1, 0.1, 0.1, 0.1, 1.5, 0.1, 0.1])
    with pytest.raises(InvalidHRVError, match="nan"):
        calc.calculate_similarity([float("nan")] * 8, B)
    with pytest.raises(ValidationError, match="cosine, euclidean"):
        calc.calculate_similarity(A, B, method="jaccard")


def test_accepts_hrv_vector_mapping_and_default_method():
    calc = SimilarityCalculator(default_method=SimilarityMethod.MANHATTAN)
    as_map = dict(zip(HRV_DIMENSIONS, B))
    assert calc.calculate_similarity(HRVVector(A), as_map) == pytest.approx(0.9125)


@pytest.mark.parametrize("method", ALL)
def test_batch_matches_single_calls(calc, method):
    rng = np.random.default_rng(1)
    target = rng.random(8)
    rows = rng.random((30, 8))
    rows[3] = 0.4  # a constant row
    batch = calc.calculate_batch_similarity(target, rows, method)
    assert batch.shape == (30,)
    single = [calc.calculate_similarity(r, target, method) for r in rows]
    np.testing.assert_allclose(batch, single, atol=1e-12)


def test_find_most_similar(calc):
    target = [0.5] * 8
    candidates = {
        "far": [0.0] * 8,
        "close": [0.55] * 8,
        "exact": [0.5] * 8,
        "medium": [0.7] * 8,
    }
    top = calc.find_most_similar(target, candidates, top_k=3, method="euclidean")
    assert [k for k, _ in top] == ["exact", "close", "medium"]
    assert top[0][1] == 1.0 and top[1][1] > top[2][1]
    by_index = calc.find_most_similar(target, list(candidates.values()), top_k=1, method="euclidean")
    assert by_index == [(2, 1.0)]
    assert calc.find_most_similar(target, [], top_k=2) == []
    with pytest.raises(ValidationError, match="top_k"):
        calc.find_most_similar(target, candidates, top_k=0)


def test_dimension_contributions_point_at_the_gap(calc):
    target = [0.5] * 8
    current = [0.5, 0.5, 0.5, 0.5, 0.1, 0.5, 0.5, 0.3]  # curiosity 0.4 off, active voice 0.2 off
    contrib = calc.calculate_dimension_contributions(current, target, "manhattan")
    assert list(contrib) == HRV_DIMENSIONS
    assert contrib["curiosity_index"] == pytest.approx(0.4 / 8)
    assert contrib["active_voice_ratio"] == pytest.approx(0.2 / 8)
    assert max(contrib, key=contrib.get) == "curiosity_index"
    assert all(v == 0.0 for k, v in contrib.items() if k not in ("curiosity_index", "active_voice_ratio"))
    same = calc.calculate_dimension_contributions(target, target, "cosine")
    assert all(v == pytest.approx(0.0, abs=1e-12) for v in same.values())


def test_multi_method_combined_and_consensus():
    multi = MultiMethodSimilarity()
    result = multi.compare(A, B)
    calc = SimilarityCalculator()
    for method in ALL:
        assert result.scores[method.value] == pytest.approx(calc.calculate_similarity(A, B, method))
    assert result.combined == pytest.approx(np.mean(list(result.scores.values())))
    # cosine 0.984, pearson 0.964, spearman 0.964 pass 0.92; euclidean 0.906, manhattan 0.913 do not
    assert result.votes == 3 and result.required_votes == 3
    assert result.consensus and result.agreement == pytest.approx(0.6)
    strict = MultiMethodSimilarity(quorum=1.0).compare(A, B)
    assert not strict.consensus and strict.required_votes == 5
    identical = multi.compare(A, A)
    assert identical.combined == pytest.approx(1.0) and identical.agreement == 1.0
    assert identical.resonant
    assert set(identical.to_dict()) >= {"scores", "combined", "consensus", "resonant"}


def test_multi_method_weights_and_validation():
    only_cosine = MultiMethodSimilarity(
        methods=["cosine", "euclidean"], method_weights={"cosine": 1.0, "euclidean": 0.0}
    )
    assert only_cosine.compare(A, B).combined == pytest.approx(
        SimilarityCalculator().calculate_similarity(A, B, "cosine")
    )
    with pytest.raises(ValidationError, match="pearson"):
        MultiMethodSimilarity(methods=["cosine"], method_weights={"pearson": 1.0})
    with pytest.raises(ValidationError, match="threshold"):
        MultiMethodSimilarity(threshold=1.5)


def test_batch_validates_every_row(calc):
    rows = np.full((5, 8), 0.5)
    rows[3, 6] = np.nan
    with pytest.raises(InvalidHRVError, match=r"vectors\[3\] storytelling_index"):
        calc.calculate_batch_similarity(A, rows)
    rows[3, 6] = 1.2
    with pytest.raises(InvalidHRVError, match=r"vectors\[3\] storytelling_index = 1.2"):
        calc.calculate_batch_similarity(A, rows)
    with pytest.raises(InvalidHRVError, match="8 values"):
        calc.calculate_batch_similarity(A, np.full((2, 7), 0.5))
