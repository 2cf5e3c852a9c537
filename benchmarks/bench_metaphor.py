"""metaphor_density on figurative vs literal sentence pairs, per construction, this tree vs a baseline.

Each pair (``benchmarks/data/metaphor_pairs_heldout.jsonl``, or ``--set dev`` for the small tuning set)
is a published figurative sentence and a literal paraphrase with its source. A pair is ranked right when
the figurative sentence scores strictly higher on ``metaphor_density``; "detected" is the share of
figurative sentences with at least one figure in the evidence, "false alarms" the share of literal
paraphrases with one. ``--baseline REV`` runs the same pairs through the extractor as it was at git
revision REV and prints both side by side. The held-out set was never used for tuning.

    .venv/bin/python benchmarks/bench_metaphor.py [--set heldout|dev] [--baseline REV] [--show-misses]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _baseline import run_at_revision  # noqa: E402

from resonance_os.core.hrv_constants import HRV_DIMENSIONS  # noqa: E402
from resonance_os.profiling.hrv_extractor import HRVExtractor  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
METAPHOR = HRV_DIMENSIONS.index("metaphor_density")


def load_pairs(name: str) -> list[dict[str, str]]:
    """The pairs of ``data/metaphor_pairs_<name>.jsonl``."""
    lines = (DATA / f"metaphor_pairs_{name}.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def score_pairs(pairs: list[dict[str, str]]) -> list[dict[str, object]]:
    """Per pair: both scores and whether each sentence had at least one figure."""
    extractor = HRVExtractor()
    rows = []
    for pair in pairs:
        fig, lit = extractor.analyze(pair["figurative"]), extractor.analyze(pair["literal"])
        rows.append(
            {
                "construction": pair["construction"],
                "figurative": fig.hrv[METAPHOR],
                "literal": lit.hrv[METAPHOR],
                "detected": bool(fig.evidence["metaphor_density"]["figurative_markers"]),
                "false_alarm": bool(lit.evidence["metaphor_density"]["figurative_markers"]),
            }
        )
    return rows


def summarise(rows: list[dict[str, object]]) -> dict[str, dict[str, float]]:
    """construction (and "all") -> n, pair accuracy, detected share, false-alarm share."""
    groups: dict[str, list[dict[str, object]]] = {"all": rows}
    for row in rows:
        groups.setdefault(str(row["construction"]), []).append(row)
    return {
        name: {
            "n": len(group),
            "accuracy": sum(r["figurative"] > r["literal"] for r in group) / len(group),
            "detected": sum(bool(r["detected"]) for r in group) / len(group),
            "false_alarms": sum(bool(r["false_alarm"]) for r in group) / len(group),
        }
        for name, group in groups.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=["heldout", "dev"], default="heldout")
    parser.add_argument(
        "--baseline", metavar="REV", help="also score the pairs with the extractor at this git revision"
    )
    parser.add_argument("--show-misses", action="store_true", help="list pairs ranked the wrong way")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON line")
    args = parser.parse_args()

    pairs = load_pairs(args.set)
    rows = score_pairs(pairs)
    ours = summarise(rows)
    if args.json:
        print(json.dumps(ours))
        return
    theirs = (
        run_at_revision(args.baseline, __file__, ["--set", args.set, "--json"]) if args.baseline else None
    )

    print(f"{len(pairs)} pairs ({args.set} set); accuracy = figurative scored strictly higher than literal\n")
    base = f" at {args.baseline}" if theirs else ""
    header = "| construction | pairs | accuracy | detected | false alarms |"
    rule = "|---|---:|---:|---:|---:|"
    if theirs:
        header += f" accuracy{base} | detected{base} | false alarms{base} | accuracy ratio |"
        rule += "---:|---:|---:|---:|"
    print(header)
    print(rule)
    order = ["simile", "nominal", "appositive", "verb", "frame", "conventional", "all"]
    for name in sorted(ours, key=lambda k: order.index(k) if k in order else len(order)):
        o = ours[name]
        line = (
            f"| {name} | {o['n']:.0f} | {o['accuracy']:.2f} | {o['detected']:.2f} | {o['false_alarms']:.2f} |"
        )
        if theirs:
            t = theirs[name]
            ratio = f"{o['accuracy'] / t['accuracy']:.2f}x" if t["accuracy"] else "n/a (baseline 0)"
            line += f" {t['accuracy']:.2f} | {t['detected']:.2f} | {t['false_alarms']:.2f} | {ratio} |"
        print(line)
    if args.show_misses:
        print("\nranked the wrong way (figurative, literal):")
        for pair, row in zip(pairs, rows):
            if row["figurative"] <= row["literal"]:
                print(
                    f"- [{row['construction']}] {row['figurative']:.2f} {pair['figurative']!r} / {row['literal']:.2f}"
                )


if __name__ == "__main__":
    main()
