import json

import numpy as np
import pytest

from resonance_os.core.errors import ValidationError
from resonance_os.similarity.drift import AdaptiveDriftDetector, DriftDetector, DriftFeedback

TARGET = np.array([0.3, 0.6, 0.4, 0.6, 0.2, 0.1, 0.2, 0.85])
# The declining stream pushes valence and active voice down and metaphor up.
DRIFT_DIRECTION = np.array([0, -1, 0, 0, 0, 1, 0, -1], dtype=float)


def stream(n: int, degrade_from: int | None, seed: int = 0):
    rng = np.random.default_rng(seed)
    for t in range(n):
        shift = 0.0 if degrade_from is None else max(0, t - degrade_from) * 0.02
        yield np.clip(TARGET + rng.normal(0, 0.03, 8) + shift * DRIFT_DIRECTION, 0, 1)


def run(detector, n=40, degrade_from=None, seed=0):
    return [detector.add_measurement(c, TARGET) for c in stream(n, degrade_from, seed)]


def test_stable_stream_raises_no_alarm():
    detector = DriftDetector(window_size=10)
    analyses = run(detector)
    assert not any(a.drift_detected for a in analyses)
    assert {a.severity for a in analyses} == {"none"}
    assert analyses[-1].direction == "stable"
    assert analyses[-1].recommendation.startswith("No drift")
    assert detector.get_statistics()["drift_events"] == 0


def test_declining_stream_is_detected_with_direction_dimensions_and_severity():
    detector = DriftDetector(window_size=10, drift_threshold=0.05)
    analyses = run(detector, degrade_from=15)
    assert not any(a.drift_detected for a in analyses[:15])
    first = next(i for i, a in enumerate(analyses) if a.drift_detected)
    assert 15 < first < 40
    last = analyses[-1]
    assert last.drift_detected and last.direction == "declining" and last.drift_rate < 0
    assert last.severity in {"medium", "high"}
    assert last.drift == pytest.approx(last.baseline_similarity - last.recent_similarity)
    assert set(last.affected_dimensions) == {
        "emotional_valence",
        "metaphor_density",
        "active_voice_ratio",
    }
    assert last.affected_dimensions["metaphor_density"] > 0  # above target
    assert last.affected_dimensions["emotional_valence"] < 0  # below target
    assert "raise emotional_valence" in last.recommendation
    assert "lower metaphor_density" in last.recommendation
    severities = [a.severity for a in analyses]
    order = ["none", "low", "medium", "high"]
    assert [order.index(s) for s in severities] == sorted(order.index(s) for s in severities)


def test_calibration_until_window_is_full():
    detector = DriftDetector(window_size=5)
    analyses = run(detector, n=6)
    assert [a.calibrating for a in analyses] == [True] * 4 + [False] * 2
    assert analyses[0].recommendation.startswith("Calibrating")


def test_prediction_extrapolates_the_trend():
    scaled = [np.full(8, s) for s in (1.0, 0.9, 0.8, 0.7, 0.6)]  # manhattan 1.0, 0.9, ..., 0.6
    detector = DriftDetector(window_size=5, similarity_method="manhattan")
    for current in scaled:
        detector.add_measurement(current, np.ones(8))
    prediction = detector.predict(steps_ahead=2)
    assert prediction.slope == pytest.approx(-0.1)
    assert prediction.predicted_similarity == pytest.approx(0.4)
    assert prediction.drift_expected
    assert detector.predict(steps_ahead=100).predicted_similarity == 0.0  # clipped to [0, 1]
    cosine = DriftDetector(window_size=5)  # cosine ignores scale: the same stream is flat
    for current in scaled:
        cosine.add_measurement(current, np.ones(8))
    assert cosine.predict(3).predicted_similarity == pytest.approx(1.0)
    assert not cosine.predict(3).drift_expected
    with pytest.raises(ValidationError, match="no measurements"):
        DriftDetector().predict()


def test_trend_statistics_and_export_are_json_ready():
    detector = DriftDetector(window_size=10)
    run(detector, degrade_from=15)
    trend = detector.get_trend()
    assert trend["direction"] == "declining" and trend["measurements"] == 10
    stats = detector.get_statistics()
    assert stats["measurements"] == 40
    assert stats["drift_events"] == sum(stats["severity_counts"].values()) - stats["severity_counts"]["none"]
    exported = json.loads(json.dumps(detector.export()))
    assert len(exported["history"]) == 40
    assert exported["config"]["similarity_method"] == "cosine"


