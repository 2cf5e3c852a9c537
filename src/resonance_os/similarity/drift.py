"""Drift detection: watch the similarity of a stream of HRVs to their target and flag a decline.

Definitions (``s_t`` is the similarity of measurement t to its target, ``w`` the window size):

- **baseline**: mean of ``s`` over the first ``w`` measurements after start or
  :meth:`DriftDetector.reset_baseline`; while fewer exist, the mean of those so far (calibrating).
- **recent**: mean of ``s`` over the last ``w`` measurements.
- **drift** = baseline - recent (positive = the stream got worse). Drift is *detected* when
  ``drift >= drift_threshold``.
- **drift rate**: least-squares slope of ``s`` over the last ``w`` measurements, per measurement.
- **direction**: "declining" / "improving" when the slope moves similarity by at least half the
  threshold across the window (``|slope| * (w - 1) >= drift_threshold / 2``), else "stable".
- **severity** from ``drift / drift_threshold``: none (< 1), low (< 2), medium (< 4), high (>= 4); the
  strings the original ResonanceOS guide compares against (``analysis.severity == "high"``).
- **affected dimensions**: dimensions whose mean gap ``|current - target|`` over the recent window
  grew by at least ``drift_threshold`` over the same gap in the baseline window.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from enum import Enum

import numpy as np

from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_constants import DEFAULT_DRIFT_THRESHOLD, HRV_DIMENSIONS
from resonance_os.core.hrv_types import validate_hrv
from resonance_os.similarity.metrics import (
    HRVLike,
    SimilarityMethod,
    normalise_weights,
    resolve_method,
    similarity_scores,
)

SEVERITY_LEVELS: tuple[tuple[float, str], ...] = (
    (1.0, "none"),
    (2.0, "low"),
    (4.0, "medium"),
    (math.inf, "high"),
)
"""``(upper bound of drift / drift_threshold, severity)``, checked in order."""


@dataclass(frozen=True)
class DriftAnalysis:
    """What one measurement says about drift (all similarities in [0, 1]).

    ``affected_dimensions`` maps each affected dimension to its signed recent gap
    ``mean(current - target)`` (negative: below target, raise it).
    """

    step: int
    current_similarity: float
    recent_similarity: float
    baseline_similarity: float
    drift: float
    drift_rate: float
    direction: str
    drift_detected: bool
    severity: str
    affected_dimensions: dict[str, float]
    calibrating: bool
    recommendation: str

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @property
    def drift_direction(self) -> str:
        """The original ResonanceOS's name for :attr:`direction`."""
        return self.direction


@dataclass(frozen=True)
class DriftPrediction:
    """Linear extrapolation of similarity ``steps_ahead`` measurements ahead (clipped to [0, 1])."""

    steps_ahead: int
    predicted_similarity: float
    slope: float
    predicted_drift: float
    drift_expected: bool


