"""Does PPO learn which edits make a language model's draft resonate? The spec's run vs every baseline.

Train on the ``train`` drafts of the shipped pool (SmolLM2-written paragraphs, ``evolution.draft_pool``)
with ``train_hr_ppo(HRWritingEnv(), timesteps=T, seed=s)``, the spec's configuration, and evaluate
on ``heldout`` drafts (prompts never trained or tuned on) against the non-learning baselines, each
with the same edit budget (``evaluate_writing_policy``): no edits, random edits, the one-step feedback
rule (intensities = gain x (target - measured); the gain is the best of ``--gains`` on *train*
drafts) and the refiner's own measure -> edit -> measure loop. Reported: the final draft's writing
reward (mean over episodes), its gain over the first draft, resonance and quality factor; PPO at
each ``--timesteps`` (one run per seed continued to the next budget) and each ``--observations``
(``gap``: the signed gap to the target, the default; ``full``: measured HRV, target and revisions
left), side by side; env and training speed in steps per CPU-second. ``--plot`` saves the learning
curve.

    .venv/bin/python benchmarks/bench_hr_learning.py [--seeds 0 1 2] [--timesteps 5000 20000 50000]
        [--observations gap full] [--episodes 120] [--plot benchmarks/results/hr_learning.png]

``--control steer`` runs the steered task instead (``evolution.steered_writing``: the action steers
SmolLM2 sentence by sentence through the shipped steering directions). Training topics are the
pool's train prompts with random targets inside real prose's range; evaluation is on held-out
prompts with held-out targets (the built-in profiles and three writers' voices), ``--eval-batches``
x 32 paragraphs, the same topics, targets and sampling noise for every policy (paired). Baselines:
zero steering and the proportional controller (strength = k x gap, k the best of ``--gains`` on
training prompts). The model runs on one thread per process, so the seeds can run side by side:

    OMP_NUM_THREADS=1 python benchmarks/bench_hr_learning.py --control steer --seeds 0 --json a.json
    OMP_NUM_THREADS=1 python benchmarks/bench_hr_learning.py --control steer --seeds --json base.json
    python benchmarks/bench_hr_learning.py --control steer --merge a.json b.json c.json base.json
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from resonance_os.evolution.hr_rl_trainer import (
    OBSERVATIONS,
    STEER_ENVS,
    HRWritingEnv,
    evaluate_writing_policy,
    feedback_rule,
    success_indicators,
    train_hr_ppo,
)
from resonance_os.evolution.steered_writing import (
    OBJECTIVES,
    SteeredWritingVectorEnv,
    evaluate_steering_policy,
    proportional_controller,
)
from resonance_os.rl import PPO

EVAL_SEED = 10_000
SEARCH_CANDIDATES = 64


def greedy_search(env: HRWritingEnv, seed: int = 0) -> Callable[[np.ndarray], np.ndarray]:
    """An upper reference, not a baseline: at each revision, the best of 97 edit sets by the score it
    would give (``env.preview``): no edits, each dimension alone at +-1 and +-2 edits, and 64 seeded
    random mixes. A policy acting on the observation alone, as PPO does, cannot measure its options."""
    rng = np.random.default_rng(seed)
    single = [np.eye(8)[d] * s for d in range(8) for s in (-1.0, -0.5, 0.5, 1.0)]
    mixes = list(rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], size=(SEARCH_CANDIDATES, 8)))
    candidates = [np.zeros(8), *single, *mixes]
    return lambda obs: max(candidates, key=env.preview)


def env_speed(steps: int = 2000) -> float:
    """Env steps per CPU-second under uniform random actions on fresh train drafts (cold caches)."""
    env = HRWritingEnv(seed=0)
    env.reset()
    start = time.process_time()
    for _ in range(steps):
        _, _, terminated, _, _ = env.step(env.action_space.sample())
        if terminated:
            env.reset()
    return steps / (time.process_time() - start)


def steered_runs(args: argparse.Namespace) -> dict[str, dict]:
    """Train and evaluate on the steered task: the baselines when no seed is given, else PPO per seed."""
    heldout = SteeredWritingVectorEnv(STEER_ENVS, split="heldout", objective=args.objective)
    rows: dict[str, dict] = {}
    if not args.seeds:
        rows["zero steering"] = evaluate_steering_policy(
            heldout, lambda obs: np.zeros_like(obs), args.eval_batches, EVAL_SEED
        )
        train_env = heldout.vectorised(STEER_ENVS, split="train", targets=None)
        tuning = {
            k: evaluate_steering_policy(train_env, proportional_controller(k, heldout.steerable), 1, 0)[
                "mean"
            ]
            for k in args.gains
        }
        best = max(tuning, key=tuning.get)
        row = evaluate_steering_policy(
            heldout, proportional_controller(best, heldout.steerable), args.eval_batches, EVAL_SEED
        )
        rows[
            f"proportional controller (k {best:g}; train scores {', '.join(f'{k:g}: {v:.3f}' for k, v in tuning.items())})"
        ] = row
        return rows
    residual = {"controller_gain": args.residual} if args.residual else {}
    heldout = heldout.vectorised(STEER_ENVS, **residual)
    for seed in args.seeds:
        train_env = heldout.vectorised(STEER_ENVS, seed=seed, split="train", targets=None)
        start, cpu = time.perf_counter(), time.process_time()
        model = train_hr_ppo(train_env, timesteps=args.timesteps[0], seed=seed, progress_bar=False)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        row = evaluate_steering_policy(heldout, model, args.eval_batches, EVAL_SEED)
        last = model.history[-1]
        row.update(
            seed=seed, timesteps=model.num_timesteps, train_wall_s=wall, train_cpu_s=cpu,
            success={key: last[key] for key in ("loss", "explained_variance")},
        )  # fmt: skip
        on = f" residual on controller k {args.residual:g}" if args.residual else ""
        rows[f"PPO{on} seed {seed}, {args.timesteps[0]} steps"] = row
        if args.save:
            model.save(args.save / f"seed{seed}")  # PPO.load(path, env=...) reads it
    return rows


def read_steered(args: argparse.Namespace) -> None:
    """Held-out paragraphs to read (``--read-paragraphs``), the same topics, targets and noise for each
    policy: zero steering, the controller of gain ``--gains[0]`` and every policy saved in ``--read``
    (on ``--residual``); then each policy's mean judged fluency (``quality.judge``, Gemma-3-270M, which
    neither the env's reward nor the policies read) beside zero steering's."""
    from resonance_os.quality.judge import fluency_judge

    paragraphs = args.read_paragraphs
    heldout = SteeredWritingVectorEnv(paragraphs, split="heldout", objective=args.objective)
    trained = heldout.vectorised(paragraphs, controller_gain=args.residual)
    policies = [
        ("zero steering", heldout, np.zeros_like),
        (f"controller k {args.gains[0]:g}", heldout, proportional_controller(args.gains[0], heldout.steerable)),
    ]  # fmt: skip
    for path in sorted(args.read.iterdir()):
        model = PPO.load(path)
        policies.append(
            (f"PPO {path.name}", trained, lambda obs, m=model: m.predict(obs, deterministic=True)[0])
        )
    judge, judged = fluency_judge(), {}
    for name, env, act in policies:
        obs, _ = env.reset(seed=EVAL_SEED)
        for _ in range(env.sentences):
            obs, _, _, _, infos = env.step(act(obs))
        final = infos["final_info"]
        judged[name] = float(np.mean(judge.score_many(list(final["text"]))))
        print(f"\n## {name}")
        for b in range(paragraphs):
            print(f"\n{final['prompt'][b]} (score {final['score'][b]:.3f}, resonance {final['resonance'][b]:.3f},"
                  f" fluency {final['fluency'][b]:.2f}, topic {final['topic'][b]:.2f})\n> {final['text'][b]}")  # fmt: skip
    print(
        f"\nJudged fluency (Gemma-3-270M), mean over the {paragraphs} paragraphs, and over zero steering's:"
    )
    for name, value in judged.items():
        print(f"  {name}: {value:.3f} ({value / judged['zero steering']:.3f})")


def print_steered(rows: dict[str, dict]) -> None:
    """The steered task's table: each policy on the same held-out paragraphs, and PPO vs the baselines
    by the issue's measure (resonance, with fluency and topic held)."""
    zero = rows["zero steering"]
    baselines = {name: r for name, r in rows.items() if not name.startswith("PPO")}
    best_name = max(baselines, key=lambda n: baselines[n]["resonance"])
    best = baselines[best_name]
    print(f"\nSteered HRWritingEnv on held-out prompts and targets: {int(zero['episodes'])} paragraphs of 4 sentences,"
          " the same topics, targets and sampling noise for every policy; score = the env's objective\n")  # fmt: skip
    print("| policy | score | writing reward | resonance | fluency | topic | quality | sentences kept | resonance vs zero | resonance vs best baseline |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in rows.items():
        print(
            f"| {name} | {r['mean']:.4f} | {r.get('reward', float('nan')):.4f} | {r['resonance']:.4f} | {r['fluency']:.3f}"
            f" | {r['topic']:.3f} | {r['quality']:.3f} | {r.get('sentences', float('nan')):.2f}"
            f" | {r['resonance'] - zero['resonance']:+.4f} | {r['resonance'] - best['resonance']:+.4f} |"
        )  # fmt: skip
    ppo = [r for name, r in rows.items() if name.startswith("PPO")]
    if ppo:
        mean = {key: float(np.mean([r[key] for r in ppo])) for key in ("resonance", "fluency", "topic")}
        print(f"\nPPO mean over {len(ppo)} seeds: resonance {mean['resonance']:.4f}, "
              f"{mean['resonance'] - best['resonance']:+.4f} over the best baseline ({best_name.split(' (')[0]}, "
              f"{best['resonance']:.4f}; goal >= +0.02); fluency {mean['fluency'] - best['fluency']:+.3f}, "
              f"topic {mean['topic'] - best['topic']:+.3f} against it (held: >= -0.01)")  # fmt: skip
        for r in ppo:
            measured = {
                "reward_per_step": r["mean"],
                **r["success"],
            }  # reward: held out, as `resonance train`
            cells = [f"{label.split(':')[0]}: {value:.3f} ({'met' if met else 'not met'})" for label, value, met in success_indicators(measured)]  # fmt: skip
            print(f"seed {r['seed']}: {r['timesteps']} steps in {r['train_wall_s']:.0f} s wall, {r['train_cpu_s']:.0f} CPU s;"
                  f" spec success indicators: {'; '.join(cells)}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--control", choices=("edits", "steer"), default="edits")
    parser.add_argument(
        "--eval-batches", type=int, default=4, help="steer: held-out batches of 32 paragraphs"
    )
    parser.add_argument("--json", type=Path, default=None, help="steer: write the rows here")
    parser.add_argument("--save", type=Path, default=None, help="steer: save each trained policy here")
    parser.add_argument(
        "--read", type=Path, default=None,
        help="steer: print held-out paragraphs of zero steering, the controller (k = --gains[0]) and each policy saved here",
    )  # fmt: skip
    parser.add_argument("--read-paragraphs", type=int, default=6, help="steer: paragraphs --read prints")
    parser.add_argument(
        "--merge", type=Path, nargs="+", default=None, help="steer: print the table of these rows"
    )
    parser.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    parser.add_argument("--timesteps", type=int, nargs="+", default=[5000, 20000, 50000])
    parser.add_argument("--episodes", type=int, default=120)
    parser.add_argument("--gains", type=float, nargs="+", default=[1.0, 2.5, 5.0, 10.0])
    parser.add_argument(
        "--objective", choices=OBJECTIVES, default="resonance",
        help="steer: what an episode's return scores (and k is tuned on)",
    )  # fmt: skip
    parser.add_argument(
        "--residual", type=float, default=0.0,
        help="steer: PPO acts as a residual on the proportional controller of this gain (0: off)",
    )  # fmt: skip
    parser.add_argument("--observations", nargs="+", choices=OBSERVATIONS, default=list(OBSERVATIONS))
    parser.add_argument("--plot", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.control == "steer":
        if args.read:
            read_steered(args)
            return
        if args.merge:
            rows = {k: v for path in args.merge for k, v in json.loads(path.read_text()).items()}
        else:
            rows = steered_runs(args)
            if args.json:
                args.json.write_text(json.dumps(rows, indent=1))
        if any(name == "zero steering" for name in rows):
            print_steered(rows)
        return
    heldout = HRWritingEnv(split="heldout")
    train = HRWritingEnv(split="train")
    gain = max(
        args.gains, key=lambda g: evaluate_writing_policy(train, feedback_rule(g), args.episodes, 0)["mean"]
    )
    rows: dict[str, dict[str, float]] = {
        name: evaluate_writing_policy(heldout, policy, episodes=args.episodes, seed=EVAL_SEED)
        for name, policy in (
            ("no edits", "zero"),
            ("random edits", "random"),
            (f"feedback rule (gain {gain:g})", feedback_rule(gain)),
            ("refiner loop", "refiner"),
        )
    }
    best_baseline = max(row["mean"] for row in rows.values())
    search = evaluate_writing_policy(heldout, greedy_search(heldout), episodes=args.episodes, seed=EVAL_SEED)
    curve: dict[tuple[str, int], list[float]] = {
        (o, t): [] for o in args.observations for t in args.timesteps
    }
    cpu_per_step = []
    for observation in args.observations:
        evaluation = HRWritingEnv(split="heldout", observation=observation)
        for seed in args.seeds:
            env = HRWritingEnv(seed=seed, observation=observation)
            model, done = None, 0
            for budget in sorted(args.timesteps):
                start = time.process_time()
                if model is None:
                    model = train_hr_ppo(env, timesteps=budget, seed=seed, progress_bar=False)
                else:
                    model.learn(budget - done, progress_bar=False, reset_num_timesteps=False)
                cpu_per_step.append((time.process_time() - start) / (model.num_timesteps - done))
                done = model.num_timesteps
                row = evaluate_writing_policy(evaluation, model, episodes=args.episodes, seed=EVAL_SEED)
                rows[f"PPO ({observation} observation) seed {seed}, {budget} steps"] = row
                curve[observation, budget].append(row["mean"])
    print(
        f"\nHRWritingEnv on held-out SmolLM2 drafts: {args.episodes} episodes, {heldout.max_episode_steps} revisions"
        f" x up to {heldout.max_edits} edits per dimension; reward = the final draft's writing reward\n"
    )
    print("| policy | final reward | gain over first draft | resonance | quality | vs best baseline |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, row in rows.items():
        print(
            f"| {name} | {row['mean']:.4f} | {row['gain']:+.4f} | {row['resonance']:.3f} | {row['quality']:.3f}"
            f" | {row['mean'] - best_baseline:+.4f} |"
        )
    print(
        f"| (upper reference) greedy search, 97 measured edit sets per revision | {search['mean']:.4f}"
        f" | {search['gain']:+.4f} | {search['resonance']:.3f} | {search['quality']:.3f}"
        f" | {search['mean'] - best_baseline:+.4f} |"
    )
    print("\n| observation | timesteps | PPO mean over seeds | - best baseline |\n|---|---:|---:|---:|")
    for (observation, budget), values in curve.items():
        print(
            f"| {observation} | {budget} | {np.mean(values):.4f} | {np.mean(values) - best_baseline:+.4f} |"
        )
    print(
        f"\nspeed: env {env_speed():.0f} steps per CPU-second (random actions, cold revision cache);"
        f" training {1 / np.mean(cpu_per_step):.0f} steps per CPU-second (env + PPO updates)"
    )
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        for index, observation in enumerate(args.observations):
            budgets = sorted(args.timesteps)
            ax.errorbar(
                budgets,
                [np.mean(curve[observation, b]) for b in budgets],
                yerr=[np.std(curve[observation, b]) for b in budgets],
                marker="o",
                color=f"C{index}",
                label=f"PPO, {observation} observation (mean, sd over seeds)",
            )
        for index, (name, row) in enumerate(list(rows.items())[:4]):
            ax.axhline(row["mean"], linestyle="--", linewidth=1, label=name, color=f"C{2 + index}")
        ax.set_xscale("log")
        ax.set_xlabel("training timesteps")
        ax.set_ylabel("final draft's writing reward (held-out)")
        ax.set_title("HR-RL on SmolLM2 drafts")
        ax.legend(fontsize=7)
        fig.tight_layout()
        args.plot.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(args.plot, dpi=120)
        print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()