def test_reset_baseline_accepts_the_new_level():
    detector = DriftDetector(window_size=10)
    analyses = run(detector, n=40, degrade_from=0)
    assert analyses[-1].drift_detected
    detector.reset_baseline()
    shifted = np.clip(TARGET + 0.8 * DRIFT_DIRECTION, 0, 1)
    after = [detector.add_measurement(shifted, TARGET) for _ in range(12)]
    assert after[0].calibrating and after[0].step == 41
    assert not after[-1].drift_detected and after[-1].direction == "stable"
    assert detector.get_statistics()["measurements"] == 52


def test_constructor_validation():
    with pytest.raises(ValidationError, match="window_size"):
        DriftDetector(window_size=1)
    with pytest.raises(ValidationError, match="drift_threshold"):
        DriftDetector(drift_threshold=0.0)
    with pytest.raises(ValidationError, match="similarity method"):
        DriftDetector(similarity_method="hamming")


def test_adaptive_threshold_moves_with_feedback_within_bounds():
    detector = AdaptiveDriftDetector(drift_threshold=0.05, min_threshold=0.02, max_threshold=0.08)
    assert detector.add_feedback(DriftFeedback.FALSE_POSITIVE) == pytest.approx(0.055)
    assert detector.add_feedback("correct") == pytest.approx(0.055)
    assert detector.add_feedback("missed_drift") == pytest.approx(0.0495)
    for _ in range(50):
        detector.add_feedback("false_positive")
    assert detector.drift_threshold == 0.08
    for _ in range(50):
        detector.add_feedback("missed_drift")
    assert detector.drift_threshold == 0.02
    exported = detector.export()["adaptive"]
    assert exported["feedback_counts"] == {"false_positive": 51, "missed_drift": 51, "correct": 1}
    assert len(exported["threshold_history"]) == 104
    with pytest.raises(ValidationError, match="false_positive"):
        detector.add_feedback("meh")


def test_adaptive_threshold_changes_what_is_flagged():
    """After false-positive feedback a mild dip no longer alarms; after missed-drift it does."""

    M = "manhattan"  # the dip lowers similarity by 3 * 0.12 / 8 = 0.045

    def mild_dip(detector):
        for _ in range(10):
            detector.add_measurement(TARGET, TARGET)
        dipped = np.clip(TARGET + 0.12 * DRIFT_DIRECTION, 0, 1)
        return [detector.add_measurement(dipped, TARGET) for _ in range(10)][-1]

    base = mild_dip(AdaptiveDriftDetector(drift_threshold=0.02, similarity_method=M))
    assert base.drift_detected
    tolerant = AdaptiveDriftDetector(drift_threshold=0.02, adaptation_rate=0.5, similarity_method=M)
    for _ in range(3):
        tolerant.add_feedback("false_positive")
    assert tolerant.drift_threshold > base.drift
    assert not mild_dip(tolerant).drift_detected
    sensitive = AdaptiveDriftDetector(
        drift_threshold=0.2, min_threshold=0.01, adaptation_rate=0.5, similarity_method=M
    )
    assert not mild_dip(AdaptiveDriftDetector(drift_threshold=0.2, similarity_method=M)).drift_detected
    for _ in range(4):
        sensitive.add_feedback("missed_drift")
    assert mild_dip(sensitive).drift_detected


def test_memory_is_bounded_but_statistics_cover_everything():
    detector = DriftDetector(window_size=5, history_size=7)
    analyses = run(detector, n=30)
    exported = detector.export()
    assert [a["step"] for a in exported["history"]] == list(range(24, 31))
    stats = detector.get_statistics()
    sims = [a.current_similarity for a in analyses]
    assert stats["measurements"] == 30
    assert stats["mean_similarity"] == pytest.approx(np.mean(sims))
    assert stats["std_similarity"] == pytest.approx(np.std(sims))
    assert stats["min_similarity"] == min(sims) and stats["max_similarity"] == max(sims)
