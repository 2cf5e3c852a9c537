"""The three example articles of docs/writer.md: `make run`'s writer path, printed as Markdown.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/writer_examples.py [--backend local] > /tmp/examples.md

For each (prompt, built-in profile) pair: ``HumanResonantWriter(backend=...).generate(prompt, target,
num_paragraphs=3, seed=0)``, the article quoted, then a table of target vs measured HRV with the
writing reward's terms (``WritingReward().score(text, target, prompt=prompt)``), the kept edits, the
wall time and the load average.
"""

from __future__ import annotations

import argparse
import os
import time

from resonance_os.generation.human_resonant_writer import HumanResonantWriter
from resonance_os.profiles.targets import resolve_target
from resonance_os.quality.reward import WritingReward

EXAMPLES = (
    ("remote work and team culture", "professional"),
    ("why city gardens matter", "creative"),
    ("open source software maintenance", "technical"),
)
HEADER = (
    "| | cadence | valence | intensity | assert. | curiosity | metaphor | story | active "
    "| mean \\|gap\\| | resonance | fluency | coherence | topic | repetition | reward |"
)


def _row(label: str, values: list[float]) -> str:
    return f"| {label} | " + " | ".join(f"{v:.2f}" for v in values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=None, help="writer backend (default: the writer's default)")
    args = parser.parse_args()
    writer, reward = HumanResonantWriter(backend=args.backend), WritingReward()
    for prompt, name in EXAMPLES:
        target, source = resolve_target(profile=f"builtin/{name}")
        start = time.perf_counter()
        article = writer.generate(prompt, target, num_paragraphs=3, seed=0, target_source=source)
        seconds = time.perf_counter() - start
        score = reward.score(str(article), target, prompt=prompt)
        edits = [e for step in article.trace for e in step.get("refiner_edits", step.get("edits", []))]
        gap = sum(abs(t - m) for t, m in zip(target, score.hrv)) / len(target)
        print(f'#### "{prompt}", target `builtin/{name}` (seed 0)\n')
        print(
            f"{article.backend}; {seconds:.0f} s wall, load {os.getloadavg()[0]:.1f}; "
            f"edits kept: {', '.join(edits) or 'none'}\n"
        )
        print("\n>\n".join(f"> {p}" for p in article.paragraphs) + "\n")
        print(HEADER)
        print("|" + "---|" * 16)
        print(_row("target", target) + " |" * 8)
        terms = [gap, score.resonance, score.fluency, score.coherence, score.topic or 0.0, score.repetition]
        print(
            _row("measured", score.hrv)
            + " | "
            + " | ".join(f"{v:.3f}" for v in terms)
            + f" | **{score.reward:.3f}** |\n"
        )


if __name__ == "__main__":
    main()
