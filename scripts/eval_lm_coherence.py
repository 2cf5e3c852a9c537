"""Calibrate ``quality.coherence.LMCoherence`` on training prose and measure it on held-out prose.

    .venv/bin/python scripts/eval_lm_coherence.py --fit 40 [--reader trained]   # LM_CALIBRATION from 40 train paragraphs
    .venv/bin/python scripts/eval_lm_coherence.py             # held-out figures (40 pydoc + 60 fortunes)
    .venv/bin/python scripts/eval_lm_coherence.py --unrelated 15   # real vs unrelated sentences

Paragraphs: ``corpus.document_paragraphs`` with 3+ sentences, the first ``--pydoc`` pydoc ones and a
seeded sample of ``--fortunes`` fortunes (the ``dev`` extra installs them). Each paragraph's negative is
``damage.shuffle_sentences(p, seed=i)``, one different order.

* ``--fit N``: gains of N train paragraphs (half each source; with ``--books``, a third each from
  pydoc, fortunes and the training books) and two shuffles of each, with the shipped ``LM_ORDERS``;
  logistic regression real (1) vs shuffled (0) on the reader's gain and the fast model's order
  log-odds, classes weighted equally: ``(slope, bias, fast_weight)`` for ``LM_CALIBRATION``.
* held-out: paired AUC ``P(score(real) > score(shuffled))`` (ties 1/2). "LM order": the likelihood
  alone, ``P(LL(real) > LL(shuffled))`` (both orders share the reference orders, so this holds for any
  ``orders``: measured with ``orders=1``, 3 sequences per paragraph instead of ``LM_ORDERS + 2``);
  "CoherenceModel": the fast model's ``S - E[S]``; "LMCoherence": the shipped order log-odds
  ``slope * gain + fast_weight * alpha * (S - E[S]) / (n - 1)`` (biases and ``connected`` are equal for both
  orders). Seconds per paragraph: ``score_many`` of ``--timed`` paragraphs, shipped settings.
* ``--unrelated N``: AUC real > unrelated sentences for the scores themselves.
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np
import torch

from resonance_os.core.text import sentence_texts
from resonance_os.quality import coherence, corpus, damage


def paragraphs(split: corpus.Split, n_pydoc: int, n_fortunes: int) -> list[tuple[str, str]]:
    """(source, paragraph) pairs with 3+ sentences: the first ``n_pydoc`` pydoc, ``n_fortunes`` fortunes (seed 0)."""
    keep = lambda ps: [p for p in corpus.document_paragraphs(ps) if len(sentence_texts(p)) >= 3]  # noqa: E731
    pydoc = keep(corpus.pydoc_paragraphs(split))[:n_pydoc]
    fortunes = keep(corpus.fortune_entries(split))
    fortunes = random.Random(0).sample(fortunes, min(n_fortunes, len(fortunes)))
    return [("pydoc", p) for p in pydoc] + [("fortunes", p) for p in fortunes]


def paired_auc(real: list[float], other: list[float]) -> float:
    return float(
        np.mean([1.0 if a > b else 0.5 if a == b else 0.0 for a, b in zip(real, other, strict=True)])
    )


def logistic(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Weights then bias of P(y=1|x) = sigmoid(x . w + b) for features ``x`` (rows), classes weighted
    equally (Newton's method, a tiny ridge for stability)."""
    w = np.where(y == 1, 0.5 / y.sum(), 0.5 / (1 - y).sum())
    features = np.column_stack([x, np.ones(len(x))])
    theta = np.zeros(features.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-features @ theta))
        grad = features.T @ (w * (p - y)) + 1e-4 * theta
        hess = (features * (w * p * (1 - p))[:, None]).T @ features + 1e-4 * np.eye(len(theta))
        theta -= np.linalg.solve(hess, grad)
    return theta


