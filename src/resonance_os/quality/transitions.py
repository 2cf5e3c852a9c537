"""A learned sentence-transition model of paragraph order: the fast coherence term's order reader.

The linear entity-grid features of ``quality.coherence`` rank a held-out paragraph above its shuffles
only about two times in three, and refitting them on 27 times the data gained 0.03. This model keeps
their decomposition, so the mean over all ``n!`` orders stays exact and cheap, and makes each part a
small learned network over what the fast path already reads of a sentence (its ``coherence.Unit``:
opening word and class, persons, markers, punctuation, content stems and the topic term's word
vectors). For sentences ``s_1 .. s_n`` in order ``pi``:

    S(pi) = sum_k R(s_pi(k))[role(k)]  +  sum_k A(s_pi(k), s_pi(k+1))  +  sum_{k<l} G(s_pi(k), s_pi(l))

    e_i        = relu(W_s [z_i, E_first[first word of i], E_open[first two words of i]] + b_s)
    R(s_i)     = W_r e_i + b_r                                    3 roles: first / middle / last
    A, G(i, j) = W_o relu(W_a e_i + W_b e_j + W_m (e_i * e_j) + W_p p_ij + b_h) + b_o   adjacent, precedence

with ``z_i`` the sentence features of :func:`sentence_features` (the sentence's place among the others
included: how central its stems and its meaning are; never its position; with the counts of its stop
words where the model has a stop-word list), ``W_m`` and a learned content-stem embedding appended to
``z_i`` present only where the model file has them, and ``p_ij`` the pair
features of :func:`pair_features` (shared stems, "a X" then "the X", shared persons and names, the
cosine of the two sentences' word vectors, ...). Then, as for the linear model,

    E[S]  = sum_k mean_i R(s_i)[role(k)] + (n-1) mean_{i!=j} A(i,j) + n(n-1)/2 mean_{i!=j} G(i,j)
    order = sigmoid(alpha * (S(pi) - E[S]) / (n - 1) + beta)

The weights are fitted pairwise (the real order against random others) on public-domain book
paragraphs by ``scripts/train_coherence_transitions.py`` and shipped in
``data/coherence_transitions.npz``; inference is numpy, a few small matrix products a paragraph. The
coherence term adds ``linear_weight`` times the linear model's order log-odds
(``CoherenceModel.order_logit``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from resonance_os.quality.sentence_cues import MARKERS, OPENING_CLASSES, PERSON_NAMES, opening_class

if TYPE_CHECKING:
    from resonance_os.quality.coherence import Unit

TRANSITIONS_FILE = "coherence_transitions.npz"
_MARKER_INDEX = {m: k for k, m in enumerate(MARKERS)}
_CLASS_INDEX = {c: k for k, c in enumerate(OPENING_CLASSES)}
_PERSON_INDEX = {p: k for k, p in enumerate(PERSON_NAMES)}
_SCALARS = 15
SENTENCE_FEATURES = _SCALARS + len(OPENING_CLASSES) + len(PERSON_NAMES) + len(MARKERS) + 64
"""Length of :func:`sentence_features`' rows: scalars, opening class, persons, markers, word vector."""
PAIR_FEATURES = 15
"""Length of :func:`pair_features`' vectors."""


def _unit_vectors(units: Sequence[Unit]) -> np.ndarray:
    """Each sentence's unit-length word vector (64 zeros for one without a vector), ``n x 64``."""
    out = np.zeros((len(units), 64), dtype=np.float32)
    for i, u in enumerate(units):
        if u.vector is not None:
            norm = float(np.sqrt(u.vector @ u.vector))
            if norm > 0:
                out[i] = u.vector / norm
    return out


