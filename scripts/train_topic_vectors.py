"""Build the word vectors behind the topic term: PPMI + truncated SVD over the training prose.

    .venv/bin/python scripts/train_topic_vectors.py   # writes src/resonance_os/quality/data/topic_vectors.npz

Co-occurrence of content-word stems (``quality.text_units``) within +-WINDOW words of one document of
``quality.corpus`` (train split only: pydoc prose and fortunes, which the ``dev`` extra installs),
positive pointwise mutual information with context smoothing alpha = 0.75 (Levy, Goldberg & Dagan
2015), then the top DIMS singular vectors scaled by sqrt(singular value), rows L2-normalised.
Deterministic; written to a temporary name and renamed.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.linalg import svds

from resonance_os.quality import corpus
from resonance_os.quality.text_units import content_stems, sentence_words

WINDOW = 5
MIN_COUNT = 4
DIMS = 64
OUT = Path(__file__).resolve().parents[1] / "src/resonance_os/quality/data/topic_vectors.npz"


def main() -> None:
    documents = corpus.pydoc_paragraphs("train") + corpus.fortune_entries("train")
    streams = [[s for words in sentence_words(doc) for s in content_stems(words)] for doc in documents]
    counts = Counter(s for stream in streams for s in stream)
    vocab = sorted(w for w, c in counts.items() if c >= MIN_COUNT)
    index = {w: i for i, w in enumerate(vocab)}
    pairs: Counter[tuple[int, int]] = Counter()
    for stream in streams:
        ids = [index.get(s, -1) for s in stream]
        for i, a in enumerate(ids):
            if a < 0:
                continue
            for b in ids[i + 1 : i + 1 + WINDOW]:
                if b >= 0 and b != a:
                    pairs[a, b] += 1
                    pairs[b, a] += 1
    rows, cols = np.array(list(pairs)).T
    values = np.array(list(pairs.values()), dtype=np.float64)
    n = len(vocab)
    row_sum = np.bincount(rows, weights=values, minlength=n)
    col_sum = np.bincount(cols, weights=values, minlength=n) ** 0.75
    pmi = np.log(values * col_sum.sum() / (row_sum[rows] * col_sum[cols]))
    keep = pmi > 0
    ppmi = coo_matrix((pmi[keep], (rows[keep], cols[keep])), shape=(n, n)).tocsr()
    u, s, _ = svds(ppmi, k=DIMS, random_state=0)
    vectors = u * np.sqrt(s)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    sign = np.sign(vectors[np.abs(vectors).argmax(axis=0), np.arange(DIMS)])  # SVD sign is arbitrary
    vectors = (vectors * sign).astype(np.float16)
    tmp = OUT.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, words=np.array(vocab), vectors=vectors)
    os.replace(tmp, OUT)
    print(
        f"{n} stems x {DIMS} dims from {len(documents)} documents -> {OUT} ({OUT.stat().st_size / 1e6:.2f} MB)"
    )


if __name__ == "__main__":
    main()
