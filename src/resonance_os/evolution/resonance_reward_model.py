"""A reward model learned from human feedback: how much will a person like this text, given the target?

``ResonanceRewardModel.predict(text, target_hrv, prompt=None) -> float in [0, 1]``. Features of a
(text, target, prompt) triple, three blocks:

    h = [m, m**2, m - t, (m - t)**2, resonance(m, t)]      HRV block, 33 values
    q = [fluency, coherence, topic, repetition]            quality block: 4 terms in [0, 1]
        + RELATION_FEATURES                                 and 7 relations (prompt, sentence order)
        + prompt meaning (MEANING_DIM)                      the text's mean word vector per prompt stem
    x = tf-idf of hashed words, word bigrams, sentence      text block, TEXT_DIM values, ||x|| = 1
        transitions (last word|next first word), the
        text's first word and prompt>text stem pairs

``m`` is the measured HRV (``HRVExtractor``), ``t`` the target. ``m`` and ``m**2`` let a linear model
express any preferred point in HRV space (a rater's hidden ideal ``t*`` gives
``-||m - t*||^2 = -sum m^2 + 2 t*.m - const``); the gap terms express "close to the target the tenant
asked for". ``q`` are the terms of ``resonance_os.quality`` (``topic`` against the prompt, 0 without
one; ``repetition`` is its penalty); the relations split the topic term (mention share, cosine) and
add prompt stems counted and named in the first sentence, the coherence model's order log-odds
(without its order-free connectedness), whether the first sentence cannot open a paragraph (a
fragment, or it opens with a pronoun or connective), and adjacent minus average sentence overlap.
The prompt-meaning block (:func:`prompt_meaning`) lets a linear weight learn a direction in meaning
per prompt word, so prompts whose words the text never uses ("typesmapping") are learnt from
feedback. ``x`` reads the words: a gram ``g`` adds to column
``crc32(g) mod TEXT_DIM`` with weight ``(1 + log tf) * idf``, the IDF fitted on the training texts and
stored; the pairs of a prompt's content stems with the text's (``garden>soil``) let it learn what a
tenant's prompts are about. ``z = [(h, q) - mean) / max(spread, 0.02), x]``: the dense blocks standardised with the training
set's mean and spread (floored, so a nearly constant feature is not blown up), the text block as is.

Regulariser: one L2 penalty on ``w . (s * z)`` with block scales ``s = (s_h on h, 1 on q, s_x on x)``
(the prompt-meaning columns, scaled to norm MEANING_SCALE, sit in ``q``),
i.e. ``||w_q||^2 + ||w_h||^2 / s_h^2 + ||w_x||^2 / s_x^2`` over ``2C`` (scale 0 drops a block). The
strength (``C``, or ``alpha`` for ratings), ``s_h`` in ``HRV_SCALES`` and ``s_x`` in ``TEXT_SCALES`` are
chosen by 4-fold cross-validation grouped by text: a fold validates on the examples whose texts all
lie in it and trains on those with none there.

Two heads, each linear in ``z``:

- ratings (1-5) by ridge regression: ``r_hat = w_r . z + b``; its score is ``(r_hat - 1) / 4`` clipped.
- preferences by a Bradley-Terry model: ``P(a preferred to b) = sigmoid(w_p . (z_a - z_b))``, fitted as
  L2 logistic regression without intercept on the differences ``z_preferred - z_other``. The optimum
  lies in the span of the training differences, so it is solved there (``w_p = X^T a``: as many
  unknowns as pairs, not features). Its score is ``sigmoid(w_p . (z - z_bar) / s_u)`` with ``z_bar`` the
  mean and ``s_u`` the spread of ``w_p . z`` over the training texts: an average text scores 0.5, one a
  standard deviation better 0.73. Without ``s_u`` the score saturates at 1 for most decent texts
  whenever the preferences are nearly separable, and a policy trained on it gets no signal.

``predict`` averages the heads that were fitted. ``fit`` holds out drafts, not examples: it orders the
texts (those linked by shared examples together, groups in a seeded random order), holds out the
shortest prefix whose examples make ``holdout_fraction`` of them, fits on the examples that touch no
held-out text (examples that mix both sides count for neither), and reports held-out pairwise accuracy
(preferences), MAE and Spearman correlation (ratings), each next to a baseline: the single feature among
resonance-to-target and the quality terms that does best on the training examples. The saved model is
then refitted on every example with the chosen regulariser (the metrics describe the smaller fit).

scikit-learn and SciPy are imported only when fitting. Saved as a folder ``model.json`` (format
version, metrics, intercepts) + ``weights.safetensors`` (numpy arrays); nothing is pickled. Format 1
(HRV block only) and format 2 (no relations, no prompt meaning) models load as format 3 with zero
weights on what they lack: they score as before.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import uuid
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import load as load_arrays
from safetensors.numpy import save as save_arrays

from resonance_os.core.errors import StorageError, ValidationError
from resonance_os.core.hrv_constants import HRV_DIM
from resonance_os.core.hrv_types import validate_hrv
from resonance_os.quality.coherence import coherence_model, opening_class, text_units
from resonance_os.quality.fluency import ngram_fluency
from resonance_os.quality.repetition import repetition_report
from resonance_os.quality.text_units import content_stems, sentence_words
from resonance_os.quality.topic import topic_model
from resonance_os.rl.folders import replace_folder

FORMAT_VERSION = 3
N_HRV_FEATURES = 4 * HRV_DIM + 1
QUALITY_TERMS = ("fluency", "coherence", "topic", "repetition")
RELATION_FEATURES = (
    "mention",
    "related",
    "prompt_stems",
    "first_mentions",
    "order_logit",
    "bad_opening",
    "adjacent_cohesion",
)
N_QUALITY = len(QUALITY_TERMS) + len(RELATION_FEATURES)
N_DENSE = N_HRV_FEATURES + N_QUALITY
TEXT_DIM = 4096
TEXT_FEATURES = (
    "crc32 mod 4096 of words, word bigrams, sentence transitions, first word, prompt>text stems; "
    "1+log tf * idf, l2"
)
MEANING_DIM = 1024
MEANING_SCALE = 10.0
"""Norm of the prompt-meaning block (the text's word-vector mean under each prompt stem) beside the
unit-length gram block: with a few hundred judgments it carries most of what a prompt asks for."""
N_FEATURES = N_DENSE + TEXT_DIM + MEANING_DIM
OLD_DENSE = {1: N_HRV_FEATURES, 2: N_HRV_FEATURES + len(QUALITY_TERMS)}
"""Dense columns of the older formats (1: HRV block only; 2: HRV and quality terms, no relations)."""
BASELINE_TERMS = {"resonance": (N_HRV_FEATURES - 1, 1.0)} | {
    term: (N_HRV_FEATURES + i, -1.0 if term == "repetition" else 1.0) for i, term in enumerate(QUALITY_TERMS)
}
"""Single features a fair baseline may rank by: column of the dense block and the sign that makes
higher better."""
SCALE_FLOOR = 0.02
"""Least spread a dense feature is divided by: one nearly constant in training is not blown up."""
MIN_PREFERENCES = 10
MIN_RATINGS = 10
CV_FOLDS = 4
HRV_SCALES = (0.0, 1.0)
TEXT_SCALES = (0.0, 1.0, 3.0, 10.0)
BT_GRID = tuple(itertools.product((0.03, 0.3, 3.0), HRV_SCALES, TEXT_SCALES))
"""(C, HRV scale s_h, text scale s_x) candidates of the Bradley-Terry head."""
RIDGE_GRID = tuple(itertools.product((0.1, 1.0, 10.0, 100.0), HRV_SCALES, TEXT_SCALES))
"""(alpha, HRV scale s_h, text scale s_x) candidates of the rating head."""


@dataclass(frozen=True)
class RatingExample:
    """A 1-5 rating of ``text`` (measured HRV ``hrv``), written toward ``target_hrv`` for ``prompt``."""

    text: str
    hrv: Sequence[float]
    target_hrv: Sequence[float]
    rating: int
    prompt: str | None = None


@dataclass(frozen=True)
class PreferenceExample:
    """A choice between ``text_a`` and ``text_b`` (HRVs ``hrv_a``, ``hrv_b``) for one target and prompt;
    ``preferred`` is "a" or "b"."""

    text_a: str
    text_b: str
    hrv_a: Sequence[float]
    hrv_b: Sequence[float]
    target_hrv: Sequence[float]
    preferred: str
    prompt: str | None = None


def features(hrv: np.ndarray, target: np.ndarray) -> np.ndarray:
    """HRV block of measured HRVs ``hrv`` (shape (n, 8)) against targets (shape (n, 8)): (n, 33)."""
    gap = hrv - target
    norm = np.sqrt((hrv * hrv).sum(axis=1) * (target * target).sum(axis=1))
    cosine = np.where(norm > 0, (hrv * target).sum(axis=1) / np.where(norm > 0, norm, 1.0), 0.0)
    return np.concatenate([hrv, hrv * hrv, gap, gap * gap, cosine[:, None]], axis=1)


@lru_cache(maxsize=8192)
def quality_terms(text: str, prompt: str | None) -> tuple[float, ...]:
    """The quality block: ``QUALITY_TERMS`` of ``text`` by ``resonance_os.quality``, each in [0, 1]; topic
    is 0 without a prompt; repetition is the penalty (0 = clean)."""
    return (
        ngram_fluency().score(text),
        coherence_model().score(text),
        topic_model().score(text, prompt) if prompt and prompt.strip() else 0.0,
        repetition_report(text, prompt or "").repetition,
    )


@lru_cache(maxsize=8192)
def relation_features(text: str, prompt: str | None) -> tuple[float, ...]:
    """``RELATION_FEATURES`` of ``text``: prompt relatedness (0 without a prompt) and sentence order."""
    units = text_units(text)
    mention = related = stems = first = 0.0
    asked = set(_prompt_stems(prompt))
    if asked and units:
        mention, cosine = topic_model().parts(text, prompt)
        related = 0.0 if cosine is None else cosine
        stems = math.log1p(sum(len(asked & u.stems) for u in units))
        first = float(not asked.isdisjoint(units[0].stems))
    order = bad = cohesion = 0.0
    if len(units) >= 2:
        order = coherence_model().order_logit(units)
        bad = float(units[0].fragment or opening_class(units[0]) != "o")
        n = len(units)
        overlap = [[math.log1p(len(a.stems & b.stems)) for b in units] for a in units]
        adjacent = sum(overlap[k][k + 1] for k in range(n - 1)) / (n - 1)
        cohesion = adjacent - (sum(map(sum, overlap)) - sum(overlap[k][k] for k in range(n))) / (n * (n - 1))
    return mention, related, stems, first, order, bad, cohesion


def _grams(text: str, prompt: str | None) -> list[str]:
    """The text block's grams: words, in-sentence bigrams, ``^first`` word, ``last|first`` transitions
    between sentences, and ``prompt_stem>text_stem`` pairs."""
    sentences = [words for words in sentence_words(text) if words]
    grams = [f"^{sentences[0][0]}"] if sentences else []
    for previous, words in zip([None, *sentences], sentences):
        grams += words
        grams += [f"{a} {b}" for a, b in zip(words, words[1:])]
        if previous is not None:
            grams.append(f"{previous[-1]}|{words[0]}")
    if prompt:
        asked = _prompt_stems(prompt)
        said = sorted(set(content_stems([w for words in sentences for w in words])))
        grams += [f"{p}>{t}" for p in asked for t in said]
    return grams


def text_counts(texts: Sequence[str], prompts: Sequence[str | None]) -> np.ndarray:
    """Sublinear term frequencies ``1 + log tf`` of the hashed grams of each (text, prompt): (n, TEXT_DIM)."""
    out = np.zeros((len(texts), TEXT_DIM))
    for row, (text, prompt) in enumerate(zip(texts, prompts)):
        counts = np.bincount(
            [zlib.crc32(g.encode("utf-8")) % TEXT_DIM for g in _grams(text, prompt)], minlength=TEXT_DIM
        )
        out[row] = np.where(counts > 0, 1.0 + np.log(np.maximum(counts, 1)), 0.0)
    return out


def prompt_meaning(texts: Sequence[str], prompts: Sequence[str | None]) -> np.ndarray:
    """The prompt-meaning block, (n, MEANING_DIM): ``v`` (``topic_model``'s unit mean word vector of the
    text's content stems) added at columns ``crc32(f"{p}>{k}") mod MEANING_DIM`` for each prompt stem
    ``p`` and dimension ``k``, times ``MEANING_SCALE / sqrt(|P|)``. A linear weight on it is a direction
    in meaning per prompt word: what this tenant's prompts are about, beyond the words they name."""
    out = np.zeros((len(texts), MEANING_DIM))
    vectors = topic_model()
    for row, (text, prompt) in enumerate(zip(texts, prompts)):
        asked = _prompt_stems(prompt)
        v = vectors.mean_vector(sorted({s for words in sentence_words(text) for s in content_stems(words)}))
        if not asked or v is None:
            continue
        for p in asked:
            columns = [zlib.crc32(f"{p}>{k}".encode()) % MEANING_DIM for k in range(len(v))]
            np.add.at(out[row], columns, v * (MEANING_SCALE / math.sqrt(len(asked))))
    return out


def _prompt_stems(prompt: str | None) -> list[str]:
    """The prompt's content stems, sorted (none without a prompt)."""
    if not prompt:
        return []
    return sorted(set(content_stems([w for words in sentence_words(prompt) for w in words])))


def _tfidf(counts: np.ndarray, idf: np.ndarray) -> np.ndarray:
    weighted = counts * idf
    norm = np.linalg.norm(weighted, axis=1, keepdims=True)
    return weighted / np.where(norm > 0, norm, 1.0)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _order_accuracy(utility_a: np.ndarray, utility_b: np.ndarray, a_preferred: np.ndarray) -> float:
    """Share of pairs ordered like the labels; a tie counts one half."""
    right = np.where(utility_a == utility_b, 0.5, (utility_a > utility_b) == a_preferred)
    return float(np.mean(right))


def _usable_feedback(
    ratings: Sequence[RatingExample], preferences: Sequence[PreferenceExample], holdout_fraction: float
) -> tuple[list[PreferenceExample], list[RatingExample], np.ndarray]:
    """The preferences and ratings there are enough of to fit a head on (each kind needs its minimum),
    and the ratings as floats; a ``ValidationError`` naming the fix for too little or malformed feedback."""
    if len(preferences) < MIN_PREFERENCES and len(ratings) < MIN_RATINGS:
        raise ValidationError(
            f"need at least {MIN_PREFERENCES} preferences or {MIN_RATINGS} ratings to train a reward "
            f"model, have {len(preferences)} preferences and {len(ratings)} ratings; send more feedback"
        )
    if not 0.0 < holdout_fraction < 1.0:
        raise ValidationError(f"holdout_fraction must be in (0, 1), got {holdout_fraction}")
    pref = list(preferences) if len(preferences) >= MIN_PREFERENCES else []
    rate = list(ratings) if len(ratings) >= MIN_RATINGS else []
    bad = [p.preferred for p in pref if p.preferred not in ("a", "b")]
    if bad:
        raise ValidationError(f"preferred must be 'a' or 'b', got {bad[0]!r}")
    y_rate = np.array([r.rating for r in rate], dtype=np.float64)
    if ((y_rate < 1) | (y_rate > 5)).any():
        raise ValidationError(f"ratings must be 1-5, got {y_rate[(y_rate < 1) | (y_rate > 5)][0]:g}")
    return pref, rate, y_rate


def _holdout(
    example_sides: list[tuple[int, ...]],
    side_text: np.ndarray,
    n_texts: int,
    kinds: list[slice],
    holdout_fraction: float,
    seed: int,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Each example's first and last text position in a seeded text order, and the cut: the examples
    whose texts all lie at or before it (a prefix holding ``holdout_fraction`` of each kind) are held out."""
    positions = _text_positions(
        [tuple(side_text[list(s)]) for s in example_sides], n_texts, np.random.default_rng(seed)
    )
    side_position = positions[side_text]
    first = np.array([side_position[list(s)].min() for s in example_sides], dtype=np.int64)
    last = np.array([side_position[list(s)].max() for s in example_sides], dtype=np.int64)
    cut = max(
        np.sort(last[kind])[max(1, math.ceil(holdout_fraction * (kind.stop - kind.start))) - 1]
        for kind in kinds
        if kind.stop > kind.start
    )
    return first, last, int(cut)


def _text_positions(
    example_texts: list[tuple[int, ...]], n_texts: int, rng: np.random.Generator
) -> np.ndarray:
    """Position of each text in a seeded order that keeps texts linked by shared examples together."""
    parent = list(range(n_texts))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for ids in example_texts:
        for other in ids[1:]:
            parent[root(other)] = root(ids[0])
    group_rank = rng.permutation(n_texts)[[root(i) for i in range(n_texts)]]
    order = np.lexsort((rng.permutation(n_texts), group_rank))
    positions = np.empty(n_texts, dtype=np.int64)
    positions[order] = np.arange(n_texts)
    return positions


def _cv_folds(first: np.ndarray, last: np.ndarray, n_texts: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, validation) indices of ``CV_FOLDS`` folds of contiguous text positions, for examples
    whose texts span positions ``first``..``last``: validate on examples inside the fold, train on those
    touching no text of it."""
    fold_first, fold_last = first * CV_FOLDS // n_texts, last * CV_FOLDS // n_texts
    folds = []
    for k in range(CV_FOLDS):
        inside = np.flatnonzero((fold_first == k) & (fold_last == k))
        outside = np.flatnonzero((fold_last < k) | (fold_first > k))
        if len(inside) and len(outside):
            folds.append((outside, inside))
    return folds


def _choose(
    grid: Sequence[tuple[float, ...]],
    folds: list[tuple[np.ndarray, np.ndarray]],
    fit: Callable[..., Any],
    loss: Callable[[Any, np.ndarray], float],
) -> tuple[float, ...]:
    """The grid point with the lowest validation loss summed over the folds (the middle one without
    folds)."""
    if not folds:
        return grid[len(grid) // 2]
    totals = [sum(loss(fit(train, *point), val) * len(val) for train, val in folds) for point in grid]
    return grid[int(np.argmin(totals))]


class ResonanceRewardModel:
    """Learned reward for text against a target HRV (and prompt); see the module docstring.

    Args:
        extractor: an ``HRVExtractor`` (created on first ``predict`` without ``hrv`` if not given).
    """

    def __init__(self, extractor=None) -> None:
        self._extractor = extractor
        self.mean = np.zeros(N_DENSE)
        self.scale = np.ones(N_DENSE)
        self.idf = np.zeros(TEXT_DIM)
        self.preference_weights: np.ndarray | None = None
        self.preference_center = 0.0
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

    @staticmethod
    def _dense(
        texts: Sequence[str], hrvs: np.ndarray, targets: np.ndarray, prompts: Sequence[str | None]
    ) -> np.ndarray:
        """HRV and quality blocks, unstandardised: (n, N_DENSE)."""
        quality = np.array(
            [quality_terms(t, p) + relation_features(t, p) for t, p in zip(texts, prompts)]
        ).reshape(len(texts), -1)
        return np.concatenate([features(hrvs, targets), quality], axis=1)

    def _z(self, dense: np.ndarray, counts: np.ndarray, meaning: np.ndarray) -> np.ndarray:
        return np.concatenate([(dense - self.mean) / self.scale, _tfidf(counts, self.idf), meaning], axis=1)

    def score(
        self,
        texts: Sequence[str],
        target_hrv: Sequence[float],
        prompts: Sequence[str | None] | None = None,
        hrvs: np.ndarray | Sequence[Sequence[float]] | None = None,
    ) -> np.ndarray:
        """Scores in [0, 1] of ``texts`` written toward ``target_hrv`` for ``prompts`` (default none);
        ``hrvs`` (shape (n, 8)) are measured with the extractor when not given."""
        if not self.fitted:
            raise ValidationError("the reward model is not fitted; call fit() with feedback first")
        texts = list(texts)
        prompts = [None] * len(texts) if prompts is None else list(prompts)
        if hrvs is None:
            hrvs = [self.extractor.extract(t) for t in texts]
        m = np.asarray(hrvs, dtype=np.float64).reshape(len(texts), -1)
        if m.shape[1] != HRV_DIM or len(prompts) != len(texts):
            raise ValidationError(
                f"need {len(texts)} prompts and hrvs of shape ({len(texts)}, {HRV_DIM}), "
                f"got {len(prompts)} prompts and hrvs of shape {m.shape}"
            )
        t = np.broadcast_to(np.asarray(validate_hrv(target_hrv, what="target_hrv")), m.shape)
        z = self._z(
            self._dense(texts, m, t, prompts), text_counts(texts, prompts), prompt_meaning(texts, prompts)
        )
        heads = []
        if self.preference_weights is not None:
            heads.append(
                _sigmoid((z @ self.preference_weights - self.preference_center) / self.preference_spread)
            )
        if self.rating_weights is not None:
            heads.append(np.clip((z @ self.rating_weights + self.rating_intercept - 1.0) / 4.0, 0.0, 1.0))
        return np.mean(heads, axis=0)

    def predict(
        self,
        text: str,
        target_hrv: Sequence[float],
        prompt: str | None = None,
        hrv: Sequence[float] | None = None,
    ) -> float:
        """Predicted human score of ``text`` written toward ``target_hrv``: a float in [0, 1]."""
        return float(self.score([text], target_hrv, [prompt], None if hrv is None else [hrv])[0])

    # -- fitting -------------------------------------------------------------------------------

    def fit(
        self,
        ratings: Sequence[RatingExample] = (),
        preferences: Sequence[PreferenceExample] = (),
        *,
        holdout_fraction: float = 0.2,
        seed: int = 0,
    ) -> dict[str, Any]:
        """Choose the regulariser and measure on held-out texts, then refit on every example; returns the
        held-out metrics (also in ``.metrics``). Needs at least 10 preferences or 10 ratings; a head is
        fitted only for a kind with enough data and some of it left after holding out texts."""
        pref, rate, y_rate = _usable_feedback(ratings, preferences, holdout_fraction)

        # one row per text side: preference a's, preference b's, rated texts
        sides = [(p.text_a, p.hrv_a, p.prompt) for p in pref] + [(p.text_b, p.hrv_b, p.prompt) for p in pref]
        sides += [(r.text, r.hrv, r.prompt) for r in rate]
        targets = [p.target_hrv for p in pref] * 2 + [r.target_hrv for r in rate]
        texts = list(dict.fromkeys(s[0] for s in sides))
        text_id = {t: i for i, t in enumerate(texts)}
        side_text = np.array([text_id[s[0]] for s in sides], dtype=np.int64)
        dense = self._dense(
            [s[0] for s in sides],
            np.array([validate_hrv(s[1], what="hrv") for s in sides]),
            np.array([validate_hrv(t, what="target_hrv") for t in targets]),
            [s[2] for s in sides],
        )
        documents = list(dict.fromkeys((s[0], s[2]) for s in sides))  # (text, prompt): what x is of
        document_id = {d: i for i, d in enumerate(documents)}
        side_document = np.array([document_id[(s[0], s[2])] for s in sides], dtype=np.int64)
        counts = text_counts(*zip(*documents))[side_document]
        meaning = prompt_meaning(*zip(*documents))[side_document]

        # hold out drafts: a prefix of the text order whose examples make holdout_fraction of each kind
        n_pref = len(pref)
        example_sides = [(i, n_pref + i) for i in range(n_pref)] + [
            (2 * n_pref + i,) for i in range(len(rate))
        ]
        kinds = [slice(0, n_pref), slice(n_pref, n_pref + len(rate))]
        first, last, cut = _holdout(example_sides, side_text, len(texts), kinds, holdout_fraction, seed)
        train = first > cut
        if not train[kinds[0]].any() and not train[kinds[1]].any():
            raise ValidationError(
                f"no feedback is left to train on after holding out {int(cut) + 1} of {len(texts)} texts: "
                "the examples share too few texts; send feedback on more different texts"
            )

        train_sides = np.concatenate([np.array(example_sides[i]) for i in np.flatnonzero(train)])
        self.mean = dense[train_sides].mean(axis=0)
        spread = dense[train_sides].std(axis=0)
        self.scale = np.maximum(spread, SCALE_FLOOR)
        _, first_side = np.unique(side_document[train_sides], return_index=True)
        document_frequency = (counts[train_sides[first_side]] > 0).sum(axis=0)
        self.idf = np.log((1.0 + len(first_side)) / (1.0 + document_frequency)) + 1.0
        z = self._z(dense, counts, meaning)

        metrics: dict[str, Any] = {
            "format_version": FORMAT_VERSION,
            "seed": seed,
            "holdout_fraction": holdout_fraction,
            "texts": len(texts),
            "heldout_texts": int(cut) + 1,
        }
        self.preference_weights = self.rating_weights = None

        def split(kind: slice) -> tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
            train_k, test_k = np.flatnonzero(train[kind]), np.flatnonzero(last[kind] <= cut)
            folds = _cv_folds(first[kind][train_k], last[kind][train_k], len(texts))
            return train_k, test_k, [(train_k[a], train_k[b]) for a, b in folds]

        if pref and train[kinds[0]].any():
            a, b = slice(0, n_pref), slice(n_pref, 2 * n_pref)
            a_preferred = np.array([p.preferred == "a" for p in pref])
            metrics.update(
                self._fit_preferences(z[a], z[b], dense[a], dense[b], a_preferred, *split(kinds[0]))
            )
        if rate and train[kinds[1]].any():
            rated = slice(2 * n_pref, None)
            metrics.update(self._fit_ratings(z[rated], dense[rated], y_rate, *split(kinds[1])))
        self.metrics = metrics
        return metrics

    def _fit_preferences(
        self,
        z_a: np.ndarray,
        z_b: np.ndarray,
        dense_a: np.ndarray,
        dense_b: np.ndarray,
        a_preferred: np.ndarray,
        train: np.ndarray,
        test: np.ndarray,
        folds: list[tuple[np.ndarray, np.ndarray]],
    ) -> dict[str, Any]:
        x = (z_a - z_b) * np.where(a_preferred, 1.0, -1.0)[:, None]  # preferred minus other
        grams = [x[:, block] @ x[:, block].T for block in _BLOCKS]

        spectra: dict[tuple[bytes, float, float], tuple[np.ndarray, np.ndarray]] = {}

        def fit(rows: np.ndarray, c: float, hrv_scale: float, text_scale: float) -> np.ndarray:
            key = (rows.tobytes(), hrv_scale, text_scale)
            if key not in spectra:  # one eigendecomposition per fold and block scales, shared by every C
                sub = np.ix_(rows, rows)
                factors = (hrv_scale, 1.0, text_scale)
                spectra[key] = _spectrum(sum(f * f * g[sub] for f, g in zip(factors, grams)))
            scaling = _block_scaling(hrv_scale, text_scale)
            return scaling**2 * (x[rows].T @ _bradley_terry(spectra[key], c))

        def loss(w: np.ndarray, rows: np.ndarray) -> float:
            return float(np.mean(np.logaddexp(0.0, -(x[rows] @ w))))

        c, hrv_scale, text_scale = _choose(BT_GRID, folds, fit, loss)
        measured = fit(train, c, hrv_scale, text_scale)
        self.preference_weights = fit(np.arange(len(x)), c, hrv_scale, text_scale)
        utilities = np.concatenate([z_a, z_b]) @ self.preference_weights
        self.preference_center = float(utilities.mean())
        self.preference_spread = float(max(utilities.std(), 1e-9))
        baseline = max(
            BASELINE_TERMS,
            key=lambda t: _order_accuracy(
                _term(dense_a[train], t), _term(dense_b[train], t), a_preferred[train]
            ),
        )
        return {
            "preferences": len(a_preferred),
            "preference_train": len(train),
            "preference_holdout": len(test),
            "preference_dropped": len(a_preferred) - len(train) - len(test),
            "pairwise_accuracy": _order_accuracy(
                z_a[test] @ measured, z_b[test] @ measured, a_preferred[test]
            ),
            "baseline_pairwise_accuracy": _order_accuracy(
                _term(dense_a[test], baseline), _term(dense_b[test], baseline), a_preferred[test]
            ),
            "baseline_term": baseline,
            "bt_inverse_regularisation": c,
            "bt_hrv_scale": hrv_scale,
            "bt_text_scale": text_scale,
        }

    def _fit_ratings(
        self,
        z: np.ndarray,
        dense: np.ndarray,
        y: np.ndarray,
        train: np.ndarray,
        test: np.ndarray,
        folds: list[tuple[np.ndarray, np.ndarray]],
    ) -> dict[str, Any]:
        from scipy.stats import spearmanr
        from sklearn.linear_model import Ridge

        def fit(
            rows: np.ndarray, alpha: float, hrv_scale: float, text_scale: float
        ) -> tuple[np.ndarray, float]:
            scaling = _block_scaling(hrv_scale, text_scale)
            model = Ridge(alpha=alpha).fit(z[rows] * scaling, y[rows])
            return model.coef_ * scaling, float(model.intercept_)

        def loss(head: tuple[np.ndarray, float], rows: np.ndarray) -> float:
            return float(np.mean((z[rows] @ head[0] + head[1] - y[rows]) ** 2))

        def spearman(a: np.ndarray, b: np.ndarray) -> float:
            if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
                return 0.0
            return float(spearmanr(a, b).statistic)

        alpha, hrv_scale, text_scale = _choose(RIDGE_GRID, folds, fit, loss)
        measured, intercept = fit(train, alpha, hrv_scale, text_scale)
        predicted = z[test] @ measured + intercept
        self.rating_weights, self.rating_intercept = fit(np.arange(len(y)), alpha, hrv_scale, text_scale)
        baseline = max(BASELINE_TERMS, key=lambda t: spearman(_term(dense[train], t), y[train]))
        return {
            "ratings": len(y),
            "rating_train": len(train),
            "rating_holdout": len(test),
            "rating_mae": float(np.mean(np.abs(np.clip(predicted, 1, 5) - y[test]))),
            "baseline_rating_mae": float(np.mean(np.abs(y[train].mean() - y[test]))),
            "rating_spearman": spearman(predicted, y[test]),
            "baseline_rating_spearman": spearman(_term(dense[test], baseline), y[test]),
            "rating_baseline_term": baseline,
            "ridge_alpha": alpha,
            "ridge_hrv_scale": hrv_scale,
            "ridge_text_scale": text_scale,
        }

    # -- persistence ---------------------------------------------------------------------------

    def to_state(self) -> tuple[dict[str, Any], bytes]:
        """``(params, weights)``: JSON-able parameters and a safetensors blob (what the service stores)."""
        if not self.fitted:
            raise ValidationError("cannot save an unfitted reward model; call fit() first")
        arrays = {"mean": self.mean, "scale": self.scale, "idf": self.idf}
        if self.preference_weights is not None:
            arrays["preference_weights"] = self.preference_weights
        if self.rating_weights is not None:
            arrays["rating_weights"] = self.rating_weights
        params = {
            "format_version": FORMAT_VERSION,
            "n_features": N_FEATURES,
            "quality_terms": list(QUALITY_TERMS),
            "relation_features": list(RELATION_FEATURES),
            "text_features": TEXT_FEATURES,
            "meaning_dim": MEANING_DIM,
            "rating_intercept": self.rating_intercept,
            "preference_center": self.preference_center,
            "preference_spread": self.preference_spread,
            "metrics": self.metrics,
            "version": self.version,
        }
        return params, save_arrays({k: np.ascontiguousarray(v, dtype=np.float64) for k, v in arrays.items()})

    @classmethod
    def from_state(cls, params: dict[str, Any], weights: bytes, extractor=None) -> ResonanceRewardModel:
        """The model saved as ``(params, weights)``; formats 1 (HRV block only) and 2 (no relation or
        prompt-meaning features) load with zero weights on what they lack, so they score as they did."""
        version = params.get("format_version")
        text = {"quality_terms": list(QUALITY_TERMS), "text_features": TEXT_FEATURES}
        expected = {
            1: {"n_features": N_HRV_FEATURES},
            2: {"n_features": OLD_DENSE[2] + TEXT_DIM, **text},
            3: {
                "n_features": N_FEATURES,
                "relation_features": list(RELATION_FEATURES),
                "meaning_dim": MEANING_DIM,
                **text,
            },
        }.get(version)
        if expected is None or any(params.get(k) != v for k, v in expected.items()):
            raise StorageError(
                f"reward model format {version} with {params.get('n_features')} features cannot be read by "
                f"this version (formats 1-3; format 3 has {N_FEATURES} features); retrain it "
                "(POST /v1/reward-model/train, or ResonanceRewardModel.fit)"
            )
        try:
            arrays = load_arrays(weights)
        except Exception as exc:  # safetensors raises several types for corrupt data
            raise StorageError(f"reward model weights are corrupt: {exc}") from None
        if version in OLD_DENSE:
            arrays = _upgrade(arrays, OLD_DENSE[version])
        model = cls(extractor=extractor)
        try:
            model.mean, model.scale, model.idf = arrays["mean"], arrays["scale"], arrays["idf"]
            model.rating_intercept = float(params["rating_intercept"])
            model.preference_center = float(params.get("preference_center", 0.0))
            model.preference_spread = float(params["preference_spread"])
        except (KeyError, TypeError, ValueError) as exc:
            raise StorageError(f"reward model parameters are incomplete ({exc}); retrain it") from None
        model.preference_weights = arrays.get("preference_weights")
        model.rating_weights = arrays.get("rating_weights")
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
            replace_folder(tmp, target)
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


def _spectrum(gram: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(U, sqrt(lambda))`` of the Gram matrix's eigenvalues above round-off: ``K = U diag(lambda) U^T``."""
    eigenvalues, vectors = np.linalg.eigh(gram)
    keep = eigenvalues > 1e-10 * max(float(eigenvalues.max()), 1e-300)
    return vectors[:, keep], np.sqrt(eigenvalues[keep])


def _bradley_terry(spectrum: tuple[np.ndarray, np.ndarray], c: float) -> np.ndarray:
    """``a`` with ``w = X^T a`` minimising ``sum_i log(1 + exp(-x_i . w)) + ||w||^2 / (2C)`` over the
    rows ``x_i`` of ``X`` (oriented differences; ``spectrum`` of their Gram matrix ``X X^T``). The
    optimum lies in the span of the rows, where ``X w = Phi beta`` with ``Phi = U sqrt(lambda)`` and
    ``||w|| = ||beta||``: L-BFGS on ``beta`` (as many unknowns as pairs), then ``a = U beta / sqrt(lambda)``."""
    from scipy.optimize import minimize

    vectors, roots = spectrum
    phi = vectors * roots

    def objective(beta: np.ndarray) -> tuple[float, np.ndarray]:
        margins = phi @ beta
        loss = np.logaddexp(0.0, -margins).sum() + beta @ beta / (2.0 * c)
        return float(loss), beta / c - phi.T @ _sigmoid(-margins)

    beta = minimize(objective, np.zeros(len(roots)), jac=True, method="L-BFGS-B", options={"maxiter": 1000}).x
    return vectors @ (beta / roots)


def _term(dense: np.ndarray, term: str) -> np.ndarray:
    """Baseline ``term``'s values in rows of the dense block, signed so that higher is better."""
    column, sign = BASELINE_TERMS[term]
    return sign * dense[:, column]


_BLOCKS = (
    slice(0, N_HRV_FEATURES),
    np.r_[N_HRV_FEATURES:N_DENSE, N_DENSE + TEXT_DIM : N_FEATURES],
    slice(N_DENSE, N_DENSE + TEXT_DIM),
)
"""Columns of ``z``: the HRV, quality (terms and relations) and text (grams and prompt meaning) blocks."""


def _block_scaling(hrv_scale: float, text_scale: float) -> np.ndarray:
    """Column factors of ``z``: ``s_h`` on the HRV block, 1 on the quality block, ``s_x`` on the text block."""
    return np.r_[
        np.full(N_HRV_FEATURES, hrv_scale),
        np.ones(N_QUALITY),
        np.full(TEXT_DIM, text_scale),
        np.ones(MEANING_DIM),
    ]


def _upgrade(arrays: dict[str, np.ndarray], old_dense: int) -> dict[str, np.ndarray]:
    """Arrays of an older format with ``old_dense`` dense columns (then the gram block, if it had one)
    padded to this format: zero weight on every column it lacks."""
    missing = N_DENSE - old_dense
    upgraded = {
        "mean": np.r_[arrays["mean"], np.zeros(missing)],
        "scale": np.r_[arrays["scale"], np.ones(missing)],
        "idf": arrays.get("idf", np.zeros(TEXT_DIM)),
    }
    for head in ("preference_weights", "rating_weights"):
        if head in arrays:
            w = arrays[head]
            grams = w[old_dense:] if len(w) > old_dense else np.zeros(TEXT_DIM)
            upgraded[head] = np.r_[w[:old_dense], np.zeros(missing), grams, np.zeros(MEANING_DIM)]
    return upgraded
