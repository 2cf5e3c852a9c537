"""The original similarity systems guide's calls, rewritten: multi-method similarity and drift."""

import json

import pytest

from resonance_os.core.errors import ValidationError
from resonance_os.similarity.drift import AdaptiveDriftDetector, DriftDetector
from resonance_os.similarity.metrics import MultiMethodSimilarity, SimilarityCalculator, SimilarityMethod

VEC1 = [0.7, 0.6, 0.8, 0.5, 0.4, 0.3, 0.6, 0.7]
VEC2 = [0.6, 0.7, 0.7, 0.5, 0.5, 0.4, 0.5, 0.8]


def test_multi_method_similarity_with_a_weight_list():
    methods = [SimilarityMethod.COSINE, SimilarityMethod.EUCLIDEAN, SimilarityMethod.PEARSON]
    multi = MultiMethodSimilarity(methods, [0.4, 0.3, 0.3])
    results = multi.calculate_combined_similarity(VEC1, VEC2)
    calc = SimilarityCalculator()
    expected = {m.value: calc.calculate_similarity(VEC1, VEC2, m) for m in methods}
    assert results["individual"] == pytest.approx(expected)
    assert results["weights"] == pytest.approx({"cosine": 0.4, "euclidean": 0.3, "pearson": 0.3})
    assert results["combined"] == pytest.approx(
        0.4 * expected["cosine"] + 0.3 * expected["euclidean"] + 0.3 * expected["pearson"]
    )
    consensus = multi.get_method_consensus(VEC1, VEC2, threshold=0.92)
    meeting = sum(score >= 0.92 for score in expected.values())
    assert consensus["methods_meeting_threshold"] == meeting
    assert consensus["consensus_ratio"] == pytest.approx(meeting / 3)
    assert consensus["meets_threshold"] == (meeting >= 2)
    assert multi.get_method_consensus(VEC1, VEC1, threshold=0.92)["meets_threshold"]
    with pytest.raises(ValidationError, match="one weight per method"):
        MultiMethodSimilarity(methods, [0.5, 0.5])


def test_drift_detector_guide_loop_trend_prediction_statistics_and_export():
    detector = DriftDetector(window_size=10, drift_threshold=0.1)
    target = [0.7, 0.6, 0.8, 0.5, 0.4, 0.3, 0.6, 0.7]
    severities = []
    for i in range(20):
        current = [min(1.0, v + i * 0.01) for v in target]
        analysis = detector.add_measurement(current, target)
        severities.append(analysis.severity)
        assert analysis.drift_direction == analysis.direction
    assert set(severities) <= {"none", "low", "medium", "high"}

    trend = detector.get_drift_trend(lookback=5)
    assert trend["trend"] == "stable"  # cosine barely moves when every dimension rises together
    assert len(trend["similarities"]) == 5 and 0.0 <= trend["variance"] < 1e-3
    assert trend["average"] == pytest.approx(sum(trend["similarities"]) / 5)

    prediction = detector.predict_drift(steps_ahead=5)
    assert prediction["prediction"] == "trend_based"
    assert len(prediction["predicted_similarities"]) == 5
    assert 0.0 <= prediction["confidence"] <= 1.0

    stats = detector.get_drift_statistics()
    assert stats["total_measurements"] == 20
    assert stats["drift_frequency"] == pytest.approx(stats["drift_episodes"] / 20)
    assert stats["average_drift_rate"] >= 0.0

    detector.reset_baseline(new_baseline=target)
    assert detector.baseline_similarity == pytest.approx(1.0)  # the target itself is the new baseline
    json.dumps(detector.export_drift_data())


def test_severity_high_flags_a_collapse_and_a_short_stream_has_no_prediction():
    detector = DriftDetector(window_size=5, drift_threshold=0.05)
    target = [0.9, 0.1, 0.9, 0.1, 0.9, 0.1, 0.9, 0.1]
    assert detector.predict_drift()["prediction"] == "insufficient_data"
    for _ in range(5):
        detector.add_measurement(target, target)
    for _ in range(3):
        analysis = detector.add_measurement([0.1, 0.9, 0.1, 0.9, 0.1, 0.9, 0.1, 0.9], target)
    assert analysis.severity == "high" and analysis.drift_direction == "declining"
    with pytest.raises(ValidationError, match="add_measurement"):
        DriftDetector().reset_baseline(new_baseline=target)


def test_adaptive_detector_feedback_dicts():
    adaptive = AdaptiveDriftDetector(window_size=10)
    start = adaptive.drift_threshold
    adaptive.update_threshold({"false_positive": False, "false_negative": True})
    stats = adaptive.get_adaptive_statistics()
    assert stats["current_threshold"] == pytest.approx(start * 0.9)
    assert stats["original_threshold"] == start
    assert (stats["false_positives"], stats["false_negatives"], stats["total_adjustments"]) == (0, 1, 1)
    adaptive.update_threshold({"false_positive": True})
    assert adaptive.get_adaptive_statistics()["current_threshold"] == pytest.approx(start * 0.9 * 1.1)