class DriftDetector:
    """Track similarity to a target over a stream of HRVs and report drift.

    Memory is bounded for endless streams (e.g. an RL reward loop): the windows hold ``window_size``
    measurements, statistics are running sums, and only the last ``history_size`` analyses are kept
    for :meth:`export`.

    Args:
        window_size: measurements in the baseline and in the recent window (>= 2, default 10).
        drift_threshold: drop of the recent mean below the baseline that counts as drift (default
            0.05, in similarity units).
        similarity_method: how each measurement is scored against its target (default COSINE).
        weights: optional per-dimension weights for the similarity.
        history_size: analyses kept for ``export()`` (default 1000).
    """

    def __init__(
        self,
        window_size: int = 10,
        drift_threshold: float = DEFAULT_DRIFT_THRESHOLD,
        similarity_method: SimilarityMethod | str = SimilarityMethod.COSINE,
        weights: Mapping[str, float] | None = None,
        history_size: int = 1000,
    ) -> None:
        for name, value, low in (("window_size", window_size, 2), ("history_size", history_size, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValidationError(f"{name} must be an integer >= {low}, got {value!r}")
        if not (isinstance(drift_threshold, (int, float)) and 0.0 < drift_threshold < 1.0):
            raise ValidationError(f"drift_threshold must be in (0, 1), got {drift_threshold!r}")
        self.similarity_method = resolve_method(similarity_method)
        self.window_size = window_size
        self.drift_threshold = float(drift_threshold)
        self._weights = normalise_weights(weights)
        # (similarity, signed gap current - target) of the baseline and of the recent window
        self._baseline: list[tuple[float, np.ndarray]] = []
        self._recent: deque[tuple[float, np.ndarray]] = deque(maxlen=window_size)
        self._history: deque[DriftAnalysis] = deque(maxlen=history_size)
        # running statistics over every measurement (Welford's mean and variance)
        self._count = 0
        self._mean = 0.0
        self._m2 = 0.0
        self._min = math.inf
        self._max = -math.inf
        self._severity_counts = {name: 0 for _, name in SEVERITY_LEVELS}
        self._abs_rate_sum = 0.0
        self._last_target: np.ndarray | None = None

    # -- measurements ------------------------------------------------------------------------

    def add_measurement(self, current: HRVLike, target: HRVLike) -> DriftAnalysis:
        """Score ``current`` against ``target``, update the windows and analyse drift."""
        c = np.asarray(validate_hrv(current, what="current"))
        t = np.asarray(validate_hrv(target, what="target"))
        similarity = float(similarity_scores(c, t, self.similarity_method, self._weights))
        entry = (similarity, c - t)
        if len(self._baseline) < self.window_size:
            self._baseline.append(entry)
        self._recent.append(entry)
        self._count += 1
        delta = similarity - self._mean
        self._mean += delta / self._count
        self._m2 += delta * (similarity - self._mean)
        self._min = min(self._min, similarity)
        self._max = max(self._max, similarity)
        self._last_target = t
        analysis = self._analyse(similarity)
        self._severity_counts[analysis.severity] += 1
        self._abs_rate_sum += abs(analysis.drift_rate)
        self._history.append(analysis)
        return analysis

    @property
    def calibrating(self) -> bool:
        """True until a full window of measurements has been seen since the baseline (re)set."""
        return len(self._baseline) < self.window_size

    @property
    def baseline_similarity(self) -> float | None:
        """Mean similarity of the baseline window (None before its first measurement)."""
        if not self._baseline:
            return None
        return float(np.mean([s for s, _ in self._baseline]))

    def _recent_values(self) -> list[float]:
        return [s for s, _ in self._recent]

    @staticmethod
    def _line(values: list[float]) -> tuple[float, float]:
        """Least-squares ``(slope, intercept)`` of ``values`` against 0, 1, ...; flat for one value."""
        if len(values) < 2:
            return 0.0, float(values[0]) if values else 0.0
        slope, intercept = np.polyfit(np.arange(len(values), dtype=np.float64), np.asarray(values), 1)
        return float(slope), float(intercept)

    @classmethod
    def _slope(cls, values: list[float]) -> float:
        return cls._line(values)[0]

    def _direction(self, slope: float) -> str:
        change = slope * (self.window_size - 1)
        if change <= -self.drift_threshold / 2:
            return "declining"
        if change >= self.drift_threshold / 2:
            return "improving"
        return "stable"

    def _severity(self, drift: float) -> str:
        ratio = drift / self.drift_threshold
        return next(name for bound, name in SEVERITY_LEVELS if ratio < bound)

    def _affected(self) -> dict[str, float]:
        recent = np.array([g for _, g in self._recent])
        base = np.array([g for _, g in self._baseline])
        growth = np.abs(recent).mean(axis=0) - np.abs(base).mean(axis=0)
        signed = recent.mean(axis=0)
        order = np.argsort(-growth, kind="stable")
        return {HRV_DIMENSIONS[i]: float(signed[i]) for i in order if growth[i] >= self.drift_threshold}

    def _analyse(self, similarity: float) -> DriftAnalysis:
        recent_values = self._recent_values()
        baseline = self.baseline_similarity
        assert baseline is not None
        recent = float(np.mean(recent_values))
        drift = baseline - recent
        rate = self._slope(recent_values)
        fields = {
            "step": self._count,
            "current_similarity": similarity,
            "recent_similarity": recent,
            "baseline_similarity": baseline,
            "drift": drift,
            "drift_rate": rate,
            "direction": self._direction(rate),
            "drift_detected": drift >= self.drift_threshold,
            "severity": self._severity(drift),
            "affected_dimensions": self._affected(),
            "calibrating": self.calibrating,
        }
        return DriftAnalysis(**fields, recommendation=_recommendation(fields, self.drift_threshold))

    # -- views -------------------------------------------------------------------------------

    def get_trend(self) -> dict[str, float | str | int]:
        """Slope, direction, mean and spread of similarity over the recent window."""
        values = self._recent_values()
        if not values:
            return {"measurements": 0, "slope": 0.0, "direction": "stable", "mean": 0.0, "std": 0.0}
        slope = self._slope(values)
        return {
            "measurements": len(values),
            "slope": slope,
            "direction": self._direction(slope),
            "mean": float(np.mean(values)),
            "std": float(np.std(values)),
        }

    def predict(self, steps_ahead: int = 5) -> DriftPrediction:
        """Extrapolate the recent window's least-squares line ``steps_ahead`` measurements ahead."""
        if isinstance(steps_ahead, bool) or not isinstance(steps_ahead, int) or steps_ahead < 1:
            raise ValidationError(f"steps_ahead must be a positive integer, got {steps_ahead!r}")
        values = self._recent_values()
        baseline = self.baseline_similarity
        if not values or baseline is None:
            raise ValidationError("no measurements yet; call add_measurement() before predict()")
        slope, intercept = self._line(values)
        predicted = min(max(intercept + slope * (len(values) - 1 + steps_ahead), 0.0), 1.0)
        predicted_drift = baseline - predicted
        return DriftPrediction(
            steps_ahead=steps_ahead,
            predicted_similarity=predicted,
            slope=slope,
            predicted_drift=predicted_drift,
            drift_expected=predicted_drift >= self.drift_threshold,
        )

    def get_statistics(self) -> dict[str, object]:
        """Counts and summary of every measurement so far (JSON-serialisable)."""
        seen = self._count > 0
        return {
            "measurements": self._count,
            "mean_similarity": self._mean if seen else None,
            "std_similarity": math.sqrt(self._m2 / self._count) if seen else None,
            "min_similarity": self._min if seen else None,
            "max_similarity": self._max if seen else None,
            "baseline_similarity": self.baseline_similarity,
            "drift_events": self._count - self._severity_counts["none"],
            "severity_counts": dict(self._severity_counts),
            "drift_threshold": self.drift_threshold,
        }

    def reset_baseline(self, new_baseline: HRVLike | None = None) -> None:
        """Start a new baseline from the next ``window_size`` measurements (after a target change
        or an accepted shift); statistics and history are kept.

        ``new_baseline`` (the original's argument) is an HRV that stands for the accepted state: it
        becomes the new baseline's first measurement, scored against the latest target.
        """
        seed = None
        if new_baseline is not None:
            if self._last_target is None:
                raise ValidationError(
                    "reset_baseline(new_baseline=...) scores the HRV against the latest target; "
                    "call add_measurement() first, or reset_baseline() without an HRV"
                )
            v = np.asarray(validate_hrv(new_baseline, what="new_baseline"))
            t = self._last_target
            seed = (float(similarity_scores(v, t, self.similarity_method, self._weights)), v - t)
        self._baseline.clear()
        self._recent.clear()
        if seed is not None:
            self._baseline.append(seed)
            self._recent.append(seed)

    def export(self) -> dict[str, object]:
        """Configuration, statistics, trend and the kept analyses as a JSON-serialisable dict."""
        return {
            "config": {
                "window_size": self.window_size,
                "drift_threshold": self.drift_threshold,
                "similarity_method": self.similarity_method.value,
                "weights": dict(zip(HRV_DIMENSIONS, self._weights.tolist())),
                "history_size": self._history.maxlen,
            },
            "statistics": self.get_statistics(),
            "trend": self.get_trend(),
            "history": [a.to_dict() for a in self._history],
        }

    # -- the original ResonanceOS's names (similarity systems guide) -----------------------------

    def get_drift_trend(self, lookback: int | None = None) -> dict[str, object]:
        """Trend of the last ``lookback`` similarities (default: the recent window) in the original's
        shape: ``trend`` ("improving", "declining", "stable"; "insufficient_data" below 2 values),
        ``similarities``, ``average``, ``variance`` (sample variance), ``slope``."""
        if lookback is not None and (
            isinstance(lookback, bool) or not isinstance(lookback, int) or lookback < 1
        ):
            raise ValidationError(f"lookback must be a positive integer, got {lookback!r}")
        values = self._recent_values()[-lookback:] if lookback else self._recent_values()
        slope = self._slope(values)
        return {
            "trend": self._direction(slope) if len(values) >= 2 else "insufficient_data",
            "similarities": values,
            "average": float(np.mean(values)) if values else 0.0,
            "variance": float(np.var(values, ddof=1)) if len(values) >= 2 else 0.0,
            "slope": slope,
        }

    def predict_drift(self, steps_ahead: int = 5) -> dict[str, object]:
        """:meth:`predict` in the original's shape: ``predicted_similarities`` for each of the next
        ``steps_ahead`` measurements (clipped to [0, 1]), ``confidence`` (R^2 of the line over the
        recent window), ``prediction`` ("trend_based", or "insufficient_data" below 3 measurements,
        with no predictions), ``trend_slope`` and ``drift_expected``."""
        if isinstance(steps_ahead, bool) or not isinstance(steps_ahead, int) or steps_ahead < 1:
            raise ValidationError(f"steps_ahead must be a positive integer, got {steps_ahead!r}")
        values = self._recent_values()
        if len(values) < 3:
            return {"prediction": "insufficient_data", "predicted_similarities": [], "confidence": 0.0}
        slope, intercept = self._line(values)
        x = np.arange(len(values) + steps_ahead, dtype=np.float64)
        line = intercept + slope * x
        y = np.asarray(values)
        total = float(((y - y.mean()) ** 2).sum())
        r2 = 1.0 - float(((y - line[: len(y)]) ** 2).sum()) / total if total > 0 else 0.0
        return {
            "prediction": "trend_based",
            "predicted_similarities": np.clip(line[len(y) :], 0.0, 1.0).tolist(),
            "confidence": max(0.0, r2),
            "trend_slope": slope,
            "drift_expected": self.predict(steps_ahead).drift_expected,
        }

    def get_drift_statistics(self) -> dict[str, object]:
        """:meth:`get_statistics` plus the original's keys: ``total_measurements``,
        ``average_drift_rate`` (mean |drift rate|), ``drift_episodes`` (measurements with drift
        detected) and ``drift_frequency`` (their share)."""
        stats = self.get_statistics()
        episodes = int(stats["drift_events"])
        return {
            **stats,
            "total_measurements": self._count,
            "average_drift_rate": self._abs_rate_sum / self._count if self._count else 0.0,
            "drift_episodes": episodes,
            "drift_frequency": episodes / self._count if self._count else 0.0,
        }

    def export_drift_data(self) -> dict[str, object]:
        """The original's name for :meth:`export`."""
        return self.export()


def _recommendation(a: Mapping[str, object], threshold: float) -> str:
    """The one-paragraph advice a person reads, from the fields of a :class:`DriftAnalysis`."""
    baseline, recent = a["baseline_similarity"], a["recent_similarity"]
    if not a["drift_detected"]:
        if a["calibrating"]:
            return (
                f"Calibrating: baseline similarity {baseline:.3f} from {a['step']} "
                "measurement(s) so far; no verdict until the window is full."
            )
        return (
            f"No drift: recent similarity {recent:.3f} is within {threshold:.3f} of the "
            f"baseline {baseline:.3f} (trend {a['direction']})."
        )
    fixes = [
        f"{'raise' if gap < 0 else 'lower'} {name} (recently {abs(gap):.2f} "
        f"{'below' if gap < 0 else 'above'} target)"
        for name, gap in list(a["affected_dimensions"].items())[:3]
    ]
    focus = "; ".join(fixes) if fixes else "no single dimension stands out; review the whole profile"
    return (
        f"{str(a['severity']).capitalize()} drift: recent similarity {recent:.3f} is "
        f"{a['drift']:.3f} below the baseline {baseline:.3f} (trend {a['direction']}). "
        f"Focus: {focus}. If the target changed on purpose, call reset_baseline()."
    )


class DriftFeedback(str, Enum):
    """A person's verdict on a drift alert (or on a silence)."""

    FALSE_POSITIVE = "false_positive"
    """An alert fired but nothing was wrong: the threshold rises (fewer alerts)."""
    MISSED_DRIFT = "missed_drift"
    """Real drift went unflagged: the threshold falls (more alerts)."""
    CORRECT = "correct"
    """The last verdict was right: the threshold stays."""


class AdaptiveDriftDetector(DriftDetector):
    """A :class:`DriftDetector` whose threshold learns from feedback, within bounds.

    Each FALSE_POSITIVE multiplies the threshold by ``1 + adaptation_rate``, each MISSED_DRIFT by
    ``1 - adaptation_rate``; the result is clipped to ``[min_threshold, max_threshold]``.

    Args:
        min_threshold, max_threshold: bounds of the threshold (default 0.01 and 0.25).
        adaptation_rate: relative step per feedback, in (0, 1) (default 0.1).
        Other arguments as :class:`DriftDetector`.
    """

    def __init__(
        self,
        window_size: int = 10,
        drift_threshold: float = DEFAULT_DRIFT_THRESHOLD,
        similarity_method: SimilarityMethod | str = SimilarityMethod.COSINE,
        weights: Mapping[str, float] | None = None,
        history_size: int = 1000,
        min_threshold: float = 0.01,
        max_threshold: float = 0.25,
        adaptation_rate: float = 0.1,
    ) -> None:
        super().__init__(window_size, drift_threshold, similarity_method, weights, history_size)
        if not 0.0 < min_threshold <= self.drift_threshold <= max_threshold < 1.0:
            raise ValidationError(
                f"need 0 < min_threshold <= drift_threshold <= max_threshold < 1, got "
                f"{min_threshold}, {self.drift_threshold}, {max_threshold}"
            )
        if not 0.0 < adaptation_rate < 1.0:
            raise ValidationError(f"adaptation_rate must be in (0, 1), got {adaptation_rate}")
        self.min_threshold = float(min_threshold)
        self.max_threshold = float(max_threshold)
        self.adaptation_rate = float(adaptation_rate)
        self.threshold_history: list[float] = [self.drift_threshold]
        self.feedback_counts: dict[str, int] = {f.value: 0 for f in DriftFeedback}

    def add_feedback(self, feedback: DriftFeedback | str) -> float:
        """Record a verdict and return the new threshold."""
        try:
            kind = DriftFeedback(feedback)
        except ValueError:
            names = ", ".join(f.value for f in DriftFeedback)
            raise ValidationError(f"unknown feedback {feedback!r}; use one of: {names}") from None
        factor = {
            DriftFeedback.FALSE_POSITIVE: 1.0 + self.adaptation_rate,
            DriftFeedback.MISSED_DRIFT: 1.0 - self.adaptation_rate,
            DriftFeedback.CORRECT: 1.0,
        }[kind]
        self.drift_threshold = float(
            np.clip(self.drift_threshold * factor, self.min_threshold, self.max_threshold)
        )
        self.feedback_counts[kind.value] += 1
        self.threshold_history.append(self.drift_threshold)
        return self.drift_threshold

    def update_threshold(self, performance_feedback: Mapping[str, object]) -> float:
        """The original's form of :meth:`add_feedback`: ``{"false_positive": True}`` raises the
        threshold, ``{"false_negative": True}`` lowers it, anything else counts as correct."""
        if not isinstance(performance_feedback, Mapping):
            raise ValidationError(
                "performance_feedback must be a dict such as {'false_positive': True} or {'false_negative': True}"
            )
        if performance_feedback.get("false_positive"):
            return self.add_feedback(DriftFeedback.FALSE_POSITIVE)
        if performance_feedback.get("false_negative"):
            return self.add_feedback(DriftFeedback.MISSED_DRIFT)
        return self.add_feedback(DriftFeedback.CORRECT)

    def get_adaptive_statistics(self) -> dict[str, float | int]:
        """The threshold and the feedback so far, in the original's shape."""
        original = self.threshold_history[0]
        return {
            "current_threshold": self.drift_threshold,
            "original_threshold": original,
            "threshold_adjustment": self.drift_threshold / original,
            "false_positives": self.feedback_counts[DriftFeedback.FALSE_POSITIVE.value],
            "false_negatives": self.feedback_counts[DriftFeedback.MISSED_DRIFT.value],
            "total_adjustments": len(self.threshold_history) - 1,
        }

    def export(self) -> dict[str, object]:
        data = super().export()
        data["adaptive"] = {
            "min_threshold": self.min_threshold,
            "max_threshold": self.max_threshold,
            "adaptation_rate": self.adaptation_rate,
            "threshold_history": list(self.threshold_history),
            "feedback_counts": dict(self.feedback_counts),
        }
        return data
