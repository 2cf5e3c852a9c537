"""How close to the target can choosing among SmolLM2's candidates get? The writer's rule vs others.

For each of ``--prompts`` training topics of the draft pool x the 3 built-in profiles, one paragraph
(role rotating opening / development / close) is sampled as ``llm_writing.write_paragraph`` samples
it (its prompt and first-draft advice, ``--candidates`` replies in one batch, ``clean_reply``,
candidates of ``MIN_SENTENCES`` preferred), every candidate is edited by the writer's refiner loop
(``HumanResonantWriter.revise``), and each choice rule picks one:

    writer      the highest writing reward before edits (what the writer does)
    res^k       resonance^k x quality before edits (k = 4, 8: the style term weighted up)
    after edits the highest writing reward after edits (edit every candidate, then choose)
    oracle      the smallest mean |gap| after edits (a ceiling: no rule can do better on the gap)

and the table gives the chosen paragraph's mean |gap| before and after edits, its reward and quality
after edits. Training topics only (the writer's held-out benchmark is bench_writer.py). Sampling
takes about 15 s per paragraph on one thread; ``--cache FILE`` keeps the candidates (JSON) and
reuses them on the next run, so the rules can be compared without sampling again.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_draft_choice.py --prompts 12 --cache /tmp/cands.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from resonance_os.core.hrv_types import mean_gap
from resonance_os.core.text import split_sentences
from resonance_os.evolution.hr_grpo import train_prompts
from resonance_os.generation.human_resonant_writer import HumanResonantWriter
from resonance_os.generation.llm_writing import (
    MIN_SENTENCES,
    clean_reply,
    draft_instructions,
    paragraph_messages,
)
from resonance_os.generation.planner_layer import PlannerLayer
from resonance_os.profiles.templates import BUILTIN_TEMPLATES
from resonance_os.quality.reward import WritingScore

Rule = Callable[[WritingScore, WritingScore], float]
RULES: dict[str, Rule] = {
    "writer (reward before edits)": lambda before, after: before.reward,
    "resonance^4 x quality": lambda before, after: before.resonance**4 * before.quality,
    "resonance^8 x quality": lambda before, after: before.resonance**8 * before.quality,
    "reward after edits": lambda before, after: after.reward,
    "oracle: least gap after edits": lambda before, after: after.resonance,
}
"""Each rule's score of a candidate (before and after edits); the highest wins. The oracle uses the
resonance after edits, 1 - mean |gap| under the manhattan style term: the least gap."""


def sample_candidates(prompts: list[str], candidates: int) -> list[dict[str, Any]]:
    """One paragraph request per (topic, profile), sampled and cleaned as the writer does."""
    from resonance_os.generation.backends.local import LocalBackend

    backend, planner, rows = LocalBackend(), PlannerLayer(), []
    for i, prompt in enumerate(prompts):
        for j, (name, template) in enumerate(BUILTIN_TEMPLATES.items()):
            outlines, targets = planner.plan_paragraphs(prompt, 3, template.vector.to_list())
            k = (i + j) % 3
            messages = paragraph_messages(prompt, outlines[k], draft_instructions(targets[k]))
            texts = [
                t for t in (clean_reply(r) for r in backend.sample(messages, candidates, i * 3 + j)) if t
            ]
            rows.append({"prompt": prompt, "profile": name, "role": outlines[k].role, "target": targets[k],
                         "candidates": texts})  # fmt: skip
            print(f"sampled {len(rows)}/{3 * len(prompts)}: {prompt} / {name}, {len(texts)} kept", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=12, help="training topics (x 3 profiles)")
    parser.add_argument("--candidates", type=int, default=6)
    parser.add_argument("--cache", type=Path, default=None, help="JSON file of sampled candidates (reused)")
    args = parser.parse_args()
    prompts = train_prompts()[: args.prompts]
    if args.cache is not None and args.cache.is_file():
        rows = json.loads(args.cache.read_text())
        if sorted({r["prompt"] for r in rows}) != sorted(prompts):
            parser.error(f"{args.cache} holds other topics; remove it or pass another --cache")
    else:
        rows = sample_candidates(prompts, args.candidates)
        if args.cache is not None:
            args.cache.write_text(json.dumps(rows))
    writer = HumanResonantWriter(backend="builtin")  # its refiner and reward; nothing is drafted
    chosen: dict[str, list[tuple[str, float, float, float, float]]] = {rule: [] for rule in RULES}
    for n, row in enumerate(rows):
        target, prompt = row["target"], row["prompt"]
        texts = [t for t in row["candidates"] if len(split_sentences(t)) >= MIN_SENTENCES] or row[
            "candidates"
        ]
        if not texts:
            continue
        before = [writer.reward.score(t, target, prompt=prompt) for t in texts]
        after = [writer.revise(t, target, prompt, seed=n).score for t in texts]
        for name, rule in RULES.items():
            i = max(range(len(texts)), key=lambda i: rule(before[i], after[i]))
            chosen[name].append((row["profile"], mean_gap(target, before[i].hrv), mean_gap(target, after[i].hrv),
                                 after[i].reward, after[i].quality))  # fmt: skip
    profiles = list(BUILTIN_TEMPLATES)
    print(f"\n{len(chosen['oracle: least gap after edits'])} paragraphs ({args.prompts} training topics x "
          f"{len(profiles)} profiles), up to {args.candidates} candidates each\n")  # fmt: skip
    print("| rule | gap before edits | gap after edits | " + " | ".join(f"after, {p}" for p in profiles)
          + " | reward | quality |")  # fmt: skip
    print("|---|" + "---:|" * (4 + len(profiles)))
    for name, picks in chosen.items():
        per_profile = [statistics.mean(p[2] for p in picks if p[0] == profile) for profile in profiles]
        means = [statistics.mean(p[k] for p in picks) for k in (1, 2, 3, 4)]
        print(f"| {name} | {means[0]:.3f} | {means[1]:.3f} | " + " | ".join(f"{g:.3f}" for g in per_profile)
              + f" | {means[2]:.3f} | {means[3]:.3f} |")  # fmt: skip


if __name__ == "__main__":
    main()
