"""Refiner on real prose: how far the edit operators close the HRV gap, and what writing quality costs.

Paragraphs: the held-out split of ``quality.corpus`` (every pydoc paragraph of at least 40 words and
3 sentences, then fortunes up to ``--n``); the operators and their word tables were looked at only
on split "train". Targets, per paragraph, with its partner the next paragraph of the same source:

* reachable: the paragraph's own HRV moved toward its partner's by at most ``--reach`` (0.15) per
  dimension: the direction of a real paragraph, at a distance a few sentence edits can cover;
* real partner: the partner's HRV itself (most of that gap is content, not style: reported so the
  reader sees what editing cannot do);
* model drafts: the held-out split of the shipped draft pool (SmolLM2 paragraphs for the
  writer's 20 benchmark prompts, ``evolution.draft_pool``) toward the built-in profile each was
  written for, with its prompt (so quality has the topic term): the writer's own case.

Quality is ``WritingScore.quality`` (fluency^2 * coherence^0.35 * (1 - repetition); no prompt, so no
topic term). Run: ``python benchmarks/bench_refiner.py [--n 242] [--reach 0.15] [--samples 12]``.

``--by-edit`` prints instead, per edit, what it does to the *training* drafts of the pool toward their
profiles (``RefinerLayer.edit_trials``: each edit tried once where its dimension is off target): how
often it finds a sentence it can change, what it moves, and how often the gap falls, quality holds and
the refiner would keep it. It says where the operators cannot reach model prose; being training data,
it may guide work on the operators.
"""

from __future__ import annotations

import argparse
import difflib
import random
import statistics
import time

from resonance_os.core.text import sentence_texts
from resonance_os.evolution.draft_pool import load_drafts
from resonance_os.generation.refiner_layer import RefinerLayer
from resonance_os.profiles.templates import BUILTIN_TEMPLATES
from resonance_os.quality.corpus import document_paragraphs, fortune_entries, pydoc_paragraphs
from resonance_os.quality.reward import WritingReward

TERMS = ("fluency", "coherence", "repetition", "quality")


def heldout_paragraphs(n: int) -> list[tuple[str, str]]:
    """(source, paragraph): all held-out pydoc paragraphs, then held-out fortunes up to ``n``."""
    pydoc = document_paragraphs(pydoc_paragraphs("heldout"))
    fortunes = document_paragraphs(fortune_entries("heldout"))
    random.Random(0).shuffle(fortunes)
    return [("pydoc", p) for p in pydoc] + [("fortune", f) for f in fortunes[: max(0, n - len(pydoc))]]


def targets(items: list[tuple[str, str]], reward: WritingReward, reach: float | None) -> list[list[float]]:
    """Each paragraph's target: its partner's HRV (next paragraph of the same source), moved at most
    ``reach`` per dimension from its own HRV (``None``: the partner's HRV as it is)."""
    hrvs = [reward.extractor.extract(text) for _, text in items]
    out = []
    for i, (source, _) in enumerate(items):
        same = [j for j, (s, _) in enumerate(items) if s == source]
        partner = hrvs[same[(same.index(i) + 1) % len(same)]]
        if reach is None:
            out.append(list(partner))
        else:
            out.append([o + max(-reach, min(reach, p - o)) for o, p in zip(hrvs[i], partner)])
    return out


def model_drafts() -> tuple[list[tuple[str, str]], list[list[float]], list[str]]:
    """(("model", text) items, their profiles' vectors, their prompts) of the held-out draft pool."""
    drafts = load_drafts(split="heldout")
    vectors = {f"builtin/{name}": t.vector.to_list() for name, t in BUILTIN_TEMPLATES.items()}
    return (
        [("model", d.text) for d in drafts],
        [vectors[d.profile] for d in drafts],
        [d.prompt for d in drafts],
    )


