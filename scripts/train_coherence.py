"""Fit the coherence model (``quality.coherence``) on training prose; print held-out figures.

    .venv/bin/python scripts/train_coherence.py [--books build/order_corpus] [--out FILE]   # writes data/coherence.json

``--books``: the book paragraphs of ``scripts/build_order_corpus.py`` (public-domain novels, children's
books and philosophy for training; history, essays and a book teaching a programming language held
out, never fitted or tuned on): the order weights are fitted on the training books too (BOOK_PERMS
orders each; ``--book-limit N``: a seeded sample of N of them), and the held-out figures are printed
per book domain as well. ``--out``: write the model elsewhere (to compare before installing it).

Paragraphs in their real sentence order come from ``quality.corpus.document_paragraphs`` (pydoc
prose and fortunes, which the ``dev`` extra installs), train split only, 3+ sentences, plus, for
the connectedness fit only, the training-only docstring paragraphs
(``quality.corpus.docstring_paragraphs``: the standard library's and installed BSD/MIT packages'), whose
words the topic vectors never saw, so their semantic features are as on new text. (Order weights
fitted with the docstrings too ranked a validation part of the pydoc and fortune training paragraphs
worse, so they are left out of the order fit.) Held-out figures are for pydoc and fortunes (and the
held-out book domains with ``--books``).

* Order weights ``w``: pairwise ranking (Joachims 2002; the entity-grid set-up of Barzilay & Lapata
  2008): L2 logistic regression without intercept on ``Phi(real) - Phi(perm)`` (label 1) and its
  negation (label 0), PERMS random different orders per paragraph; features seen in fewer than
  MIN_COUNT training paragraphs are dropped.
* ``alpha, beta``: logistic regression of real (1) vs a random different order (0) on the per-pair
  order gain ``(S - E[S]) / (n - 1)``.
* Connectedness ``v, v_0``: logistic regression of real paragraphs (1) vs as many sentences drawn
  from as many other training paragraphs (0), on the order-free cohesion features.

Deterministic (fixed seeds); written to a temporary name and renamed. The held-out figures are
measured after fitting and never feed back into it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy.sparse import vstack
from sklearn.feature_extraction import DictVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from resonance_os.quality import corpus
from resonance_os.quality.coherence import (
    ROLES,
    CoherenceModel,
    Unit,
    adjacent_features,
    connectedness_features,
    precedence_features,
    role_features,
    text_units,
)

PERMS = 20
BOOK_PERMS = 4
MIN_COUNT = 10
C = 0.1
SEED = 0
OUT = Path(__file__).resolve().parents[1] / "src/resonance_os/quality/data/coherence.json"


def paragraphs(split: str, books: Path | None = None, book_limit: int = 0) -> dict[str, list[list[Unit]]]:
    """Sentence units of each real paragraph with 3+ sentences, per source (docstrings: train only;
    book paragraphs per domain, prefixed "books/")."""
    sources = {
        "pydoc": corpus.document_paragraphs(corpus.pydoc_paragraphs(split)),
        "fortunes": corpus.document_paragraphs(corpus.fortune_entries(split)),
    }
    if split == "train":
        sources["docstrings"] = corpus.docstring_paragraphs()
    if books is not None:
        rows = corpus.order_corpus(books, split)
        if book_limit and len(rows) > book_limit:
            rows = random.Random(SEED).sample(rows, book_limit)
        for row in rows:
            sources.setdefault("books/" + row["domain"], []).append(row["text"])
    units = {name: [text_units(p) for p in texts] for name, texts in sources.items()}
    return {name: [u for u in items if len(u) >= 3] for name, items in units.items()}


def phi(units: list[Unit], order: list[int]) -> Counter[str]:
    """Feature totals ``Phi`` of ``units`` in ``order``: the three sums of ``S`` in the module docstring."""
    n = len(order)
    out: Counter[str] = Counter()
    for k, i in enumerate(order):
        role = ROLES[0] if k == 0 else ROLES[2] if k == n - 1 else ROLES[1]
        for name, value in role_features(units[i], units):
            out[role + name] += value
        if k + 1 < n:
            for name, value in adjacent_features(units[i], units[order[k + 1]]):
                out[name] += value
        for j in order[k + 1 :]:
            for name, value in precedence_features(units[i], units[j]):
                out[name] += value
    return out


def different_orders(n: int, count: int, rng: random.Random) -> list[list[int]]:
    """``count`` random orders of ``range(n)``, each different from the identity."""
    identity = list(range(n))
    orders: list[list[int]] = []
    while len(orders) < count:
        order = rng.sample(identity, n)
        if order != identity:
            orders.append(order)
    return orders


def fit_order(train: list[list[Unit]], books: Sequence[list[Unit]] = ()) -> dict[str, float]:
    """Ranking weights ``w`` by feature name (PERMS orders of each ``train`` paragraph, BOOK_PERMS of
    each of ``books``)."""
    rng = random.Random(SEED)
    seen: Counter[str] = Counter()
    rows = []
    for k, units in enumerate([*train, *books]):
        real = phi(units, list(range(len(units))))
        seen.update(real.keys())
        for order in different_orders(len(units), PERMS if k < len(train) else BOOK_PERMS, rng):
            diff = Counter(real)
            diff.subtract(phi(units, order))
            rows.append(diff)
    keep = {name for name, count in seen.items() if count >= MIN_COUNT}
    vectorizer = DictVectorizer()
    x = vectorizer.fit_transform([{k: v for k, v in row.items() if k in keep and v} for row in rows])
    y = np.r_[np.ones(x.shape[0]), np.zeros(x.shape[0])]
    ranker = LogisticRegression(C=C, fit_intercept=False, max_iter=5000).fit(vstack([x, -x]), y)
    names = vectorizer.get_feature_names_out()
    return {str(n): round(float(w), 4) for n, w in zip(names, ranker.coef_[0], strict=True) if round(w, 4)}


def unrelated(data: list[list[Unit]], rng: random.Random) -> list[list[Unit]]:
    """For each paragraph, as many sentences, each from a different other paragraph."""
    out = []
    for p, units in enumerate(data):
        others = rng.sample([q for q in range(len(data)) if q != p], len(units))
        out.append([rng.choice(data[q]) for q in others])
    return out


def paired_auc(model: CoherenceModel, data: list[list[Unit]], seed: int = 1) -> float:
    """Share of (real, different order) pairs where the real order scores higher (ties count half)."""
    rng = random.Random(seed)
    wins = []
    for units in data:
        real = model.order_gain(units)
        for order in different_orders(len(units), PERMS, rng):
            other = model.order_gain([units[i] for i in order])
            wins.append(1.0 if real > other else 0.5 if real == other else 0.0)
    return float(np.mean(wins))


def fit(train: dict[str, list[list[Unit]]]) -> dict:
    """The ``coherence.json`` dictionary fitted on ``train``."""
    everything = train["pydoc"] + train["fortunes"]
    weights = fit_order(
        everything, [u for name, items in train.items() if name.startswith("books/") for u in items]
    )
    model = CoherenceModel(weights, 1.0, 0.0, ())
    rng = random.Random(SEED + 1)
    real, other = [], []
    for units in everything:
        n = len(units)
        real.append(model.order_gain(units) / (n - 1))
        (order,) = different_orders(n, 1, rng)
        other.append(model.order_gain([units[i] for i in order]) / (n - 1))
    calibration = LogisticRegression(C=1e4).fit(
        np.array(real + other)[:, None], [1] * len(real) + [0] * len(other)
    )
    rng = random.Random(SEED + 2)
    kept = [items for name, items in train.items() if not name.startswith("books/")]
    real_all = [units for source in kept for units in source]
    mixed = [units for source in kept for units in unrelated(source, rng)]
    c = np.array([connectedness_features(u) for u in real_all + mixed])
    connected = LogisticRegression(C=1e4).fit(c, [1] * len(real_all) + [0] * len(mixed))
    return {
        "format": 1,
        "alpha": round(float(calibration.coef_[0][0]), 4),
        "beta": round(float(calibration.intercept_[0]), 4),
        "connected_weights": [round(float(v), 4) for v in [*connected.coef_[0], connected.intercept_[0]]],
        "weights": dict(sorted(weights.items())),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--books", type=Path, default=None, help="build/order_corpus (scripts/build_order_corpus.py)"
    )
    parser.add_argument(
        "--book-limit", type=int, default=0, help="a seeded sample of N training book paragraphs"
    )
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write the model (default {OUT})")
    args = parser.parse_args()
    out = args.out
    start = time.perf_counter()
    train = paragraphs("train", args.books, args.book_limit)
    heldout = paragraphs("heldout", args.books)
    data = fit(train)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n", "utf-8")
    os.replace(tmp, out)
    model = CoherenceModel.from_json(data)
    print(f"wrote {out}: {len(data['weights'])} weights, {out.stat().st_size} bytes")
    print("train paragraphs: " + ", ".join(f"{name} {len(items)}" for name, items in train.items()))
    print(f"alpha {data['alpha']}, beta {data['beta']}, connected {data['connected_weights']}")
    rng = random.Random(SEED + 3)
    for name, items in heldout.items():
        real = [model.score_units(u) for u in items]
        mixed = [model.score_units(u) for u in unrelated(items, rng)]
        print(
            f"{name:8s} train paired AUC {paired_auc(model, train[name]) if name in train else float('nan'):.3f} | held-out ({len(items)} paragraphs): "
            f"paired AUC real > different order {paired_auc(model, items):.3f}, "
            f"AUC real > unrelated sentences {roc_auc_score([1] * len(real) + [0] * len(mixed), real + mixed):.3f}, "
            f"mean score real {np.mean(real):.3f} unrelated {np.mean(mixed):.3f}"
        )
    print(f"{time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
