"""Build ``src/resonance_os/quality/data/fluency_ngram.npz``, the n-gram model behind ``NgramFluency``.

    .venv/bin/python scripts/train_fluency.py [--order 4] [--min-count 2] [--folds 4] [--out PATH]

1. Interpolated modified Kneser-Ney (Chen & Goodman 1999) on ``corpus`` ``split="train"`` documents
   (pydoc + fortunes). Highest order: raw counts; lower orders: continuation counts
   ``N1+(. h w)``; discounts ``D1, D2, D3+`` per order from count-of-counts
   (``Y = n1 / (n1 + 2 n2)``, ``Dk = k - (k + 1) Y n_{k+1} / n_k``); the unigram level interpolates
   with the uniform distribution. Stored ARPA-style: ``log P(w | h)`` for every seen n-gram and
   ``log gamma(h)`` for every seen context, so scoring is a back-off lookup.
2. Calibration ``sigmoid(a * (SLOR - b))``: the train documents are cut into ``--folds`` folds; each
   fold's paragraphs (``corpus.document_paragraphs``) are scored by a model fitted on the other folds,
   with their word salad and within-sentence shuffles as negatives, and ``a, b`` fitted by logistic
   regression (classes weighted equally) on those out-of-fold per-sentence SLORs.
   ``--lm-paragraphs N`` instead fits and prints ``LMFluency``'s two constants (slow).
3. Prints held-out perplexity (``split="heldout"``) and writes the file atomically (temporary name,
   then rename), with fixed zip timestamps so the same inputs give the same bytes.
"""

from __future__ import annotations

import argparse
import io
import math
import os
import random
import zipfile
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from resonance_os.core.text import sentence_texts
from resonance_os.quality import corpus
from resonance_os.quality.damage import shuffle_within_sentences, word_salad
from resonance_os.quality.fluency import BOS, DATA_FILE, EOS, NUM, UNK, NgramFluency, sentence_tokens

OUT = Path(__file__).resolve().parents[1] / "src" / "resonance_os" / "quality" / "data" / DATA_FILE


def train_documents() -> list[str]:
    return corpus.pydoc_paragraphs("train") + corpus.fortune_entries("train")


def fit(documents: list[str], order: int, min_count: int) -> dict[str, np.ndarray]:
    """Kneser-Ney tables (the arrays ``NgramFluency`` reads) with calibration ``[1, 0]``."""
    sentences = [s for doc in documents for s in sentence_tokens(doc)]
    word_counts = Counter(w for s in sentences for w in s)
    kept = sorted(w for w, c in word_counts.items() if c >= min_count and w not in (BOS, EOS, UNK, NUM))
    vocab = [BOS, EOS, UNK, NUM, *kept]
    ids = {w: i for i, w in enumerate(vocab)}
    unk = ids[UNK]
    top = Counter()
    for s in sentences:
        seq = [ids[BOS]] * (order - 1) + [ids.get(w, unk) for w in s] + [ids[EOS]]
        top.update(tuple(seq[i : i + order]) for i in range(len(seq) - order + 1))
    # adjusted counts: raw at the top order, continuation counts N1+(. g) below
    counts = {order: top}
    for n in range(order - 1, 0, -1):
        counts[n] = Counter(g[1:] for g in counts[n + 1])
    tables: dict[str, np.ndarray] = {"vocab": np.array(vocab), "order": np.array(order)}
    lower: dict[tuple[int, ...], float] = {}
    for n in range(1, order + 1):
        c = counts[n]
        if n == 1:  # every token but <s> gets probability, also one unseen in this fold (<num>)
            c = Counter({(i,): 0 for i in range(1, len(vocab))}) + c
        cc = Counter(v for v in c.values() if 0 < v <= 4)
        y = cc[1] / (cc[1] + 2 * cc[2])
        discount = [0.0] + [max(k - (k + 1) * y * cc[k + 1] / cc[k], 0.0) for k in (1, 2, 3)]
        total: dict[tuple[int, ...], int] = defaultdict(int)
        mass: dict[tuple[int, ...], float] = defaultdict(float)
        for g, v in c.items():
            total[g[:-1]] += v
            mass[g[:-1]] += discount[min(v, 3)]
        uniform = 1.0 / (len(vocab) - 1)  # every token but <s> can be predicted
        logp = {}
        for g, v in c.items():
            h = g[:-1]
            below = uniform if n == 1 else math.exp(lower[g[1:]])
            logp[g] = math.log((v - discount[min(v, 3)]) / total[h] + mass[h] / total[h] * below)
        keys = sorted(logp)
        tables[f"ngrams_{n}"] = np.array(keys, dtype=np.int32).reshape(len(keys), n)
        tables[f"logp_{n}"] = np.array([logp[k] for k in keys], dtype=np.float32)
        if n > 1:
            contexts = sorted(total)
            tables[f"contexts_{n - 1}"] = np.array(contexts, dtype=np.int32).reshape(len(contexts), n - 1)
            tables[f"backoff_{n - 1}"] = np.array(
                [math.log(mass[h] / total[h]) for h in contexts], dtype=np.float32
            )
        lower = logp
    unigram = np.zeros(len(vocab))
    for g, v in Counter(ids.get(w, unk) for s in sentences for w in [*s, EOS]).items():
        unigram[g] = v
    tables["unigram"] = np.log(np.maximum(unigram, 0.5) / unigram.sum()).astype(np.float32)
    tables["calibration"] = np.array([1.0, 0.0])
    return tables


