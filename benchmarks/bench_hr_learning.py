"""Does PPO learn to write better? The spec's run (5000 timesteps, spec config) vs baselines.

For each seed: train ``train_hr_ppo(HRWritingEnv(), timesteps=5000, seed=seed)``, then evaluate the
trained policy (deterministic), a random policy and a zero-adjustment policy on the same seeded
episodes, reporting the mean per-step reward (the writing reward: resonance x writing quality) and,
for the trained policy, the mean per-step resonance alone (the style term). ``--runs`` also evaluates
saved run folders (``resonance train --out DIR``, e.g. made by an older build) on today's env, in
the same table. Goal: trained beats random and zero-adjustment.

    .venv/bin/python benchmarks/bench_hr_learning.py [--seeds 0 1 2] [--timesteps 5000] [--episodes 20]
        [--runs RUN_DIR ...]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from resonance_os.evolution.hr_policy import load_run
from resonance_os.evolution.hr_rl_trainer import HRWritingEnv, evaluate_writing_policy, train_hr_ppo

EVAL_SEED = 10_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--timesteps", type=int, default=5000)
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--runs", nargs="*", default=[], help="saved run folders to evaluate as well")
    args = parser.parse_args()
    torch.set_num_threads(1)
    env = HRWritingEnv()
    baselines = {
        name: evaluate_writing_policy(env, name, episodes=args.episodes, seed=EVAL_SEED)
        for name in ("random", "zero")
    }
    rows = []
    for seed in args.seeds:
        start_wall, start_cpu = time.perf_counter(), time.process_time()
        model = train_hr_ppo(HRWritingEnv(), timesteps=args.timesteps, seed=seed, progress_bar=False)
        wall, cpu = time.perf_counter() - start_wall, time.process_time() - start_cpu
        trained = evaluate_writing_policy(env, model, episodes=args.episodes, seed=EVAL_SEED)
        rows.append((f"seed {seed}", trained, f"{wall:.1f}", f"{cpu:.1f}", model.history[-1]))
    for run in args.runs:
        model, _ = load_run(run)
        trained = evaluate_writing_policy(env, model, episodes=args.episodes, seed=EVAL_SEED)
        rows.append((run, trained, "-", "-", None))
    print(
        f"\nHRWritingEnv, {args.timesteps} timesteps, spec PPO config, {args.episodes} evaluation episodes per"
        f" policy; reward = writing reward per step; random {baselines['random']['mean']:.3f}"
        f" (resonance {baselines['random']['resonance']:.3f}), zero {baselines['zero']['mean']:.3f}"
        f" (resonance {baselines['zero']['resonance']:.3f})\n"
    )
    print(
        "| policy | reward | resonance | reward - random | reward - zero | wall s | cpu s | loss | expl. var |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, s, wall, cpu, last in rows:
        loss = "- | -" if last is None else f"{last['loss']:.3f} | {last['explained_variance']:.3f}"
        print(
            f"| {name} | {s['mean']:.3f} | {s['resonance']:.3f} | {s['mean'] - baselines['random']['mean']:+.3f} | "
            f"{s['mean'] - baselines['zero']['mean']:+.3f} | {wall} | {cpu} | {loss} |"
        )
    trained = [r[1]["mean"] for r in rows if r[0].startswith("seed ")]
    if trained:
        print(f"\nmean over seeds: trained {np.mean(trained):.3f}")


if __name__ == "__main__":
    main()
