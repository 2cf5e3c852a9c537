"""Build the HRV steering directions for SmolLM2-135M-Instruct (``generation.steering_directions``).

    python scripts/build_steering_directions.py --out build/steering          # candidates, all 8 dims
    python benchmarks/bench_steer.py --directions build/steering --json build/steer.json
    python scripts/build_steering_directions.py --ship build/steer.json --from build/steering

Build (seeded, same seed same directions): measure the training paragraphs of ``quality.corpus``
(pydoc and a seeded sample of fortunes) with the ``HRVExtractor``, read each as the model's reply to
``CONTRAST_PROMPT``, take the high-minus-low direction of every dimension at each candidate layer
(``contrast_directions``), then choose each dimension's layer and gain by steering the model on
TRAINING prompts (``TRAIN_PROMPTS``, never the benchmark's): the largest movement of the dimension
between strength -1 and +1 whose judged fluency at +-0.5 (``quality.judge``: calibrated fluency
under Gemma-3-270M) stays at or above ``FLUENCY_GOAL`` of unsteered (the strengths and bound of
``bench_steer.py``'s pass rule); when none does, the most fluent configuration (the held-out check
then reports it). The writing reward's fast fluency chose the gains before: it rates grammatical
nonsense as fluent, and storytelling shipped writing it at +0.5. Ship: keep only the dimensions ``bench_steer.py`` passed on held-out
prompts and write them, with the measured figures in the manifest, into the package data.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import torch

from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.generation.steering_directions import (
    CONTRAST_PROMPT,
    CONTRAST_QUANTILE,
    DATA_FOLDER,
    FLUENCY_GOAL,
    MODEL_NAME,
    TRAIN_PROMPTS,
    SteeringDirections,
    contrast_directions,
    reply_means,
    sample_steered,
    writing_messages,
)

CANDIDATE_LAYERS = (8, 14)
"""Decoder layers tried (of SmolLM2-135M's 30): early-middle, where contrastive directions steer style
without breaking the text in the steering literature; the build measures which works per dimension."""
GAINS = (0.25, 0.5, 1.0)
"""Vector norm at strength 1, as a multiple of the layer's typical residual norm."""
CORPUS_SAMPLE = 120
"""Training paragraphs read per source (pydoc, fortunes): enough for stable means on a 2-core box."""
REPLY_TOKENS = 64
SELECTION_STRENGTHS = (-1.0, -0.5, 0.5, 1.0)
"""Effect: mean measured value at +1 minus -1; judged fluency: the worse of -0.5 and +0.5."""
NEW_TOKENS = 40


CORPORA = ("reference", "everyday")
"""``reference``: Python reference prose (pydoc) and fortunes, the shipped set's sources. ``everyday``:
SmolLM2's own drafts of the draft pool's everyday training topics and fortunes, for directions that
move the model within its own register: steered toward exposition, the reference set's directions
drift into Python documentation whatever the topic (``voice_adapters.SOFTWARE_DRIFT``)."""


def corpus(seed: int, kind: str = "reference") -> tuple[list[str], list[str]]:
    """(texts, source of each): ``CORPUS_SAMPLE`` seeded training paragraphs of each of ``kind``'s
    sources (:data:`CORPORA`)."""
    from resonance_os.evolution.draft_pool import load_drafts
    from resonance_os.quality.corpus import fortune_entries, paragraphs, pydoc_paragraphs

    rng = random.Random(seed)
    if kind == "reference":
        first, name = paragraphs(pydoc_paragraphs("train")), "pydoc"
    else:
        first, name = [d.text for d in load_drafts(split="train")], "drafts"
    fortunes = paragraphs(fortune_entries("train"))
    rng.shuffle(first)
    rng.shuffle(fortunes)
    first, fortunes = first[:CORPUS_SAMPLE], fortunes[:CORPUS_SAMPLE]
    return first + fortunes, [name] * len(first) + ["fortunes"] * len(fortunes)


def build(out: Path, seed: int, kind: str = "reference") -> None:
    from resonance_os.generation.backends.local import LocalBackend
    from resonance_os.profiling.hrv_extractor import HRVExtractor
    from resonance_os.quality.judge import fluency_judge
    from resonance_os.quality.reward import WritingReward

    torch.manual_seed(seed)
    started = time.perf_counter()
    backend, extractor = LocalBackend(), HRVExtractor()
    reward, judge = WritingReward(extractor=extractor), fluency_judge()
    texts, sources = corpus(seed, kind)
    hrvs = torch.tensor(extractor.extract_many(texts))
    means, norms = reply_means(
        backend.tokenizer, backend.model, texts, CANDIDATE_LAYERS, max_tokens=REPLY_TOKENS
    )
    units = contrast_directions(means, hrvs, sources)
    print(
        f"corpus: {len(texts)} paragraphs, residual means in {time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )
    configs = [(layer, gain) for layer in CANDIDATE_LAYERS for gain in GAINS]
    layers, vectors, selection = {}, {}, {}
    for d, dim in enumerate(HRV_DIMENSIONS):
        if not units[dim]:
            print(f"{dim}: no spread in the corpus, skipped", file=sys.stderr)
            continue
        candidates = {
            f"{dim}@{layer}x{gain}": (layer, gain * norms[layer] * units[dim][layer])
            for layer, gain in configs
        }
        trial = SteeringDirections(
            MODEL_NAME, {k: c[0] for k, c in candidates.items()}, {k: c[1] for k, c in candidates.items()}
        )
        rows = [(topic, {}) for topic in TRAIN_PROMPTS]
        rows += [
            (topic, {key: s}) for key in candidates for s in SELECTION_STRENGTHS for topic in TRAIN_PROMPTS
        ]
        trial.validate = lambda steer: dict(steer)  # candidate names are not dimensions
        replies = sample_steered(
            backend, [writing_messages(t) for t, _ in rows], [s for _, s in rows], trial, seed, NEW_TOKENS
        )
        scored = [
            reward.score(r, [0.5] * 8, prompt=t) if r.strip() else None for r, (t, _) in zip(replies, rows)
        ]
        value = [s.hrv[d] if s else float("nan") for s in scored]
        judged = judge.score_many(replies)
        n = len(TRAIN_PROMPTS)
        base = _nanmean(judged[:n])
        results = {}
        for i, key in enumerate(candidates):
            at = {
                strength: slice(
                    n * (1 + len(SELECTION_STRENGTHS) * i + k), n * (2 + len(SELECTION_STRENGTHS) * i + k)
                )
                for k, strength in enumerate(SELECTION_STRENGTHS)
            }
            effect = _nanmean(value[at[1.0]]) - _nanmean(value[at[-1.0]])
            ratio = min(_nanmean(judged[at[s]]) for s in (-0.5, 0.5)) / base
            results[key] = {"effect": round(effect, 4), "judged_fluency": round(ratio, 4)}
        fluent = {k: r for k, r in results.items() if r["judged_fluency"] >= FLUENCY_GOAL}
        if fluent:
            best = max(fluent, key=lambda k: results[k]["effect"])
        else:
            best = max(results, key=lambda k: results[k]["judged_fluency"])
        layers[dim], vectors[dim] = candidates[best]
        selection[dim] = {"chosen": best, "unsteered_judged_fluency": round(base, 4), "trials": results}
        print(f"{dim}: {best} effect {results[best]['effect']:+.3f} judged fluency "
              f"{results[best]['judged_fluency']:.3f} (of unsteered)", file=sys.stderr)  # fmt: skip
    manifest = {
        "built_by": "scripts/build_steering_directions.py",
        "method": "contrastive activation addition: mean reply-token residual of the top minus the bottom "
        f"{CONTRAST_QUANTILE:.0%} of training paragraphs on each dimension, within each source, averaged; "
        "unit length times gain times the layer's median residual norm",
        "corpus": {f"{source}_train_paragraphs": sources.count(source) for source in dict.fromkeys(sources)},
        "contrast_prompt": CONTRAST_PROMPT,
        "seed": seed,
        "candidate_layers": list(CANDIDATE_LAYERS),
        "gains": list(GAINS),
        "typical_norms": {str(k): round(v, 3) for k, v in norms.items()},
        "selection_prompts": list(TRAIN_PROMPTS),
        "selection_judge": "gemma-3-270m calibrated fluency; judged_fluency = the worse of -0.5 and +0.5 over unsteered",
        "selection_floor": FLUENCY_GOAL,
        "selection": selection,
    }
    path = SteeringDirections(MODEL_NAME, layers, vectors, manifest).save(out)
    print(f"wrote {path} in {time.perf_counter() - started:.0f} s", file=sys.stderr)


def ship(bench_json: Path, source: Path, out: Path) -> None:
    """Write the dimensions ``bench_steer.py`` passed (``"passed": [...]`` in its JSON) into ``out``."""
    report = json.loads(bench_json.read_text())
    candidates = SteeringDirections.load(source)
    passed = [d for d in report["passed"] if d in candidates.vectors]
    manifest = {**candidates.manifest, "heldout_check": report["summary"], "not_shipped": report["failed"]}
    shipped = SteeringDirections(
        MODEL_NAME,
        {d: candidates.layers[d] for d in passed},
        {d: candidates.vectors[d] for d in passed},
        manifest,
    )
    print(f"shipped {passed}; not shipped {report['failed']}; wrote {shipped.save(out)}", file=sys.stderr)


def _nanmean(values: list[float]) -> float:
    kept = [v for v in values if v == v]
    return sum(kept) / len(kept) if kept else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder to write (default: build/steering, or the package data with --ship)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--corpus",
        choices=CORPORA,
        default="reference",
        help="the paragraphs contrasted: pydoc and fortunes (the shipped set), or SmolLM2's own "
        "drafts of everyday topics and fortunes",
    )
    parser.add_argument(
        "--ship", type=Path, default=None, help="bench_steer.py --json output: ship the dimensions it passed"
    )
    parser.add_argument(
        "--from", dest="source", type=Path, default=Path("build/steering"), help="candidate folder for --ship"
    )
    args = parser.parse_args()
    if args.ship is not None:
        ship(args.ship, args.source, args.out or DATA_FOLDER)
    else:
        build(args.out or Path("build/steering"), args.seed, args.corpus)


if __name__ == "__main__":
    main()
