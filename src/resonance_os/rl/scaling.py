"""Sigmoidal compute curves of RL runs: fit, bootstrap intervals, extrapolation check (ScaleRL).

ScaleRL ("The Art of Scaling Reinforcement Learning Compute for LLMs", arXiv 2510.13786, Eq. 1) models a
bounded metric R (pass rate, mean return) against training compute C, past an early noisy regime, as

    R(C) = R0 + (A - R0) / (1 + (C_mid / C)^B)

    R0     the metric before training (the floor the curve leaves as C -> 0)
    A      the asymptote: the ceiling that more compute approaches
    B      the efficiency exponent: how steeply the gain arrives on a log-compute axis
    C_mid  the compute at which half of the gain A - R0 is reached

A recipe change that moves A moves the ceiling; one that moves B or C_mid only changes how fast the ceiling
is approached. For comparison a saturating power law, the pre-training form, is fitted to the same points:

    R(C) = A - D * C^(-alpha)

Fits are robust nonlinear least squares (``scipy.optimize.least_squares``, soft-L1 loss whose scale is the
curve's own noise) on the metric rescaled to its declared bounds, with A and R0 kept inside them, several
starting points, optionally a fixed R0 and a grid over A (the paper's procedure), per-point weights and an
early-compute prefix left out. Intervals come from the bootstrap: blocks of neighbouring points are
resampled with replacement (a moving-block bootstrap, since successive evaluations of a run share noise),
and when several runs (seeds) of one config are pooled, runs are resampled first, then blocks within them.
``fit_compute_curve`` does all of it and, given ``fit_fraction``, fits only the first part of the compute
and reports how well each model predicts the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import least_squares
from scipy.special import expit
from scipy.stats import spearmanr

from resonance_os.rl.errors import CurveFitError

PARAMETERS = ("R0", "A", "B", "C_mid")
LOSSES = ("soft_l1", "huber", "cauchy", "linear")
B_RANGE = (0.05, 10.0)
C_MID_SPAN = 1000.0  # C_mid may lie this factor below the smallest or above the largest fitted compute
EXTRA_POINTS = 2  # points a fit needs beyond its number of free parameters


@dataclass(frozen=True)
class ComputeCurve:
    """One run: a metric against the compute spent so far (any unit: GPU-hours, CPU-seconds, samples).

    Args:
        compute: non-negative compute at each measurement, shape (n,).
        metric: the metric measured there, shape (n,).
        weights: optional positive weight per point (e.g. evaluation episodes), shape (n,).
        label: the run's name in tables and plots.
    """

    compute: np.ndarray
    metric: np.ndarray
    weights: np.ndarray | None = None
    label: str = ""

    def __post_init__(self) -> None:
        compute = np.asarray(self.compute, dtype=float).ravel()
        metric = np.asarray(self.metric, dtype=float).ravel()
        name = f"run {self.label!r}" if self.label else "the run"
        if compute.shape != metric.shape:
            raise CurveFitError(
                f"{name} has {compute.size} compute values but {metric.size} metric values; give one of each per point"
            )
        if not (np.isfinite(compute).all() and np.isfinite(metric).all()):
            raise CurveFitError(f"{name} has non-finite compute or metric values; drop those rows")
        if (compute < 0).any():
            raise CurveFitError(
                f"{name} has negative compute ({compute.min():g}); compute is spent, never negative"
            )
        weights = None
        if self.weights is not None:
            weights = np.asarray(self.weights, dtype=float).ravel()
            if weights.shape != compute.shape or not np.isfinite(weights).all() or (weights <= 0).any():
                raise CurveFitError(f"{name} needs one positive, finite weight per point")
        object.__setattr__(self, "compute", compute)
        object.__setattr__(self, "metric", metric)
        object.__setattr__(self, "weights", weights)

    def select(self, mask: np.ndarray) -> ComputeCurve:
        """The points where ``mask`` is true."""
        weights = None if self.weights is None else self.weights[mask]
        return ComputeCurve(self.compute[mask], self.metric[mask], weights, self.label)


@dataclass(frozen=True)
class SigmoidCurve:
    """R(C) = R0 + (A - R0) / (1 + (C_mid / C)^B), evaluated with ``curve(compute)``."""

    r0: float
    a: float
    b: float
    c_mid: float

    def __call__(self, compute: ArrayLike) -> np.ndarray:
        return _sigmoid(np.asarray(compute, dtype=float), self.r0, self.a, self.b, np.log(self.c_mid))

    def as_dict(self) -> dict[str, float]:
        return {"R0": self.r0, "A": self.a, "B": self.b, "C_mid": self.c_mid}


@dataclass(frozen=True)
class PowerLawCurve:
    """R(C) = A - D * C^(-alpha), evaluated with ``curve(compute)`` (C > 0)."""

    a: float
    d: float
    alpha: float

    def __call__(self, compute: ArrayLike) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return self.a - self.d * np.asarray(compute, dtype=float) ** -self.alpha

    def as_dict(self) -> dict[str, float]:
        return {"A": self.a, "D": self.d, "alpha": self.alpha}


@dataclass(frozen=True)
class ScalingFit:
    """A fitted compute curve with bootstrap intervals; ``to_dict()`` is the CLI's ``--json`` object."""

    label: str
    curve: SigmoidCurve
    intervals: dict[str, tuple[float, float]]
    power_law: PowerLawCurve
    bootstrap_curves: tuple[SigmoidCurve, ...]
    fit_range: tuple[float, float]
    n_points: int
    n_runs: int
    bounds: tuple[float, float]
    confidence: float
    extrapolation_error: dict[str, float] | None = None
    held_out: dict[str, float] | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def band(self, compute: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Pointwise ``confidence`` band of the bootstrap curves at ``compute``: (low, high)."""
        predictions = np.stack([curve(compute) for curve in self.bootstrap_curves])
        tail = 50.0 * (1.0 - self.confidence)
        return np.percentile(predictions, tail, axis=0), np.percentile(predictions, 100.0 - tail, axis=0)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"label": self.label, "runs": self.n_runs, "points": self.n_points}
        out.update(self.curve.as_dict())
        out["intervals"] = {name: {"low": low, "high": high} for name, (low, high) in self.intervals.items()}
        out["confidence"] = self.confidence
        out["fit_range"] = list(self.fit_range)
        out["bounds"] = list(self.bounds)
        out["power_law"] = self.power_law.as_dict()
        if self.extrapolation_error is not None:
            out["extrapolation_error"] = dict(self.extrapolation_error)
            out["held_out"] = dict(self.held_out or {})
        out["warnings"] = list(self.warnings)
        return out


def fit_compute_curve(
    runs: ComputeCurve | Sequence[ComputeCurve],
    *,
    bounds: tuple[float, float] = (0.0, 1.0),
    r0: float | None = None,
    a_grid: Sequence[float] | None = None,
    exclude_below: float = 0.0,
    fit_fraction: float | None = None,
    loss: str = "soft_l1",
    n_bootstrap: int = 200,
    block_length: int | None = None,
    confidence: float = 0.95,
    seed: int = 0,
    label: str | None = None,
) -> ScalingFit:
    """Fit the sigmoid (and a power law) to one run, or to several runs (seeds) of one config pooled.

    Args:
        runs: one ``ComputeCurve`` or several of the same config (bootstrap then resamples runs).
        bounds: the metric's lowest and highest possible values; (0, 1) for pass rates.
        r0: fix R0 at this value (e.g. the measured pass rate before training); free when None.
        a_grid: fit with A fixed at each of these values and keep the best (the paper's grid search).
        exclude_below: leave out points at compute below this (the early, noisy regime).
        fit_fraction: fit only points up to this fraction of the largest compute and report the mean
            absolute error of both models on the rest (``extrapolation_error``).
        loss: ``least_squares`` loss: soft_l1 (default), huber, cauchy or linear.
        n_bootstrap: bootstrap refits for the intervals (0: no intervals, the point estimate twice).
        block_length: points per block of the moving-block bootstrap within a run; None picks it per
            run from the autocorrelation of the fit's residuals (at least sqrt(n)); 1 resamples points.
        confidence: two-sided level of the percentile intervals.
        seed: seed of the bootstrap resampling.
        label: name of the fit; defaults to the first run's label.
    """
    runs = [runs] if isinstance(runs, ComputeCurve) else list(runs)
    low, high = _check_settings(
        bounds, r0, a_grid, exclude_below, fit_fraction, loss, n_bootstrap, block_length, confidence
    )
    _check_runs(runs, low, high)
    name = label if label is not None else runs[0].label

    c_max = max(float(run.compute.max()) for run in runs)
    cutoff = c_max if fit_fraction is None else fit_fraction * c_max
    fitted, points = _fitted_points(runs, exclude_below, cutoff, 4 - (r0 is not None), name)

    scale = _Scale(low, high, float(points.compute.max()))
    fixed_r0 = None if r0 is None else scale.metric(r0)
    grid = None if a_grid is None else [scale.metric(a) for a in a_grid]
    theta, _ = _fit_sigmoid(scale, points, loss, fixed_r0, grid, starts=None)
    curve = scale.sigmoid(theta)
    power_law = scale.power_law(_fit_power_law(scale, points, loss))

    blocks = [block_length or _auto_block_length(run, curve) for run in fitted]
    samples, failures = _bootstrap(fitted, blocks, scale, loss, fixed_r0, grid, theta, n_bootstrap, seed)
    bootstrap_curves = tuple(samples) if samples else (curve,)
    intervals = _percentile_intervals(bootstrap_curves, confidence)

    extrapolation_error = held_out = None
    if fit_fraction is not None:
        extrapolation_error, held_out = _extrapolation(
            runs, exclude_below, cutoff, c_max, fit_fraction, {"sigmoid": curve, "power_law": power_law}
        )

    fit_range = (float(points.compute.min()), float(points.compute.max()))
    return ScalingFit(
        label=name,
        curve=curve,
        intervals=intervals,
        power_law=power_law,
        bootstrap_curves=bootstrap_curves,
        fit_range=fit_range,
        n_points=int(points.compute.size),
        n_runs=len(fitted),
        bounds=(low, high),
        confidence=confidence,
        extrapolation_error=extrapolation_error,
        held_out=held_out,
        warnings=_trust_warnings(curve, intervals, fit_range, (low, high), failures, n_bootstrap, r0),
    )


def _fitted_points(
    runs: list[ComputeCurve], exclude_below: float, cutoff: float, n_free: int, name: str
) -> tuple[list[ComputeCurve], ComputeCurve]:
    """The runs' points with compute in [exclude_below, cutoff] (runs left empty dropped), and those
    points pooled; refused when too few remain to fit ``n_free`` parameters."""
    fitted = [run.select((run.compute >= exclude_below) & (run.compute <= cutoff)) for run in runs]
    fitted = [run for run in fitted if run.compute.size]
    points = _pool(fitted) if fitted else ComputeCurve(np.empty(0), np.empty(0), label=name)
    _check_fittable(points, n_free, exclude_below, cutoff, name)
    return fitted, points


def _bootstrap(
    fitted: list[ComputeCurve],
    blocks: list[int],
    scale: _Scale,
    loss: str,
    fixed_r0: float | None,
    grid: list[float] | None,
    theta: np.ndarray,
    n_bootstrap: int,
    seed: int,
) -> tuple[list[SigmoidCurve], int]:
    """The sigmoids refitted on ``n_bootstrap`` moving-block resamples (started at ``theta``), and how
    many resamples had too few distinct compute values to fit."""
    rng = np.random.default_rng(seed)
    samples, failures = [], 0
    for _ in range(n_bootstrap):
        resampled = _resample(fitted, blocks, rng)
        if np.unique(resampled.compute).size < 3:
            failures += 1
            continue
        boot, _ = _fit_sigmoid(scale, resampled, loss, fixed_r0, grid, starts=[theta])
        samples.append(scale.sigmoid(boot))
    return samples, failures


def _extrapolation(
    runs: list[ComputeCurve],
    exclude_below: float,
    cutoff: float,
    c_max: float,
    fit_fraction: float,
    models: dict[str, SigmoidCurve | PowerLawCurve],
) -> tuple[dict[str, float], dict[str, Any]]:
    """Each model's mean absolute error on the points above ``cutoff`` (those the fit did not see),
    and what those points were."""
    rest = _pool([run.select((run.compute > cutoff) & (run.compute >= exclude_below)) for run in runs])
    if rest.compute.size == 0:
        raise CurveFitError(
            f"fit_fraction {fit_fraction} leaves no points above compute {cutoff:g} to predict; use a smaller fraction"
        )
    errors = {
        name: float(np.mean(np.abs(model(rest.compute) - rest.metric))) for name, model in models.items()
    }
    return errors, {"from_compute": cutoff, "to_compute": c_max, "points": int(rest.compute.size)}


# ----------------------------------------------------------------------------------------------- checks


def _check_settings(
    bounds: tuple[float, float],
    r0: float | None,
    a_grid: Sequence[float] | None,
    exclude_below: float,
    fit_fraction: float | None,
    loss: str,
    n_bootstrap: int,
    block_length: int | None,
    confidence: float,
) -> tuple[float, float]:
    low, high = (float(v) for v in bounds)
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise CurveFitError(
            f"bounds {bounds} must be two finite numbers, low < high (the metric's possible range)"
        )
    if r0 is not None and not low <= r0 <= high:
        raise CurveFitError(f"fixed R0 {r0} lies outside the metric's bounds [{low:g}, {high:g}]")
    if a_grid is not None and (len(a_grid) == 0 or any(not low <= a <= high for a in a_grid)):
        raise CurveFitError(
            f"the A grid must be non-empty and inside the metric's bounds [{low:g}, {high:g}]"
        )
    if not (np.isfinite(exclude_below) and exclude_below >= 0):
        raise CurveFitError(f"exclude_below {exclude_below} must be a non-negative compute")
    if fit_fraction is not None and not 0.0 < fit_fraction < 1.0:
        raise CurveFitError(f"fit_fraction {fit_fraction} must lie strictly between 0 and 1 (e.g. 0.5)")
    if loss not in LOSSES:
        raise CurveFitError(f"unknown loss {loss!r}; choose one of {', '.join(LOSSES)}")
    if block_length is not None and block_length < 1:
        raise CurveFitError(f"block_length {block_length} must be >= 1 (1 resamples single points)")
    if n_bootstrap < 0:
        raise CurveFitError(f"n_bootstrap {n_bootstrap} must be >= 0")
    if not 0.0 < confidence < 1.0:
        raise CurveFitError(f"confidence {confidence} must lie strictly between 0 and 1 (e.g. 0.95)")
    return low, high


def _check_runs(runs: list[ComputeCurve], low: float, high: float) -> None:
    if not runs:
        raise CurveFitError("no runs to fit; pass at least one run")
    for run in runs:
        if run.compute.size == 0:
            raise CurveFitError(f"run {run.label!r} has no points; check its metric and compute columns")
        _check_within_bounds(run, low, high)


def _check_within_bounds(run: ComputeCurve, low: float, high: float) -> None:
    if run.metric.size and (run.metric.min() < low or run.metric.max() > high):
        name = f"run {run.label!r}" if run.label else "the run"
        raise CurveFitError(
            f"{name}'s metric spans [{run.metric.min():g}, {run.metric.max():g}], outside the bounds "
            f"[{low:g}, {high:g}]; declare the metric's possible range (--bounds LOW HIGH), e.g. the lowest "
            "and highest return the task allows"
        )


def _check_fittable(
    points: ComputeCurve, n_free: int, exclude_below: float, cutoff: float, name: str
) -> None:
    who = f"run {name!r}" if name else "the run"
    needed = n_free + EXTRA_POINTS
    if points.compute.size < needed or np.unique(points.compute).size < 3:
        raise CurveFitError(
            f"{who} has {points.compute.size} points at compute in [{exclude_below:g}, {cutoff:g}] "
            f"({np.unique(points.compute).size} distinct); a fit of {n_free} parameters needs at least {needed} "
            "at 3 or more compute values: log more often, lower the exclusion or raise the fit fraction"
        )
    rho = spearmanr(points.compute, points.metric).statistic
    if not np.isfinite(rho) or rho <= 0:
        raise CurveFitError(
            f"{who}'s metric does not rise with compute (Spearman rho {rho:.2f} over {points.compute.size} points); "
            "a compute curve needs a metric that improves with training: pick a metric where higher is better, "
            "or a range where the run learns"
        )


def _trust_warnings(
    curve: SigmoidCurve,
    intervals: dict[str, tuple[float, float]],
    fit_range: tuple[float, float],
    bounds: tuple[float, float],
    failures: int,
    n_bootstrap: int,
    r0: float | None,
) -> tuple[str, ...]:
    notes = []
    if curve.c_mid > fit_range[1]:
        notes.append(
            f"C_mid {curve.c_mid:.4g} lies beyond the largest fitted compute {fit_range[1]:.4g}: the run has not "
            "reached half its gain, so A is an extrapolation; trust it only within its interval"
        )
    a_low, a_high = intervals["A"]
    gain = abs(curve.a - curve.r0)
    if a_high - a_low > 0.25 * gain:
        notes.append(
            f"A's interval [{a_low:.4g}, {a_high:.4g}] is wider than a quarter of the gain A - R0 ({gain:.4g}); "
            "the ceiling is not pinned down yet: fit more compute or more seeds"
        )
    if np.isclose(curve.a, bounds[1]) or np.isclose(curve.a, bounds[0]):
        notes.append(
            f"A {curve.a:.4g} sits at a declared bound: the metric's own limit, not the recipe, caps the curve "
            "(or the bounds are too tight)"
        )
    if np.isclose(curve.b, B_RANGE[0]) or np.isclose(curve.b, B_RANGE[1]):
        notes.append(
            f"B {curve.b:.4g} sits at its search bound {B_RANGE}; the curve's shape is not identified"
        )
    if r0 is None and (np.isclose(curve.r0, bounds[0]) or np.isclose(curve.r0, bounds[1])):
        notes.append(
            f"R0 {curve.r0:.4g} sits at a declared bound; consider fixing R0 at the untrained metric"
        )
    if n_bootstrap and failures > 0.1 * n_bootstrap:
        notes.append(
            f"{failures} of {n_bootstrap} bootstrap samples had too few distinct points and were skipped"
        )
    return tuple(notes)


# ----------------------------------------------------------------------------------------------- fitting


@dataclass(frozen=True)
class _Scale:
    """Fits run on the metric mapped to [0, 1] by its bounds and compute divided by the largest fitted."""

    low: float
    high: float
    c_ref: float

    def metric(self, value: Any) -> Any:
        return (np.asarray(value, dtype=float) - self.low) / (self.high - self.low)

    def sigmoid(self, theta: np.ndarray) -> SigmoidCurve:
        r0, a, b, log_c_mid = theta
        span = self.high - self.low
        return SigmoidCurve(
            float(self.low + span * r0),
            float(self.low + span * a),
            float(b),
            float(self.c_ref * np.exp(log_c_mid)),
        )

    def power_law(self, theta: np.ndarray) -> PowerLawCurve:
        a, log_d, alpha = theta
        span = self.high - self.low
        return PowerLawCurve(
            float(self.low + span * a), float(span * np.exp(log_d) * self.c_ref**alpha), float(alpha)
        )


def _sigmoid(x: np.ndarray, r0: float, a: float, b: float, log_c_mid: float) -> np.ndarray:
    with np.errstate(divide="ignore"):
        log_x = np.log(x)  # -inf at zero compute, where the curve equals R0
    return r0 + (a - r0) * expit(b * (log_x - log_c_mid))


def _sigmoid_jacobian(x: np.ndarray, r0: float, a: float, b: float, log_c_mid: float) -> np.ndarray:
    """d R / d (R0, A, B, log C_mid), shape (n, 4); zero compute contributes only to R0."""
    with np.errstate(divide="ignore"):
        log_x = np.log(x)
    s = expit(b * (log_x - log_c_mid))
    slope = np.where(x > 0, (a - r0) * s * (1.0 - s), 0.0)
    offset = np.where(x > 0, log_x - log_c_mid, 0.0)
    return np.column_stack([1.0 - s, s, slope * offset, -slope * b])


def _noise_scale(points: ComputeCurve, scale: _Scale) -> float:
    """Robust noise of the rescaled metric: MAD of successive differences along compute."""
    y = scale.metric(points.metric[np.argsort(points.compute, kind="stable")])
    if y.size < 3:
        return 0.01
    return max(1.4826 * float(np.median(np.abs(np.diff(y)))) / np.sqrt(2.0), 1e-3)


def _fit_sigmoid(
    scale: _Scale,
    points: ComputeCurve,
    loss: str,
    fixed_r0: float | None,
    a_grid: Sequence[float] | None,
    starts: list[np.ndarray] | None,
) -> tuple[np.ndarray, float]:
    """Best (theta, cost) over the starting points; theta = (R0, A, B, log C_mid) in rescaled units."""
    x = points.compute / scale.c_ref
    y = scale.metric(points.metric)
    root_w = np.ones_like(y) if points.weights is None else np.sqrt(points.weights / points.weights.mean())
    f_scale = _noise_scale(points, scale)
    positive = x[x > 0]
    log_c_range = (float(np.log(positive.min() / C_MID_SPAN)), float(np.log(positive.max() * C_MID_SPAN)))
    lower = np.array([0.0, 0.0, B_RANGE[0], log_c_range[0]])
    upper = np.array([1.0, 1.0, B_RANGE[1], log_c_range[1]])
    if starts is None:
        starts = _sigmoid_starts(x, y, fixed_r0)

    def solve(fixed: dict[int, float], candidates: list[np.ndarray]) -> tuple[np.ndarray, float]:
        free = np.array([i not in fixed for i in range(4)])

        def residuals(params: np.ndarray) -> np.ndarray:
            theta = _with_fixed(params, free, fixed)
            return root_w * (_sigmoid(x, *theta) - y)

        def jacobian(params: np.ndarray) -> np.ndarray:
            return root_w[:, None] * _sigmoid_jacobian(x, *_with_fixed(params, free, fixed))[:, free]

        best: tuple[np.ndarray, float] = (candidates[0], np.inf)
        for start in candidates:
            start_free = _interior(start[free], lower[free], upper[free])
            result = least_squares(
                residuals,
                start_free,
                jac=jacobian,
                bounds=(lower[free], upper[free]),
                loss=loss,
                f_scale=f_scale,
                method="trf",
            )
            if result.cost < best[1]:
                best = (_with_fixed(result.x, free, fixed), float(result.cost))
        return best

    base = {} if fixed_r0 is None else {0: fixed_r0}
    if a_grid is None:
        return solve(base, starts)
    best: tuple[np.ndarray, float] = (starts[0], np.inf)
    warm = list(starts)
    for a in a_grid:
        theta, cost = solve({**base, 1: a}, warm)
        warm = [theta]
        if cost < best[1]:
            best = (theta, cost)
    return best


def _sigmoid_starts(x: np.ndarray, y: np.ndarray, fixed_r0: float | None) -> list[np.ndarray]:
    order = np.argsort(x, kind="stable")
    k = max(3, y.size // 10)
    first, last = float(np.mean(y[order[:k]])), float(np.mean(y[order[-k:]]))
    r0 = first if fixed_r0 is None else fixed_r0
    top = max(last, r0)
    positive = x[x > 0]
    starts = []
    for a in (top + 0.05 * (1.0 - top), top + 0.5 * (1.0 - top)):
        for log_c in (np.log(np.median(positive)), 0.0, np.log(4.0)):
            for b in (1.0, 2.5):
                starts.append(np.array([r0, a, b, log_c]))
    return starts


def _fit_power_law(scale: _Scale, points: ComputeCurve, loss: str) -> np.ndarray:
    """Best theta = (A, log D, alpha) of R = A - D x^-alpha in rescaled units, fitted on compute > 0."""
    keep = points.compute > 0
    x = points.compute[keep] / scale.c_ref
    y = scale.metric(points.metric[keep])
    root_w = (
        np.ones_like(y)
        if points.weights is None
        else np.sqrt(points.weights[keep] / points.weights[keep].mean())
    )
    f_scale = _noise_scale(points, scale)
    lower, upper = np.array([0.0, -30.0, 1e-3]), np.array([1.0, 10.0, 5.0])

    def residuals(theta: np.ndarray) -> np.ndarray:
        a, log_d, alpha = theta
        return root_w * (a - np.exp(log_d) * x**-alpha - y)

    order = np.argsort(x, kind="stable")
    first_x, first_y, top = x[order[0]], float(np.mean(y[order[:3]])), float(np.mean(y[order[-3:]]))
    best_theta, best_cost = None, np.inf
    for a in (top + 0.05 * (1.0 - top), top + 0.5 * (1.0 - top)):
        for alpha in (0.3, 1.0):
            log_d = np.log(max(a - first_y, 1e-3)) + alpha * np.log(first_x)
            start = _interior(np.array([a, log_d, alpha]), lower, upper)
            result = least_squares(
                residuals, start, bounds=(lower, upper), loss=loss, f_scale=f_scale, method="trf"
            )
            if result.cost < best_cost:
                best_theta, best_cost = result.x, result.cost
    assert best_theta is not None
    return best_theta


def _with_fixed(params: np.ndarray, free: np.ndarray, fixed: dict[int, float]) -> np.ndarray:
    theta = np.empty(free.size)
    theta[free] = params
    for index, value in fixed.items():
        theta[index] = value
    return theta


def _interior(start: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    margin = 1e-6 * (upper - lower)
    return np.clip(start, lower + margin, upper - margin)


# ----------------------------------------------------------------------------------------------- bootstrap


def _pool(runs: Sequence[ComputeCurve]) -> ComputeCurve:
    weighted = any(run.weights is not None for run in runs)
    weights = (
        np.concatenate(
            [run.weights if run.weights is not None else np.ones(run.compute.size) for run in runs]
        )
        if weighted
        else None
    )
    label = runs[0].label if runs else ""
    return ComputeCurve(
        np.concatenate([run.compute for run in runs]),
        np.concatenate([run.metric for run in runs]),
        weights,
        label,
    )


def _resample(runs: Sequence[ComputeCurve], blocks: Sequence[int], rng: np.random.Generator) -> ComputeCurve:
    """Runs with replacement (when there are several), then blocks of neighbouring points within each."""
    chosen = rng.integers(0, len(runs), len(runs)) if len(runs) > 1 else np.zeros(1, dtype=int)
    return _pool([runs[i].select(_block_indices(runs[i], blocks[i], rng)) for i in chosen])


def _block_indices(run: ComputeCurve, block: int, rng: np.random.Generator) -> np.ndarray:
    """Moving-block bootstrap: contiguous blocks along compute keep the curve's autocorrelated noise."""
    n = run.compute.size
    block = min(n, block)
    order = np.argsort(run.compute, kind="stable")
    starts = rng.integers(0, n - block + 1, int(np.ceil(n / block)))
    return order[(starts[:, None] + np.arange(block)).ravel()[:n]]


def _auto_block_length(run: ComputeCurve, curve: SigmoidCurve) -> int:
    """sqrt(n), or the residuals' integrated autocorrelation time when longer, at most n / 3.

    The autocorrelation time 1 + 2 * sum(rho_k) sums the residuals' autocorrelations along compute
    while they stay positive: about how many neighbouring points carry one point's worth of noise. The
    floor sqrt(n) (rather than the textbook n^(1/3)) keeps slow drifts, which the fit partly absorbs and
    the residuals then hide, inside a block: on the paper's curves it lifts the intervals' coverage.
    """
    n = run.compute.size
    residuals = (run.metric - curve(run.compute))[np.argsort(run.compute, kind="stable")]
    residuals = residuals - residuals.mean()
    variance = float(np.dot(residuals, residuals))
    tau = 1.0
    if variance > 0:
        for lag in range(1, n // 3):
            rho = float(np.dot(residuals[:-lag], residuals[lag:])) / variance
            if rho <= 0:
                break
            tau += 2.0 * rho
    return int(max(1, min(max(n // 3, 1), np.ceil(max(np.sqrt(n), tau)))))


def _percentile_intervals(
    curves: Sequence[SigmoidCurve], confidence: float
) -> dict[str, tuple[float, float]]:
    values = np.array([[c.r0, c.a, c.b, c.c_mid] for c in curves])
    tail = 50.0 * (1.0 - confidence)
    low, high = np.percentile(values, tail, axis=0), np.percentile(values, 100.0 - tail, axis=0)
    return {name: (float(lo), float(hi)) for name, lo, hi in zip(PARAMETERS, low, high)}
