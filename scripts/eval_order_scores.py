"""Held-out paired AUC of the shipped LM order log-odds from a training run's reader scores.

    .venv/bin/python scripts/eval_order_scores.py OUTDIR/heldout_scores.json [--data build/order_reader_data.jsonl.gz]

``scripts/train_order_reader.py train`` writes, for every held-out paragraph of ``--data`` (in file
order), the reader's score of its real order and of its one shuffle. Two orders of the same sentences
share ``LMCoherence``'s reference orders and connectedness, so the coherence term ranks them by
``slope * (r_real - r_shuffled) + fast_weight * (fast log-odds difference)`` with
``LM_CALIBRATION["trained"]``; this prints that paired AUC per domain, the reader alone and the fast
model alone (the shipped ``coherence.json``), on this CPU.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

import numpy as np

from resonance_os.quality.coherence import LM_CALIBRATION, coherence_model, text_units


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scores", type=Path)
    parser.add_argument("--data", type=Path, default=Path("build/order_reader_data.jsonl.gz"))
    args = parser.parse_args()
    with gzip.open(args.data, "rt", encoding="utf-8") as f:
        held = [r for r in map(json.loads, f) if r["split"] == "heldout"]
    scores = json.loads(args.scores.read_text("utf-8"))
    if len(scores) != len(held) or any(a["domain"] != b["domain"] for a, b in zip(held, scores, strict=True)):
        raise SystemExit(f"{args.scores} does not belong to {args.data}: rebuild one from the other")
    fast, (slope, _, fast_weight) = coherence_model(), LM_CALIBRATION["trained"]
    by_domain: dict[str, list[tuple[float, float]]] = {}
    for row, score in zip(held, scores, strict=True):
        real = fast.order_logit(text_units(" ".join(row["sentences"])))
        other = fast.order_logit(text_units(" ".join(row["shuffled"])))
        by_domain.setdefault(row["domain"], []).append(
            (score["reader"][0] - score["reader"][1], real - other)
        )
    print(
        "| domain | pairs | fast model | trained reader | shipped LM order log-odds |\n|---|---:|---:|---:|---:|"
    )
    for name, pairs in [*sorted(by_domain.items()), ("all", [p for v in by_domain.values() for p in v])]:
        d = np.array(pairs)
        cells = [
            np.mean(d[:, 1] > 0),
            np.mean(d[:, 0] > 0),
            np.mean(slope * d[:, 0] + fast_weight * d[:, 1] > 0),
        ]
        print(f"| {name} | {len(d)} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")


if __name__ == "__main__":
    main()
