"""Held-out figures for the fluency terms: paired AUC against damaged text, score spread, speed.

    .venv/bin/python scripts/eval_fluency.py [--lm-paragraphs 20]

For each source (pydoc, fortunes) of ``corpus`` ``split="heldout"``, over ``document_paragraphs``:
paired AUC = fraction of paragraphs whose fluency is above that of their own word salad (or
within-sentence shuffle), ties counting half; the mean and 10th percentile of real paragraphs' scores;
microseconds per call on a ~90-word paragraph. ``--lm-paragraphs N`` also scores the first N paragraphs
of each source with ``LMFluency`` (slow: a forward pass of SmolLM2-135M per batch of sentences).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from resonance_os.quality import corpus
from resonance_os.quality.damage import shuffle_within_sentences, word_salad
from resonance_os.quality.fluency import LMFluency, ngram_fluency


def report(name: str, score_many, paragraphs: list[str]) -> None:
    real = np.array(score_many(paragraphs))
    line = f"{name:<28} n={len(paragraphs):<4} real mean {real.mean():.3f} p10 {np.percentile(real, 10):.3f}"
    for kind, damage in (("salad", word_salad), ("shuffle", shuffle_within_sentences)):
        damaged = np.array(score_many([damage(t, seed=i) for i, t in enumerate(paragraphs)]))
        auc = np.mean(real > damaged) + 0.5 * np.mean(real == damaged)
        line += f" | {kind}: AUC {auc:.3f}, mean {damaged.mean():.3f}"
    print(line)


def microseconds(score, text: str, repeat: int) -> float:
    score(text)
    start = time.perf_counter()
    for _ in range(repeat):
        score(text)
    return (time.perf_counter() - start) / repeat * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lm-paragraphs", type=int, default=0)
    args = parser.parse_args()
    sources = {
        "pydoc": corpus.document_paragraphs(corpus.pydoc_paragraphs("heldout")),
        "fortunes": corpus.document_paragraphs(corpus.fortune_entries("heldout")),
    }
    start = time.perf_counter()
    ngram = ngram_fluency()
    print(f"NgramFluency load {time.perf_counter() - start:.2f} s")
    for source, paragraphs in sources.items():
        report(f"NgramFluency {source}", lambda texts: [ngram.score(t) for t in texts], paragraphs)
    sample = corpus.paragraphs(corpus.pydoc_paragraphs("heldout"), min_words=85)[:20]
    sample += corpus.paragraphs(corpus.fortune_entries("heldout"), min_words=85)[:20]
    words = np.mean([len(t.split()) for t in sample])
    us = np.median([microseconds(ngram.score, t, 200) for t in sample])
    print(f"NgramFluency {us:.0f} us per paragraph (median over {len(sample)}, {words:.0f} words on average)")
    if args.lm_paragraphs:
        lm = LMFluency()
        for source, paragraphs in sources.items():
            report(f"LMFluency {source}", lm.score_many, paragraphs[: args.lm_paragraphs])
        us = np.median([microseconds(lm.score, t, 1) for t in sample[::8]])
        print(f"LMFluency {us:.0f} us per paragraph (median over {len(sample[::8])}, one at a time)")


if __name__ == "__main__":
    main()
