"""A reward model learned from human feedback: how much will a person like this text, given the target?

``ResonanceRewardModel.predict(text, target_hrv) -> float in [0, 1]``. Features of a (text, target)
pair, from the measured HRV ``m`` (8 values, ``HRVExtractor``) and the target ``t``:

    phi = [m, m**2, m - t, (m - t)**2, resonance(m, t)]          (33 values)

``m`` and ``m**2`` let a linear model express any preferred point in HRV space (a rater's hidden
ideal ``t*`` gives ``-||m - t*||^2 = -sum m^2 + 2 t*.m - const``); the gap terms express "close to the
target the tenant asked for". Features are standardised with the training set's mean and spread.

Two heads, each a linear function of the standardised features ``z``:

- ratings (1-5) by ridge regression: ``r_hat = w_r . z + b``; its score is ``(r_hat - 1) / 4`` clipped.
- preferences by a Bradley-Terry model: ``P(a preferred to b) = sigmoid(w_p . (z_a - z_b))``, fitted as
  logistic regression without intercept on feature differences (both orders of each pair). Its score
  is ``sigmoid(w_p . z / s)`` with ``s`` the spread (standard deviation) of ``w_p . z`` over the training
  texts (whose mean is 0 by the standardisation): an average text scores 0.5, one a standard deviation
  better 0.73. Without ``s`` the score saturates at 1 for most decent texts whenever the preferences
  are nearly separable, and a policy trained on it gets no signal.

``predict`` averages the heads that were fitted. ``fit`` holds out a seeded fraction of the examples
and reports held-out pairwise accuracy (preferences), MAE and Spearman correlation (ratings), each next
to the same metric for plain resonance-to-target, the baseline a learned model has to beat.

scikit-learn and SciPy are imported only when fitting, so loading and scoring stay light. Saved as a folder ``model.json`` (format version, metrics, standardisation, intercept) +
``weights.safetensors`` (numpy arrays); nothing is pickled.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import load as load_arrays
from safetensors.numpy import save as save_arrays

from resonance_os.core.errors import StorageError, ValidationError
from resonance_os.core.hrv_constants import HRV_DIM
from resonance_os.core.hrv_types import validate_hrv

FORMAT_VERSION = 1
N_FEATURES = 4 * HRV_DIM + 1
MIN_PREFERENCES = 10
MIN_RATINGS = 10


@dataclass(frozen=True)
class RatingExample:
    """A 1-5 rating of a text whose measured HRV is ``hrv``, written toward ``target_hrv``."""

    hrv: Sequence[float]
    target_hrv: Sequence[float]
    rating: int


@dataclass(frozen=True)
class PreferenceExample:
    """A choice between two texts (HRVs ``hrv_a`` and ``hrv_b``) for one target; ``preferred`` is "a"/"b"."""

    hrv_a: Sequence[float]
    hrv_b: Sequence[float]
    target_hrv: Sequence[float]
    preferred: str


def features(hrv: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Raw features of measured HRVs ``hrv`` (shape (n, 8)) against targets (shape (n, 8)): (n, 33)."""
    gap = hrv - target
    norm = np.sqrt((hrv * hrv).sum(axis=1) * (target * target).sum(axis=1))
    cosine = np.where(norm > 0, (hrv * target).sum(axis=1) / np.where(norm > 0, norm, 1.0), 0.0)
    return np.concatenate([hrv, hrv * hrv, gap, gap * gap, cosine[:, None]], axis=1)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _choose_c(x: np.ndarray, y: np.ndarray, groups: np.ndarray, seed: int) -> float:
    """The L2 strength (inverse, C) with the best 4-fold cross-validated log-loss, folds by pair."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold, cross_val_score

    folds = GroupKFold(n_splits=min(4, len(np.unique(groups))))
    scores = {
        c: cross_val_score(
            LogisticRegression(C=c, fit_intercept=False, max_iter=2000),
            x,
            y,
            groups=groups,
            cv=folds,
            scoring="neg_log_loss",
        ).mean()
        for c in (0.01, 0.1, 1.0, 10.0, 100.0)
    }
    return float(max(scores, key=scores.get))


def _split(n: int, holdout_fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    order = rng.permutation(n)
    n_test = max(1, int(round(n * holdout_fraction)))
    return order[n_test:], order[:n_test]


class ResonanceRewardModel:
    """Learned reward for text against a target HRV; see the module docstring for the model.

    Args:
        extractor: an ``HRVExtractor`` (created on first ``predict`` if not given).
    """

    def __init__(self, extractor=None) -> None:
        self._extractor = extractor
        self.mean = np.zeros(N_FEATURES)
        self.scale = np.ones(N_FEATURES)
        self.preference_weights: np.ndarray | None = None
        self.preference_spread = 1.0
        self.rating_weights: np.ndarray | None = None
        self.rating_intercept = 0.0
        self.metrics: dict[str, Any] = {}
        self.version: int | None = None

    # -- scoring -------------------------------------------------------------------------------

    @property
    def fitted(self) -> bool:
        return self.preference_weights is not None or self.rating_weights is not None

    @property
    def extractor(self):
        if self._extractor is None:
            from resonance_os.profiling.hrv_extractor import HRVExtractor

            self._extractor = HRVExtractor()
        return self._extractor

    def _z(self, hrv: np.ndarray, target: np.ndarray) -> np.ndarray:
        return (features(hrv, target) - self.mean) / self.scale

    def predict_hrv(
        self, hrv: Sequence[float] | np.ndarray, target_hrv: Sequence[float]
    ) -> np.ndarray | float:
        """Score measured HRVs (one of 8 values, or shape (n, 8)) against ``target_hrv``: in [0, 1]."""
        if not self.fitted:
            raise ValidationError("the reward model is not fitted; call fit() with feedback first")
        m = np.asarray(hrv, dtype=np.float64)
        single = m.ndim == 1
        m = np.atleast_2d(m)
        if m.shape[1] != HRV_DIM:
            raise ValidationError(f"hrv must have {HRV_DIM} values per row, got shape {m.shape}")
        t = np.broadcast_to(np.asarray(validate_hrv(target_hrv, what="target_hrv")), m.shape)
        z = self._z(m, t)
        heads = []
        if self.preference_weights is not None:
            heads.append(_sigmoid(z @ self.preference_weights / self.preference_spread))
        if self.rating_weights is not None:
            heads.append(np.clip((z @ self.rating_weights + self.rating_intercept - 1.0) / 4.0, 0.0, 1.0))
        score = np.mean(heads, axis=0)
        return float(score[0]) if single else score

    def predict(self, text: str, target_hrv: Sequence[float]) -> float:
        """Predicted human score of ``text`` written toward ``target_hrv``: a float in [0, 1]."""
        return float(self.predict_hrv(self.extractor.extract(text), target_hrv))

    # -- fitting -------------------------------------------------------------------------------

    def fit(
        self,
        ratings: Sequence[RatingExample] = (),
        preferences: Sequence[PreferenceExample] = (),
        *,
        holdout_fraction: float = 0.2,
        seed: int = 0,
    ) -> dict[str, Any]:
        """Fit on the training part of the examples and return held-out metrics (also in ``.metrics``).

        Needs at least 10 preferences or 10 ratings; a head is fitted only for a kind with enough data.
        """
        if len(preferences) < MIN_PREFERENCES and len(ratings) < MIN_RATINGS:
            raise ValidationError(
                f"need at least {MIN_PREFERENCES} preferences or {MIN_RATINGS} ratings to train a reward "
                f"model, have {len(preferences)} preferences and {len(ratings)} ratings; send more feedback"
            )
        if not 0.0 < holdout_fraction < 1.0:
            raise ValidationError(f"holdout_fraction must be in (0, 1), got {holdout_fraction}")
        rng = np.random.default_rng(seed)
        pref = self._preference_arrays(preferences) if len(preferences) >= MIN_PREFERENCES else None
        rate = self._rating_arrays(ratings) if len(ratings) >= MIN_RATINGS else None
        pref_split = _split(len(pref[0]), holdout_fraction, rng) if pref else None
        rate_split = _split(len(rate[0]), holdout_fraction, rng) if rate else None

        train_rows = []
        if pref:
            a, b, _ = pref
            train_rows += [a[pref_split[0]], b[pref_split[0]]]
        if rate:
            train_rows.append(rate[0][rate_split[0]])
        stacked = np.concatenate(train_rows)
        self.mean = stacked.mean(axis=0)
        self.scale = np.where(stacked.std(axis=0) > 1e-9, stacked.std(axis=0), 1.0)

        metrics: dict[str, Any] = {
            "format_version": FORMAT_VERSION,
            "seed": seed,
            "holdout_fraction": holdout_fraction,
        }
        self.preference_weights = self.rating_weights = None
        if pref:
            metrics.update(self._fit_preferences(pref, pref_split, seed))
        if rate:
            metrics.update(self._fit_ratings(rate, rate_split))
        self.metrics = metrics
        return metrics

    @staticmethod
    def _preference_arrays(preferences: Sequence[PreferenceExample]):
        a = np.array([validate_hrv(p.hrv_a, what="hrv_a") for p in preferences])
        b = np.array([validate_hrv(p.hrv_b, what="hrv_b") for p in preferences])
        t = np.array([validate_hrv(p.target_hrv, what="target_hrv") for p in preferences])
        bad = [p.preferred for p in preferences if p.preferred not in ("a", "b")]
        if bad:
            raise ValidationError(f"preferred must be 'a' or 'b', got {bad[0]!r}")
        y = np.array([p.preferred == "a" for p in preferences], dtype=np.float64)
        return features(a, t), features(b, t), y

    @staticmethod
    def _rating_arrays(ratings: Sequence[RatingExample]):
        m = np.array([validate_hrv(r.hrv, what="hrv") for r in ratings])
        t = np.array([validate_hrv(r.target_hrv, what="target_hrv") for r in ratings])
        y = np.array([r.rating for r in ratings], dtype=np.float64)
        if ((y < 1) | (y > 5)).any():
            raise ValidationError(f"ratings must be 1-5, got {y[(y < 1) | (y > 5)][0]:g}")
        return features(m, t), y

    def _fit_preferences(self, pref, split, seed: int) -> dict[str, Any]:
        fa, fb, y = pref
        train, test = split
        diff = (fa[train] - fb[train]) / self.scale
        x = np.concatenate([diff, -diff])
        labels = np.concatenate([y[train], 1.0 - y[train]])
        if len(np.unique(labels)) < 2:  # cannot happen with both orders, kept for clarity of failure
            raise ValidationError("preferences are all one-sided; cannot fit a Bradley-Terry model")
        from sklearn.linear_model import LogisticRegression

        groups = np.concatenate([train, train])  # both orders of a pair stay in one fold
        c = _choose_c(x, labels, groups, seed)
        model = LogisticRegression(C=c, fit_intercept=False, max_iter=2000)
        model.fit(x, labels)
        self.preference_weights = model.coef_[0].astype(np.float64)
        train_utilities = (
            (np.concatenate([fa[train], fb[train]]) - self.mean) / self.scale @ self.preference_weights
        )
        self.preference_spread = float(max(train_utilities.std(), 1e-9))
        test_diff = (fa[test] - fb[test]) / self.scale
        predicted_a = test_diff @ self.preference_weights > 0
        baseline_a = fa[test, -1] > fb[test, -1]  # the last feature is resonance to target
        return {
            "preferences": len(y),
            "preference_train": len(train),
            "preference_holdout": len(test),
            "pairwise_accuracy": float(np.mean(predicted_a == (y[test] == 1))),
            "baseline_pairwise_accuracy": float(np.mean(baseline_a == (y[test] == 1))),
            "bt_inverse_regularisation": c,
        }

    def _fit_ratings(self, rate, split) -> dict[str, Any]:
        from scipy.stats import spearmanr
        from sklearn.linear_model import RidgeCV

        f, y = rate
        train, test = split
        z = (f - self.mean) / self.scale
        model = RidgeCV(alphas=np.logspace(-3, 3, 13))
        model.fit(z[train], y[train])
        self.rating_weights = model.coef_.astype(np.float64)
        self.rating_intercept = float(model.intercept_)
        predicted = z[test] @ self.rating_weights + self.rating_intercept
        constant = np.full(len(test), y[train].mean())

        def spearman(a: np.ndarray, b: np.ndarray) -> float | None:
            if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
                return None
            return float(spearmanr(a, b).statistic)

        return {
            "ratings": len(y),
            "rating_train": len(train),
            "rating_holdout": len(test),
            "rating_mae": float(np.mean(np.abs(np.clip(predicted, 1, 5) - y[test]))),
            "baseline_rating_mae": float(np.mean(np.abs(constant - y[test]))),
            "rating_spearman": spearman(predicted, y[test]),
            "baseline_rating_spearman": spearman(f[test, -1], y[test]),
            "ridge_alpha": float(model.alpha_),
        }

    # -- persistence ---------------------------------------------------------------------------

    def to_state(self) -> tuple[dict[str, Any], bytes]:
        """``(params, weights)``: JSON-able parameters and a safetensors blob (what the service stores)."""
        if not self.fitted:
            raise ValidationError("cannot save an unfitted reward model; call fit() first")
        arrays = {"mean": self.mean, "scale": self.scale}
        if self.preference_weights is not None:
            arrays["preference_weights"] = self.preference_weights
        if self.rating_weights is not None:
            arrays["rating_weights"] = self.rating_weights
        params = {
            "format_version": FORMAT_VERSION,
            "n_features": N_FEATURES,
            "rating_intercept": self.rating_intercept,
            "preference_spread": self.preference_spread,
            "metrics": self.metrics,
            "version": self.version,
        }
        return params, save_arrays({k: np.ascontiguousarray(v, dtype=np.float64) for k, v in arrays.items()})

    @classmethod
    def from_state(cls, params: dict[str, Any], weights: bytes, extractor=None) -> ResonanceRewardModel:
        if params.get("format_version") != FORMAT_VERSION or params.get("n_features") != N_FEATURES:
            raise StorageError(
                f"reward model format {params.get('format_version')} with {params.get('n_features')} features "
                f"cannot be read by this version (format {FORMAT_VERSION}, {N_FEATURES} features); retrain it"
            )
        try:
            arrays = load_arrays(weights)
        except Exception as exc:  # safetensors raises several types for corrupt data
            raise StorageError(f"reward model weights are corrupt: {exc}") from None
        model = cls(extractor=extractor)
        model.mean = arrays["mean"]
        model.scale = arrays["scale"]
        model.preference_weights = arrays.get("preference_weights")
        model.rating_weights = arrays.get("rating_weights")
        try:
            model.rating_intercept = float(params["rating_intercept"])
            model.preference_spread = float(params["preference_spread"])
        except (KeyError, TypeError, ValueError) as exc:
            raise StorageError(f"reward model parameters are incomplete ({exc}); retrain it") from None
        model.metrics = dict(params.get("metrics", {}))
        model.version = params.get("version")
        return model

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write ``model.json`` + ``weights.safetensors`` into folder ``path`` atomically."""
        params, weights = self.to_state()
        target = Path(path)
        tmp = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex[:8]}"
        try:
            tmp.mkdir(parents=True)
            (tmp / "model.json").write_text(json.dumps(params, indent=2))
            (tmp / "weights.safetensors").write_bytes(weights)
            if target.exists():
                old = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:8]}"
                target.rename(old)
                tmp.rename(target)
                for child in old.iterdir():
                    child.unlink()
                old.rmdir()
            else:
                tmp.rename(target)
        except OSError as exc:
            raise StorageError(f"cannot save the reward model to {target}: {exc}") from None
        return target

    @classmethod
    def load(cls, path: str | os.PathLike[str], extractor=None) -> ResonanceRewardModel:
        folder = Path(path)
        try:
            params = json.loads((folder / "model.json").read_text())
            weights = (folder / "weights.safetensors").read_bytes()
        except (OSError, json.JSONDecodeError) as exc:
            raise StorageError(f"cannot read a reward model from {folder}: {exc}") from None
        return cls.from_state(params, weights, extractor=extractor)
