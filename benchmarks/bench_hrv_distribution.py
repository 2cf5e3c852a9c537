"""Typical HRV values on real paragraphs, per dimension, this tree vs a baseline revision.

Mean, standard deviation and share of paragraphs at exactly 0 over every ~90-word paragraph of the
stdlib ``pydoc_data.topics`` prose and a seeded sample of fortune paragraphs (the table in
``docs/hrv.md``). ``--baseline REV`` measures the same paragraphs with the extractor as it was at git
revision REV, so a change to one dimension shows what it did to all eight.

    .venv/bin/python benchmarks/bench_hrv_distribution.py [--fortunes 1000] [--baseline REV]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _baseline import run_at_revision  # noqa: E402
from _corpus import fortune_entries, paragraphs, pydoc_paragraphs  # noqa: E402

from resonance_os.core.hrv_constants import HRV_DIMENSIONS  # noqa: E402
from resonance_os.profiling.hrv_extractor import HRVExtractor  # noqa: E402


def measure(n_fortunes: int, seed: int) -> dict[str, dict[str, list[float]]]:
    """sample -> dimension -> [mean, sd, share at 0]."""
    fortunes = paragraphs(fortune_entries())
    samples = {
        "pydoc": paragraphs(pydoc_paragraphs()),
        "fortunes": random.Random(seed).sample(fortunes, min(n_fortunes, len(fortunes))),
    }
    extractor = HRVExtractor()
    table: dict[str, dict[str, list[float]]] = {}
    for name, texts in samples.items():
        vectors = [extractor.extract(text) for text in texts]
        table[name] = {
            dim: [
                statistics.mean(v[k] for v in vectors),
                statistics.pstdev(v[k] for v in vectors),
                sum(v[k] == 0.0 for v in vectors) / len(vectors),
            ]
            for k, dim in enumerate(HRV_DIMENSIONS)
        }
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fortunes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--baseline", metavar="REV", help="also measure with the extractor at this git revision"
    )
    parser.add_argument("--json", action="store_true", help="print the table as one JSON line")
    args = parser.parse_args()
    ours = measure(args.fortunes, args.seed)
    if args.json:
        print(json.dumps(ours))
        return
    options = ["--fortunes", str(args.fortunes), "--seed", str(args.seed), "--json"]
    theirs = run_at_revision(args.baseline, __file__, options) if args.baseline else None

    print("mean (sd) per dimension; zero = share of paragraphs at exactly 0\n")
    header = "| dimension | sample | this tree | zero |"
    rule = "|---|---|---|---:|"
    if theirs:
        header += f" at {args.baseline} | zero | mean ratio |"
        rule += "---|---:|---:|"
    print(header)
    print(rule)
    for dim in HRV_DIMENSIONS:
        for sample, table in ours.items():
            mean, sd, zero = table[dim]
            line = f"| {dim} | {sample} | {mean:.3f} ({sd:.3f}) | {zero:.2f} |"
            if theirs:
                old_mean, old_sd, old_zero = theirs[sample][dim]
                ratio = f"{mean / old_mean:.2f}" if old_mean else "n/a"
                line += f" {old_mean:.3f} ({old_sd:.3f}) | {old_zero:.2f} | {ratio} |"
            print(line)


if __name__ == "__main__":
    main()