def perplexity(model: NgramFluency, documents: list[str]) -> float:
    parts = [p for doc in documents for p in model._sentence_logprobs(doc)]
    return math.exp(-sum(lp for lp, _, _ in parts) / sum(m for _, _, m in parts))


def labelled_slors(model: NgramFluency, paragraphs: list[str], seed: int) -> tuple[list[float], list[int]]:
    """Per-sentence SLOR of each paragraph (label 1), of its salad and of its shuffle (label 0)."""
    x, y = [], []
    for i, text in enumerate(paragraphs):
        for label, version in (
            (1, text),
            (0, word_salad(text, seed + i)),
            (0, shuffle_within_sentences(text, seed + i)),
        ):
            parts = model._sentence_logprobs(version)
            x += [ratio / m for _, ratio, m in parts]
            y += [label] * len(parts)
    return x, y


def logistic_fit(x: list[float], y: list[int]) -> tuple[float, float]:
    """(a, b) of ``P(real) = sigmoid(a * (x - b))`` by Newton's method, both classes weighted equally."""
    xs, ys = np.array(x), np.array(y, dtype=float)
    weights = np.where(ys == 1, 0.5 / ys.sum(), 0.5 / (1 - ys).sum())
    features = np.stack([xs, np.ones_like(xs)], axis=1)
    theta = np.zeros(2)
    for _ in range(50):
        p = 1 / (1 + np.exp(-features @ theta))
        gradient = features.T @ (weights * (ys - p))
        hessian = (features * (weights * p * (1 - p))[:, None]).T @ features
        theta += np.linalg.solve(hessian + 1e-9 * np.eye(2), gradient)
    return float(theta[0]), float(-theta[1] / theta[0])


def lm_calibration(n: int, seed: int = 0, judge: bool = False) -> tuple[float, float]:
    """``LMFluency``'s (slope, midpoint): the logistic fit of per-sentence mean token log-likelihood,
    ``n`` train paragraphs (half pydoc, half fortunes) against their salad and shuffle; ``judge``: of
    the fluency judge's model (``quality.judge``, Gemma-3-270M) instead of the reference LM."""
    from resonance_os.quality.fluency import LMFluency
    from resonance_os.quality.judge import fluency_judge

    rng = random.Random(seed)
    paragraphs = [
        p
        for docs, k in (
            (corpus.pydoc_paragraphs("train"), n // 2),
            (corpus.fortune_entries("train"), n - n // 2),
        )
        for p in rng.sample(corpus.document_paragraphs(docs), k)
    ]
    lm = fluency_judge() if judge else LMFluency()
    x, y = [], []
    for i, text in enumerate(paragraphs):
        for label, version in ((1, text), (0, word_salad(text, i)), (0, shuffle_within_sentences(text, i))):
            sentences = sentence_texts(version)
            x += [ll / tokens for ll, tokens in lm._sentence_loglik(sentences)]
            y += [label] * len(sentences)
    return logistic_fit(x, y)


def save(tables: dict[str, np.ndarray], path: Path) -> None:
    """``.npz`` (deflated, fixed timestamps) written to a temporary name, then renamed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(tables):
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.asarray(tables[name]), allow_pickle=False)
            archive.writestr(
                zipfile.ZipInfo(f"{name}.npy", (1980, 1, 1, 0, 0, 0)), buffer.getvalue(), zipfile.ZIP_DEFLATED
            )
    os.replace(tmp, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--order", type=int, default=4)
    parser.add_argument("--min-count", type=int, default=2)
    parser.add_argument("--folds", type=int, default=4)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--lm-paragraphs", type=int, default=0, help="only fit LMFluency's calibration")
    parser.add_argument(
        "--judge", action="store_true", help="with --lm-paragraphs: the judge's (Gemma-3-270M)"
    )
    args = parser.parse_args()
    if args.lm_paragraphs:
        slope, midpoint = lm_calibration(args.lm_paragraphs, judge=args.judge)
        prefix = "JUDGE" if args.judge else "LM"
        print(f"{prefix}_SLOPE = {slope:.4f}\n{prefix}_MIDPOINT = {midpoint:.4f}")
        return
    documents = train_documents()
    x, y = [], []
    for fold in range(args.folds):
        model = NgramFluency(
            fit([d for i, d in enumerate(documents) if i % args.folds != fold], args.order, args.min_count)
        )
        held = corpus.document_paragraphs([d for i, d in enumerate(documents) if i % args.folds == fold])
        fx, fy = labelled_slors(model, held, seed=1000 * fold)
        x += fx
        y += fy
    a, b = logistic_fit(x, y)
    tables = fit(documents, args.order, args.min_count)
    tables["calibration"] = np.array([a, b])
    model = NgramFluency(tables)
    for name, docs in (
        ("pydoc", corpus.pydoc_paragraphs("heldout")),
        ("fortunes", corpus.fortune_entries("heldout")),
    ):
        print(f"held-out perplexity {name}: {perplexity(model, docs):.1f}")
    print(f"order {args.order}, vocabulary {len(tables['vocab'])}, calibration a={a:.4f} b={b:.4f}")
    save(tables, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
