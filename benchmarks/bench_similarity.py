"""Cost of one similarity call (the reward loop's unit) and of a batch, ours vs SciPy, in one run.

Ours: ``SimilarityCalculator.calculate_similarity`` (validation included) and
``calculate_batch_similarity``. Reference: the same quantity from ``scipy.spatial.distance`` /
``scipy.stats`` on plain numpy arrays (no validation, no mapping to [0, 1]). Both score the same random
HRV pairs; the table also checks that the scores agree.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_similarity.py
"""

from __future__ import annotations

import math
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from scipy.spatial import distance  # noqa: E402
from scipy.stats import pearsonr, spearmanr  # noqa: E402

from resonance_os.similarity.metrics import SimilarityCalculator, SimilarityMethod  # noqa: E402

PAIRS = 1000
BATCH = 10_000
ROUNDS = 7
"""Ours and SciPy alternate for ROUNDS rounds; the fastest round of each is reported (robust to
load from other processes on a shared machine)."""

REFERENCE = {
    SimilarityMethod.COSINE: lambda a, b: 1.0 - distance.cosine(a, b),
    SimilarityMethod.EUCLIDEAN: lambda a, b: 1.0 - distance.euclidean(a, b) / math.sqrt(8),
    SimilarityMethod.MANHATTAN: lambda a, b: 1.0 - distance.cityblock(a, b) / 8,
    SimilarityMethod.PEARSON: lambda a, b: (pearsonr(a, b)[0] + 1) / 2,
    SimilarityMethod.SPEARMAN: lambda a, b: (spearmanr(a, b)[0] + 1) / 2,
}


def per_call_us(fn, pairs) -> tuple[float, list[float]]:
    start = time.perf_counter()
    out = [fn(a, b) for a, b in pairs]
    return (time.perf_counter() - start) / len(pairs) * 1e6, out


def best_of_rounds(ours, ref, ours_pairs, ref_pairs):
    """Fastest per-call time of each over alternating rounds, and the two last score lists."""
    best_ours = best_ref = math.inf
    for _ in range(ROUNDS):
        t_ours, out_ours = per_call_us(ours, ours_pairs)
        t_ref, out_ref = per_call_us(ref, ref_pairs)
        best_ours, best_ref = min(best_ours, t_ours), min(best_ref, t_ref)
    return best_ours, best_ref, out_ours, out_ref


def main() -> None:
    rng = np.random.default_rng(0)
    pairs = [(rng.random(8), rng.random(8)) for _ in range(PAIRS)]
    lists = [(a.tolist(), b.tolist()) for a, b in pairs]
    calc = SimilarityCalculator()
    target, batch = rng.random(8), rng.random((BATCH, 8))

    print(
        f"{PAIRS} random HRV pairs, one call each; batch of {BATCH} vectors; best of {ROUNDS} rounds; 1 thread"
    )
    header = f"{'method':<10} {'ours us/call':>12} {'scipy us/call':>13} {'scipy/ours':>10} {'max |diff|':>10} {'ours batch us/vec':>17}"
    print(header)
    print("-" * len(header))
    for method, ref in REFERENCE.items():
        ours_t, ref_t, ours, theirs = best_of_rounds(
            lambda a, b, m=method: calc.calculate_similarity(a, b, m), ref, lists, pairs
        )
        diff = float(np.max(np.abs(np.array(ours) - np.array(theirs))))
        batch_t = math.inf
        for _ in range(ROUNDS):
            start = time.perf_counter()
            calc.calculate_batch_similarity(target, batch, method)
            batch_t = min(batch_t, (time.perf_counter() - start) / BATCH * 1e6)
        print(
            f"{method.value:<10} {ours_t:>12.1f} {ref_t:>13.1f} {ref_t / ours_t:>10.1f} {diff:>10.1e} {batch_t:>17.2f}"
        )


if __name__ == "__main__":
    main()
