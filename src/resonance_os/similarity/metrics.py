"""Similarity between HRVs, always a float in [0, 1] (1 = identical in the method's sense).

Every HRV is 8 floats in [0, 1] (the unit cube), so each distance has a known maximum and maps to
[0, 1] without data-dependent scaling. With per-dimension weights ``w`` (default 1, normalised to sum
to 1 internally) and difference ``d = v1 - v2``:

==========  ====================================================  ============================
method      score                                                 degenerate cases
==========  ====================================================  ============================
COSINE      ``sum(w*a*b) / sqrt(sum(w*a*a) * sum(w*b*b))``        both zero -> 1; one zero -> 0
            (in [0, 1] already: HRVs are non-negative)
EUCLIDEAN   ``1 - sqrt(sum(w*d*d))``; unweighted this is           none
            ``1 - ||d|| / sqrt(8)``
MANHATTAN   ``1 - sum(w*|d|)``; unweighted ``1 - ||d||_1 / 8``    none
PEARSON     ``(r + 1) / 2`` with ``r`` the (weighted) Pearson     both constant -> 1;
            correlation across the 8 dimensions                    one constant -> 0.5
SPEARMAN    ``(rho + 1) / 2`` with ``rho`` Pearson's r on ranks   as PEARSON
            (ties get their average rank)
==========  ====================================================  ============================

The constant-vector convention follows from what correlation measures, the *shape* of the profile
across dimensions, ignoring its level: two flat profiles have the same shape (1.0); a flat profile
has no linear relation to a shaped one (r = 0, so 0.5). No method ever returns NaN.

Cost: one call validates both inputs (``validate_hrv``) and runs a few numpy operations on 8 values,
so it is cheap enough for a reward loop; use :meth:`SimilarityCalculator.calculate_batch_similarity`
for many candidates (one vectorised pass).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np

from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_constants import DEFAULT_RESONANCE_THRESHOLD, HRV_DIM, HRV_DIMENSIONS
from resonance_os.core.hrv_types import validate_hrv

HRVLike = Iterable[float] | Mapping[str, float]
"""Anything ``validate_hrv`` accepts: 8 numbers in order, an ``HRVVector``, or a name -> value map."""

_UNIFORM = np.full(HRV_DIM, 1.0 / HRV_DIM)
_TINY = 1e-300  # floor for denominators; the zero-norm and zero-variance cases are handled explicitly


class SimilarityMethod(str, Enum):
    """How two HRVs are compared; each maps to [0, 1] as documented in this module."""

    COSINE = "cosine"
    EUCLIDEAN = "euclidean"
    MANHATTAN = "manhattan"
    PEARSON = "pearson"
    SPEARMAN = "spearman"


def resolve_method(method: SimilarityMethod | str) -> SimilarityMethod:
    """``method`` as a SimilarityMethod (the enum or its value, e.g. ``"cosine"``)."""
    try:
        return SimilarityMethod(method)
    except ValueError:
        names = ", ".join(m.value for m in SimilarityMethod)
        raise ValidationError(f"unknown similarity method {method!r}; use one of: {names}") from None


def normalise_weights(weights: Mapping[str, float] | None) -> np.ndarray:
    """Turn ``{dimension: weight}`` into an array of 8 non-negative weights summing to 1.

    Dimensions not named keep weight 1 (so ``{"emotional_valence": 2}`` doubles valence's say).
    Unknown names, negative or non-finite weights, and all-zero weights raise ``ValidationError``.
    """
    if weights is None:
        return _UNIFORM
    if not isinstance(weights, Mapping):
        raise ValidationError(f"weights must map dimension names to numbers, got {type(weights).__name__}")
    unknown = [k for k in weights if k not in HRV_DIMENSIONS]
    if unknown:
        raise ValidationError(
            f"unknown weight dimension(s) {unknown}; valid names: {', '.join(HRV_DIMENSIONS)}"
        )
    raw = np.ones(HRV_DIM)
    for i, name in enumerate(HRV_DIMENSIONS):
        if name in weights:
            value = weights[name]
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
                raise ValidationError(f"weight for {name} must be a number, got {value!r}")
            if not math.isfinite(value) or value < 0:
                raise ValidationError(f"weight for {name} is {value}; weights must be finite and >= 0")
            raw[i] = float(value)
    total = raw.sum()
    if total <= 0:
        raise ValidationError("weights are all zero; give at least one dimension a positive weight")
    return raw / total


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..8 along the last axis, ties sharing their average rank (as in Spearman's rho)."""
    less = (x[..., None, :] < x[..., :, None]).sum(axis=-1)
    equal = (x[..., None, :] == x[..., :, None]).sum(axis=-1)
    return less + (equal + 1) / 2.0


def _correlation_score(a: np.ndarray, b: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(r + 1) / 2 for the weighted Pearson r along the last axis; constants as documented."""
    da = a - (a @ w)[..., None]
    db = b - (b @ w)[..., None]
    va = (da * da) @ w
    vb = (db * db) @ w
    # Deviations below ~1e-12 of the [0, 1] scale are rounding, not variance.
    flat_a = va <= 1e-24
    flat_b = vb <= 1e-24
    r = ((da * db) @ w) / np.sqrt(np.maximum(va * vb, _TINY))
    r = np.where(flat_a | flat_b, flat_a & flat_b, r)
    return (np.minimum(np.maximum(r, -1.0), 1.0) + 1.0) / 2.0


def similarity_scores(a: np.ndarray, b: np.ndarray, method: SimilarityMethod, w: np.ndarray) -> np.ndarray:
    """The kernel: score(s) along the last axis of already-validated arrays (broadcasting).

    ``a`` and ``b`` have shape ``(..., 8)`` with values in [0, 1]; ``w`` has shape ``(8,)`` and sums
    to 1. Returns shape ``(...)`` with values in [0, 1].
    """
    # Scores are in [0, 1] mathematically; the min/max only absorb rounding (cheaper than np.clip).
    if method is SimilarityMethod.COSINE:
        na = (a * a) @ w
        nb = (b * b) @ w
        # One zero vector: the dot product is 0, so the score is 0; both zero: add 1.
        cos = ((a * b) @ w) / np.maximum(np.sqrt(na * nb), _TINY) + ((na + nb) <= 0.0)
        return np.minimum(cos, 1.0)
    if method is SimilarityMethod.EUCLIDEAN:
        d = a - b
        return np.maximum(1.0 - np.sqrt((d * d) @ w), 0.0)
    if method is SimilarityMethod.MANHATTAN:
        return np.maximum(1.0 - np.abs(a - b) @ w, 0.0)
    if method is SimilarityMethod.PEARSON:
        return _correlation_score(a, b, w)
    if method is SimilarityMethod.SPEARMAN:
        return _correlation_score(_average_ranks(a), _average_ranks(b), w)
    raise AssertionError(f"unhandled method {method}")  # pragma: no cover - enum is exhaustive


def _as_array(v: HRVLike, what: str) -> np.ndarray:
    return np.asarray(validate_hrv(v, what=what), dtype=np.float64)


def _as_matrix(vectors: Iterable[HRVLike], what: str) -> np.ndarray:
    if isinstance(vectors, np.ndarray) and vectors.ndim == 2 and vectors.shape[1] == HRV_DIM:
        if vectors.dtype.kind in "fiu":  # vectorised check; the slow path names a bad value
            m = vectors.astype(np.float64, copy=False)
            if np.all((m >= 0.0) & (m <= 1.0)):  # NaN fails the comparison
                return m
    rows = [validate_hrv(v, what=f"{what}[{i}]") for i, v in enumerate(vectors)]
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), HRV_DIM)


class SimilarityCalculator:
    """Compare HRVs with one of the :class:`SimilarityMethod` s; every score is in [0, 1].

    Args:
        default_method: method used when a call passes ``method=None`` (default COSINE).
    """

    def __init__(self, default_method: SimilarityMethod | str = SimilarityMethod.COSINE) -> None:
        self.default_method = resolve_method(default_method)

    def _resolve(self, method: SimilarityMethod | str | None) -> SimilarityMethod:
        return self.default_method if method is None else resolve_method(method)

    def calculate_similarity(
        self,
        v1: HRVLike,
        v2: HRVLike,
        method: SimilarityMethod | str | None = None,
        weights: Mapping[str, float] | None = None,
    ) -> float:
        """Similarity of two HRVs in [0, 1]; symmetric; identical vectors give 1.0.

        ``weights`` maps dimension names to non-negative importances (unnamed dimensions: 1).
        """
        a = _as_array(v1, "v1")
        b = _as_array(v2, "v2")
        return float(similarity_scores(a, b, self._resolve(method), normalise_weights(weights)))

    def calculate_batch_similarity(
        self,
        target: HRVLike,
        vectors: Iterable[HRVLike],
        method: SimilarityMethod | str | None = None,
        weights: Mapping[str, float] | None = None,
    ) -> np.ndarray:
        """Similarity of each of ``vectors`` (n of them) to ``target``: array of shape ``(n,)``."""
        t = _as_array(target, "target")
        m = _as_matrix(vectors, "vectors")
        return similarity_scores(m, t, self._resolve(method), normalise_weights(weights))

    def find_most_similar(
        self,
        target: HRVLike,
        candidates: Mapping[str, HRVLike] | Sequence[HRVLike],
        top_k: int = 5,
        method: SimilarityMethod | str | None = None,
        weights: Mapping[str, float] | None = None,
    ) -> list[tuple[str | int, float]]:
        """The ``top_k`` candidates closest to ``target`` as ``(key, score)``, best first.

        ``key`` is the candidate's name for a mapping, its index for a sequence. Ties keep the
        candidates' order.
        """
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValidationError(f"top_k must be a positive integer, got {top_k!r}")
        if isinstance(candidates, Mapping):
            keys: list[str | int] = list(candidates)
            vectors = list(candidates.values())
        else:
            vectors = list(candidates)
            keys = list(range(len(vectors)))
        if not vectors:
            return []
        scores = self.calculate_batch_similarity(target, vectors, method, weights)
        order = np.argsort(-scores, kind="stable")[:top_k]
        return [(keys[i], float(scores[i])) for i in order]

    def calculate_dimension_contributions(
        self,
        current: HRVLike,
        target: HRVLike,
        method: SimilarityMethod | str | None = None,
        weights: Mapping[str, float] | None = None,
    ) -> dict[str, float]:
        """How much each dimension holds ``current`` back from ``target``, by dimension name.

        The contribution of dimension i is the similarity gained by setting ``current[i]`` to
        ``target[i]`` while keeping the other seven: ``score(current with i fixed) - score(current)``.
        All zeros when the vectors are identical; largest first tells what to fix first. For
        EUCLIDEAN/MANHATTAN it is never negative; for the correlation methods it can be slightly
        negative when fixing one dimension alone disturbs the shape.
        """
        c = _as_array(current, "current")
        t = _as_array(target, "target")
        resolved = self._resolve(method)
        w = normalise_weights(weights)
        fixed = np.tile(c, (HRV_DIM, 1))
        np.fill_diagonal(fixed, t)
        gains = similarity_scores(fixed, t, resolved, w) - similarity_scores(c, t, resolved, w)
        return {name: float(g) for name, g in zip(HRV_DIMENSIONS, gains)}


@dataclass(frozen=True)
class MultiMethodResult:
    """Scores of several methods for one pair, their combination and the verdict.

    ``combined`` is the method-weighted mean of ``scores``; ``votes`` counts methods at or above
    ``threshold``; ``consensus`` is True when at least ``required_votes`` of them are;
    ``agreement`` is the share of methods that share the majority verdict (1.0 = unanimous).
    """

    scores: dict[str, float]
    combined: float
    threshold: float
    votes: int
    required_votes: int
    consensus: bool
    agreement: float

    @property
    def resonant(self) -> bool:
        """True when the combined score reaches the threshold."""
        return self.combined >= self.threshold

    def to_dict(self) -> dict[str, object]:
        return {
            "scores": dict(self.scores),
            "combined": self.combined,
            "threshold": self.threshold,
            "votes": self.votes,
            "required_votes": self.required_votes,
            "consensus": self.consensus,
            "agreement": self.agreement,
            "resonant": self.resonant,
        }


class MultiMethodSimilarity:
    """Score a pair with several methods at once and decide resonance by vote.

    Args:
        methods: methods to use (default: all five).
        method_weights: importance of each method in ``combined`` (default: equal): a mapping
            method -> weight, or a list with one weight per method as the original's
            ``MultiMethodSimilarity(methods, weights)``.
        threshold: score at or above which a method votes "resonant" (default 0.92).
        quorum: share of methods that must vote resonant for ``consensus`` (default 0.5, i.e. a
            majority: 3 of 5). ``required_votes = ceil(quorum * len(methods))``, at least 1.
        weights: per-dimension weights passed to every method.
    """

    def __init__(
        self,
        methods: Sequence[SimilarityMethod | str] = tuple(SimilarityMethod),
        method_weights: Mapping[SimilarityMethod | str, float] | Sequence[float] | None = None,
        threshold: float = DEFAULT_RESONANCE_THRESHOLD,
        quorum: float = 0.5,
        weights: Mapping[str, float] | None = None,
    ) -> None:
        methods = [resolve_method(m) for m in methods]
        if method_weights is not None and not isinstance(method_weights, Mapping):
            weight_list = list(method_weights)
            if len(weight_list) != len(methods):
                raise ValidationError(
                    f"{len(weight_list)} method weights for {len(methods)} methods; give one weight per method"
                )
            if len(set(methods)) != len(methods):
                raise ValidationError("methods repeat a method; list each method once with its weight")
            method_weights = dict(zip(methods, weight_list))
        self.methods = list(dict.fromkeys(methods))
        if not self.methods:
            raise ValidationError("methods is empty; give at least one SimilarityMethod")
        if not 0.0 <= threshold <= 1.0:
            raise ValidationError(f"threshold {threshold} is outside [0, 1]")
        if not 0.0 < quorum <= 1.0:
            raise ValidationError(f"quorum {quorum} must be in (0, 1]")
        self.threshold = float(threshold)
        self.quorum = float(quorum)
        given = {resolve_method(k): v for k, v in (method_weights or {}).items()}
        extra = [m.value for m in given if m not in self.methods]
        if extra:
            raise ValidationError(f"method_weights names methods not in use: {extra}")
        mw = np.array([float(given.get(m, 1.0)) for m in self.methods])
        if not np.all(np.isfinite(mw)) or np.any(mw < 0) or mw.sum() <= 0:
            raise ValidationError(f"method_weights must be finite, >= 0 and not all zero, got {mw}")
        self._method_w = mw / mw.sum()
        self._dim_w = normalise_weights(weights)

    @property
    def required_votes(self) -> int:
        return max(1, math.ceil(self.quorum * len(self.methods) - 1e-9))

    def compare(self, v1: HRVLike, v2: HRVLike) -> MultiMethodResult:
        """Score ``v1`` against ``v2`` with every method and combine."""
        a = _as_array(v1, "v1")
        b = _as_array(v2, "v2")
        values = np.array([float(similarity_scores(a, b, m, self._dim_w)) for m in self.methods])
        votes = int((values >= self.threshold).sum())
        n = len(values)
        return MultiMethodResult(
            scores={m.value: float(s) for m, s in zip(self.methods, values)},
            combined=float(np.clip((values * self._method_w).sum(), 0.0, 1.0)),
            threshold=self.threshold,
            votes=votes,
            required_votes=self.required_votes,
            consensus=votes >= self.required_votes,
            agreement=max(votes, n - votes) / n,
        )

    # -- the original ResonanceOS's names (similarity systems guide) -----------------------------

    def calculate_combined_similarity(self, v1: HRVLike, v2: HRVLike) -> dict[str, object]:
        """:meth:`compare` in the original's shape: ``{"individual": {method: score}, "combined":
        float, "weights": {method: weight}}`` (weights normalised to sum to 1)."""
        result = self.compare(v1, v2)
        weights = {m.value: float(w) for m, w in zip(self.methods, self._method_w)}
        return {"individual": result.scores, "combined": result.combined, "weights": weights}

    def get_method_consensus(
        self, v1: HRVLike, v2: HRVLike, threshold: float | None = None
    ) -> dict[str, object]:
        """The methods' vote at ``threshold`` (default: this instance's, 0.92) in the original's shape:
        ``methods_meeting_threshold``, ``total_methods``, ``consensus_ratio``, ``meets_threshold``
        (at least ``required_votes`` methods agree) and ``combined_score``."""
        level = self.threshold if threshold is None else float(threshold)
        if not 0.0 <= level <= 1.0:
            raise ValidationError(f"threshold {threshold} is outside [0, 1]")
        result = self.compare(v1, v2)
        votes = sum(score >= level for score in result.scores.values())
        return {
            "methods_meeting_threshold": votes,
            "total_methods": len(self.methods),
            "consensus_ratio": votes / len(self.methods),
            "meets_threshold": votes >= self.required_votes,
            "combined_score": result.combined,
        }