def sentence_features(
    units: Sequence[Unit], vectors: np.ndarray | None = None, function_words: dict[str, int] | None = None
) -> np.ndarray:
    """``z_i`` for each sentence (``n x SENTENCE_FEATURES``, float32, plus one column per entry of
    ``function_words`` when given: log1p of how often the sentence uses that stop word): log length; question,
    exclamation, dialogue, fragment, open end; names (any, log count); an ordinal opening; log counts
    of content stems, "the X" and "a X" stems; centrality (share of the others sharing a stem) and
    semantic centrality (cosine with the sum of the others' vectors); has a vector; then one-hots of
    the opening class and the persons, marker counts, and the unit word vector. ``vectors``: the
    units' :func:`_unit_vectors` when the caller has them."""
    n = len(units)
    v = _unit_vectors(units) if vectors is None else vectors
    total = v.sum(axis=0)
    function_words = function_words or {}
    z = np.zeros((n, SENTENCE_FEATURES + len(function_words)), dtype=np.float32)
    classes = _SCALARS
    persons = classes + len(OPENING_CLASSES)
    markers = persons + len(PERSON_NAMES)
    for i, u in enumerate(units):
        rest = total - v[i]
        rest_norm = float(np.sqrt(rest @ rest))
        central = sum(1 for k, w in enumerate(units) if k != i and not w.stems.isdisjoint(u.stems))
        z[i, :_SCALARS] = (
            math.log(max(u.length, 1)),
            u.question,
            u.exclaims,
            u.dialogue,
            u.fragment,
            u.open_end,
            bool(u.names),
            math.log1p(len(u.names)),
            u.rank > 0,
            math.log1p(len(u.stems)),
            math.log1p(len(u.definite)),
            math.log1p(len(u.indefinite)),
            central / max(n - 1, 1),
            float(v[i] @ rest) / rest_norm if rest_norm > 1e-9 else 0.0,
            u.vector is not None,
        )
        z[i, classes + _CLASS_INDEX[opening_class(u)]] = 1.0
        for p in u.persons:
            z[i, persons + _PERSON_INDEX[p]] = 1.0
        for m in u.markers:
            z[i, markers + _MARKER_INDEX[m]] += 1.0
        for word in u.function_words:
            k = function_words.get(word)
            if k is not None:
                z[i, SENTENCE_FEATURES + k] += 1.0
    z[:, SENTENCE_FEATURES - 64 : SENTENCE_FEATURES] = v
    if function_words:
        np.log1p(z[:, SENTENCE_FEATURES:], out=z[:, SENTENCE_FEATURES:])
    return z


def pair_features(units: Sequence[Unit], vectors: np.ndarray | None = None) -> np.ndarray:
    """``p_ij`` for sentence ``j`` after sentence ``i`` (``n x n x PAIR_FEATURES``, float32; the
    diagonal is zeros): log shared stems; j's opening stems in i and the reverse; "a X" in i then
    "the X" in j and the reverse; shared persons; shared names; "the X" in j after an X in i; "a X"
    in j after an X in i; he/she in j after a name in i; a name in j that i lacks; ordinal openings
    in order (+1) or not (-1); i a question and j not; the cosine of their word vectors; the Jaccard
    share of their stems."""
    n = len(units)
    v = _unit_vectors(units) if vectors is None else vectors
    cosine = v @ v.T
    p = np.zeros((n, n, PAIR_FEATURES), dtype=np.float32)
    for i, a in enumerate(units):
        for j, b in enumerate(units):
            if i == j:
                continue
            shared = len(a.stems & b.stems)
            union = len(a.stems | b.stems)
            p[i, j] = (
                math.log1p(shared),
                math.log1p(len(b.early & a.stems)),
                math.log1p(len(a.early & b.stems)),
                len(a.indefinite & b.definite),
                len(a.definite & b.indefinite),
                len(a.persons & b.persons),
                len(a.names & b.names),
                len(b.definite & a.stems),
                len(b.indefinite & a.stems),
                bool(a.names) and ("he" in b.persons or "she" in b.persons),
                not b.names <= a.names,
                (1.0 if b.rank > a.rank else -1.0) if a.rank and b.rank else 0.0,
                a.question and not b.question,
                cosine[i, j],
                shared / union if union else 0.0,
            )
    return p


def opening_keys(u: Unit) -> tuple[str, str]:
    """The vocabulary keys of a sentence's opening: its first word, and its first two words."""
    return u.first, f"{u.first}_{u.second}"


