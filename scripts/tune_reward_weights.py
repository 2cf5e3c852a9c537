"""Choose the writing reward's exponents on TRAINING paragraphs (never the held-out ones).

    .venv/bin/python scripts/tune_reward_weights.py [--paragraphs 200] [--source train|docstrings]

Scores every term once for training paragraphs of ``quality.corpus`` and their damaged versions
(the same five damages as ``benchmarks/bench_reward.py``), then searches a grid of exponents of

    reward = resonance * fluency^a * coherence^b * topic^c * (1 - repetition)

for the one whose worst damage (paired AUC, averaged over the three built-in profiles) is best, ties
broken by the mean over damages. Prints the top rows and the current exponents' row; the chosen
exponents are set by hand in ``quality/reward.py``.

``--source docstrings`` tunes on the training-only docstring paragraphs
(``quality.corpus.docstring_paragraphs``) instead: text that neither the n-gram fluency model nor the
topic vectors were fitted on, so, unlike the training split, real paragraphs are not flattered by
terms that have seen them.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from bench_reward import DAMAGES, damaged_versions, prompt_maker, real_paragraphs  # noqa: E402

from resonance_os.generation.human_resonant_writer import HumanResonantWriter  # noqa: E402
from resonance_os.profiles.templates import BUILTIN_TEMPLATES  # noqa: E402
from resonance_os.profiling.hrv_extractor import HRVExtractor  # noqa: E402
from resonance_os.quality import corpus  # noqa: E402
from resonance_os.quality.reward import W_COHERENCE, W_FLUENCY, W_TOPIC, WritingReward  # noqa: E402

GRID = {
    "a": (0.5, 1.0, 1.5, 2.0),
    "b": (0.0, 0.1, 0.2, 0.35, 0.5, 1.0),
    "c": (0.25, 0.5, 1.0, 1.5, 2.0),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paragraphs", type=int, default=200)
    parser.add_argument("--source", choices=("train", "docstrings"), default="train")
    args = parser.parse_args()
    if args.source == "docstrings":
        paragraphs = corpus.docstring_paragraphs()
        random.Random(0).shuffle(paragraphs)
        paragraphs = paragraphs[: args.paragraphs]
    else:
        paragraphs = real_paragraphs(args.paragraphs, "train")
    make_prompt = prompt_maker()
    prompts = [make_prompt(p) for p in paragraphs]
    extractor = HRVExtractor()
    writer = HumanResonantWriter(backend="builtin", extractor=extractor)
    damaged = damaged_versions(paragraphs, prompts, [extractor.extract(p) for p in paragraphs], writer)
    reward = WritingReward(extractor=extractor)
    terms = ("resonance", "fluency", "coherence", "topic", "repetition")
    # scores[profile][damage] -> (original terms, damaged terms) arrays of shape (pairs, 5)
    scores = {}
    for profile in BUILTIN_TEMPLATES.values():
        target = profile.vector.to_list()
        for name in DAMAGES:
            rows = [
                (reward.score(p, target, prompt=q), reward.score(d[name], target, prompt=q))
                for p, d, q in zip(paragraphs, damaged, prompts)
                if d[name] is not None
            ]
            scores[profile.name, name] = tuple(
                np.array([[getattr(r[k], t) for t in terms] for r in rows]) for k in (0, 1)
            )

    def combined(x: np.ndarray, a: float, b: float, c: float) -> np.ndarray:
        res, flu, coh, top, rep = x.T
        return res * flu**a * coh**b * top**c * (1.0 - rep)

    results = []
    for a, b, c in itertools.product(GRID["a"], GRID["b"], GRID["c"]):
        per_damage = []
        for name in DAMAGES:
            aucs = []
            for profile in BUILTIN_TEMPLATES.values():
                orig, dam = scores[profile.name, name]
                ro, rd = combined(orig, a, b, c), combined(dam, a, b, c)
                aucs.append(np.mean((ro > rd) + 0.5 * (ro == rd)))
            per_damage.append(float(np.mean(aucs)))
        results.append((min(per_damage), float(np.mean(per_damage)), (a, b, c), per_damage))
    results.sort(key=lambda r: (r[0], r[1]), reverse=True)
    print("| a (fluency) | b (coherence) | c (topic) | worst | mean | " + " | ".join(DAMAGES) + " |")
    print("|---:|---:|---:|---:|---:|" + "---:|" * len(DAMAGES))
    current = (W_FLUENCY, W_COHERENCE, W_TOPIC)
    shown = results[:12] + [r for r in results[12:] if r[2] == current]
    for worst, mean, (a, b, c), per_damage in shown:
        print(
            f"| {a} | {b} | {c} | {worst:.3f} | {mean:.3f} | "
            + " | ".join(f"{v:.3f}" for v in per_damage)
            + " |"
        )


if __name__ == "__main__":
    main()