def fit(lm: coherence.LMCoherence, n: int, books: str | None) -> None:
    items = paragraphs("train", n // 2, n - n // 2)
    if books:
        rng = random.Random(0)
        kept = [r["text"] for r in corpus.order_corpus(books, "train") if len(sentence_texts(r["text"])) >= 3]
        items = paragraphs("train", n // 3, n // 3) + [
            ("books", p) for p in rng.sample(kept, n - 2 * (n // 3))
        ]
    fast = coherence.coherence_model()
    rows, labels = [], []
    for i, (_, p) in enumerate(items):
        texts = [p, damage.shuffle_sentences(p, seed=i), damage.shuffle_sentences(p, seed=1000 + i)]
        for text, gain in zip(texts, lm.gains(texts), strict=True):
            rows.append((gain, fast.order_logit(coherence.text_units(text))))
        labels += [1, 0, 0]
    x, y = np.array(rows, dtype=float), np.array(labels, dtype=float)
    slope, fast_weight, bias = logistic(x, y)
    print(
        f"train gains real {x[y == 1, 0].mean():.4f} shuffled {x[y == 0, 0].mean():.4f}; "
        f"paired AUC {paired_auc(list(x[0::3, 0]), list(x[1::3, 0])):.3f}"
    )
    print(f"LM_CALIBRATION[{lm.reader!r}] = ({slope:.3f}, {bias:.3f}, {fast_weight:.3f})")


def heldout(lm: coherence.LMCoherence, n_pydoc: int, n_fortunes: int, timed: int) -> None:
    fast, one = (
        coherence.coherence_model(),
        coherence.LMCoherence(orders=1, model=(lm.tokenizer, lm.model), reader=lm.reader),
    )
    items = paragraphs("heldout", n_pydoc, n_fortunes)
    rows = {"pydoc": [], "fortunes": []}
    for i, (source, p) in enumerate(items):
        shuffled = damage.shuffle_sentences(p, seed=i)
        real_gain, other_gain = one.gains([p, shuffled])
        fast_real = fast.order_score(sentence_texts(p))
        fast_other = fast.order_score(sentence_texts(shuffled))
        blend = [
            lm.calibration[0] * g + lm.calibration[2] * fast.alpha * f / (len(sentence_texts(p)) - 1)
            for g, f in ((real_gain, fast_real), (other_gain, fast_other))
        ]
        rows[source].append((real_gain, other_gain, fast_real, fast_other, *blend))
    for source, r in [*rows.items(), ("all", rows["pydoc"] + rows["fortunes"])]:
        a = np.array(r)
        print(
            f"{source:9s} n={len(r):3d}  paired AUC  LM order {paired_auc(list(a[:, 0]), list(a[:, 1])):.3f}"
            f"  CoherenceModel {paired_auc(list(a[:, 2]), list(a[:, 3])):.3f}"
            f"  LMCoherence {paired_auc(list(a[:, 4]), list(a[:, 5])):.3f}"
        )
    sample = [p for _, p in items[:: max(1, len(items) // timed)]][:timed]
    start = time.perf_counter()
    scores = lm.score_many(sample)
    print(
        f"{(time.perf_counter() - start) / len(sample):.2f} s per paragraph (orders={lm.orders}, "
        f"{torch.get_num_threads()} threads, {len(sample)} paragraphs, mean score {np.mean(scores):.3f})"
    )


def unrelated(lm: coherence.LMCoherence, n: int) -> None:
    """AUC real > unrelated for n held-out pydoc paragraphs vs as many texts of sentences drawn
    from other paragraphs (as many sentences as the real one, seed 0)."""
    real = [sentence_texts(p) for _, p in paragraphs("heldout", 10**6, 0)]
    rng = random.Random(0)
    mixed = []
    for i, sentences in enumerate(real[:n]):
        others = rng.sample([j for j in range(len(real)) if j != i], len(sentences))
        mixed.append(" ".join(rng.choice(real[j]) for j in others))
    texts = [" ".join(s) for s in real[:n]] + mixed
    fast = coherence.coherence_model()
    columns = {
        "LMCoherence (order x connected)": lm.score_many(texts),
        "CoherenceModel": [fast.score(t) for t in texts],
    }
    for name, scores in columns.items():
        auc = np.mean([1.0 if a > b else 0.5 if a == b else 0.0 for a in scores[:n] for b in scores[n:]])
        print(
            f"real > unrelated AUC ({n} + {n} pydoc)  {name}: {auc:.3f}  "
            f"means {np.mean(scores[:n]):.3f} / {np.mean(scores[n:]):.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", type=int, default=0, metavar="N", help="calibrate on N train paragraphs")
    parser.add_argument("--pydoc", type=int, default=40)
    parser.add_argument("--fortunes", type=int, default=60)
    parser.add_argument("--timed", type=int, default=6)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reader", choices=coherence.LM_READERS, default="trained")
    parser.add_argument("--books", default=None, help="build/order_corpus: fit on training books too")
    parser.add_argument(
        "--unrelated", type=int, default=0, metavar="N", help="only: real vs unrelated, N each"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    lm = coherence.LMCoherence(reader=args.reader)
    if args.fit:
        fit(lm, args.fit, args.books)
    elif args.unrelated:
        unrelated(lm, args.unrelated)
    else:
        heldout(lm, args.pydoc, args.fortunes, args.timed)


if __name__ == "__main__":
    main()