@dataclass(frozen=True, eq=False)
class TransitionModel:
    """The learned transition model (module docstring): weights by name as
    ``scripts/train_coherence_transitions.py`` writes them, and the opening vocabularies."""

    weights: dict[str, np.ndarray]
    first_words: dict[str, int]
    openings: dict[str, int]
    alpha: float
    beta: float
    function_words: dict[str, int]
    stems: dict[str, int] = field(default_factory=dict)
    """Content stems with a learned embedding (``stem_embedding`` rows from 1), when the model has one."""
    linear_weight: float = 0.0
    """The weight of the linear model's order log-odds added to this model's in the coherence term
    (``CoherenceModel.order_logit``), fitted on validation paragraphs by the training script."""

    @classmethod
    def load(cls, path: str | Path | BinaryIO) -> TransitionModel:
        """A model from an ``.npz`` file (a path or an open binary file) of the training script."""
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
        first = [str(w) for w in arrays.pop("first_words")]
        openings = [str(w) for w in arrays.pop("openings")]
        function = [str(w) for w in arrays.pop("function_words", np.array([], dtype=str))]
        stems = [str(w) for w in arrays.pop("stems", np.array([], dtype=str))]
        alpha, beta, *linear = (float(x) for x in arrays.pop("calibration"))
        weights = {k: v.astype(np.float32) for k, v in arrays.items()}
        return cls(
            weights,
            {w: k + 1 for k, w in enumerate(first)},
            {w: k + 1 for k, w in enumerate(openings)},
            alpha,
            beta,
            {w: k for k, w in enumerate(function)},
            {w: k + 1 for k, w in enumerate(stems)},
            linear[0] if linear else 0.0,
        )

    def parts(self, units: Sequence[Unit]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(R, A, G)``: role scores ``n x 3`` and the adjacent and precedence scores ``n x n``."""
        w = self.weights
        vectors = _unit_vectors(units)
        z = sentence_features(units, vectors, self.function_words)
        keys = [opening_keys(u) for u in units]
        first = w["first_embedding"][[self.first_words.get(f, 0) for f, _ in keys]]
        opens = w["opening_embedding"][[self.openings.get(o, 0) for _, o in keys]]
        inputs = [z, first, opens]
        if "stem_embedding" in w:
            inputs.append(self._stem_means(units))
        e = np.maximum(np.concatenate(inputs, axis=1) @ w["sentence_w"] + w["sentence_b"], 0.0)
        roles = e @ w["role_w"] + w["role_b"]
        hidden = (
            (e @ w["pair_a"])[:, None, :]
            + (e @ w["pair_b"])[None, :, :]
            + pair_features(units, vectors) @ w["pair_p"]
            + w["pair_bias"]
        )
        if "pair_m" in w:
            hidden += (e[:, None, :] * e[None, :, :]) @ w["pair_m"]
        out = np.maximum(hidden, 0.0) @ w["pair_out"] + w["pair_out_bias"]
        return roles, out[..., 0], out[..., 1]

    def _stem_means(self, units: Sequence[Unit]) -> np.ndarray:
        """Each sentence's mean learned stem embedding over its known stems (zeros if none)."""
        table = self.weights["stem_embedding"]
        out = np.zeros((len(units), table.shape[1]), dtype=np.float32)
        for i, u in enumerate(units):
            rows = [k for k in map(self.stems.get, u.stems) if k]
            if rows:
                out[i] = table[rows].mean(axis=0)
        return out

    def order_gain(self, units: Sequence[Unit]) -> float:
        """``S(pi) - E[S]`` of ``units`` in the given order (0.0 for fewer than two)."""
        n = len(units)
        if n < 2:
            return 0.0
        roles, adjacent, precedence = self.parts(units)
        off = ~np.eye(n, dtype=bool)
        k = np.arange(n)
        score = roles[0, 0] + roles[n - 1, 2] + roles[k[1:-1], 1].sum()
        score += adjacent[k[:-1], k[1:]].sum() + np.triu(precedence, 1).sum()
        means = roles.mean(axis=0)
        mean = means[0] + means[2] + (n - 2) * means[1]
        mean += adjacent[off].mean() * (n - 1) + precedence[off].mean() * n * (n - 1) / 2
        return float(score - mean)

    def order_logit(self, units: Sequence[Unit]) -> float:
        """``alpha * (S(pi) - E[S]) / (n - 1) + beta``: the log-odds that ``units`` (two or more) are
        in their real order."""
        return self.alpha * self.order_gain(units) / (len(units) - 1) + self.beta


@cache
def transition_model() -> TransitionModel:
    """The shipped transition model (``data/coherence_transitions.npz``), loaded once per process."""
    with files("resonance_os.quality").joinpath(f"data/{TRANSITIONS_FILE}").open("rb") as handle:
        return TransitionModel.load(handle)