def run(items, goals, refiner: RefinerLayer, prompts: list[str] | None = None) -> dict[str, object]:
    reward = refiner.reward
    rows, samples, seconds = [], [], 0.0
    for k, ((_, text), target) in enumerate(zip(items, goals)):
        prompt = None if prompts is None else prompts[k]
        start = time.perf_counter()
        result = refiner.refine_to_target(text, target, seed=k, prompt=prompt)
        seconds += time.perf_counter() - start
        before = reward.score(text, target, prompt=prompt)
        after = reward.score(result.text, target, prompt=prompt)
        rows.append((result, before, after))
        old, new = sentence_texts(text), sentence_texts(result.text)
        samples.extend(
            line
            for line in difflib.unified_diff(old, new, lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("---", "+++"))
        )
    mean = statistics.mean
    return {
        "gap_before": mean(r.initial_error for r, _, _ in rows),
        "gap_after": mean(r.error for r, _, _ in rows),
        "halved": mean(r.error <= 0.5 * r.initial_error for r, _, _ in rows),
        "terms": {
            t: (mean(getattr(b, t) for _, b, _ in rows), mean(getattr(a, t) for _, _, a in rows))
            for t in TERMS
        },
        "edits": mean(len(r.edits) for r, _, _ in rows),
        "ms": 1000 * seconds / len(rows),
        "samples": samples,
    }


def by_edit(refiner: RefinerLayer) -> None:
    """The ``--by-edit`` table (module docstring)."""
    drafts = load_drafts(split="train")
    vectors = {f"builtin/{name}": t.vector.to_list() for name, t in BUILTIN_TEMPLATES.items()}
    trials: dict[str, list] = {}
    for k, draft in enumerate(drafts):
        for trial in refiner.edit_trials(draft.text, vectors[draft.profile], seed=k, prompt=draft.prompt):
            trials.setdefault(trial.edit, []).append(trial)
    print(f"{len(drafts)} training drafts of the pool toward their profiles; each edit tried once where")
    print(
        "its dimension is off target (needed); moves, gap and quality are means over the drafts it applied to\n"
    )
    print("| edit | needed | applies | dimension moves | gap change | gap falls | quality holds | kept |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, rows in sorted(trials.items()):
        applied = [t for t in rows if t.applied]
        move = statistics.mean(t.move for t in applied) if applied else 0.0
        change = statistics.mean(t.error_change for t in applied) if applied else 0.0
        holds = sum(t.quality_change >= -refiner.quality_tolerance for t in applied)
        print(
            f"| {name} | {len(rows)} | {len(applied)} | {move:+.3f} | {change:+.4f} | "
            f"{sum(t.error_change < 0 for t in applied)} | {holds} | {sum(t.kept for t in applied)} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=242, help="paragraphs (default 242)")
    parser.add_argument("--reach", type=float, default=0.15, help="per-dimension reach of a target")
    parser.add_argument("--samples", type=int, default=12, help="changed sentence pairs to print")
    parser.add_argument(
        "--by-edit", action="store_true", help="per edit, what it does to the training drafts (docstring)"
    )
    args = parser.parse_args()
    reward = WritingReward()
    refiner = RefinerLayer(reward=reward)
    if args.by_edit:
        by_edit(refiner)
        return
    items = heldout_paragraphs(args.n)
    drafts, draft_goals, draft_prompts = model_drafts()
    results = {
        f"reachable (<= {args.reach})": run(items, targets(items, reward, args.reach), refiner),
        "real partner": run(items, targets(items, reward, None), refiner),
        "model drafts": run(drafts, draft_goals, refiner, prompts=draft_prompts),
    }
    print(
        f"{len(items)} held-out paragraphs ({sum(s == 'pydoc' for s, _ in items)} pydoc, rest fortunes);"
        f" {len(drafts)} held-out model drafts toward their profiles\n"
    )
    names = list(results)
    print(f"{'':32}" + "".join(f"{n:>22}" for n in names))

    def line(label: str, cells: list[str]) -> None:
        print(f"{label:32}" + "".join(f"{c:>22}" for c in cells))

    line(
        "mean |gap| before -> after",
        [f"{r['gap_before']:.3f} -> {r['gap_after']:.3f}" for r in results.values()],
    )
    line("ratio after / before", [f"{r['gap_after'] / r['gap_before']:.2f}" for r in results.values()])
    line("share with gap halved", [f"{r['halved']:.0%}" for r in results.values()])
    for term in TERMS:
        line(
            f"{term} before -> after (change)",
            [
                f"{r['terms'][term][0]:.3f}->{r['terms'][term][1]:.3f} ({r['terms'][term][1] - r['terms'][term][0]:+.3f})"
                for r in results.values()
            ],
        )
    line("edits accepted per paragraph", [f"{r['edits']:.2f}" for r in results.values()])
    line("ms per paragraph", [f"{r['ms']:.1f}" for r in results.values()])
    print("\nsample changed sentences (reachable targets; - before, + after):")
    for sample in results[names[0]]["samples"][: args.samples * 2]:
        print("  " + sample)


if __name__ == "__main__":
    main()
