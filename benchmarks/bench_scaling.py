"""Validate the sigmoidal compute-curve fit (``rl.scaling``) on ScaleRL's reported curves, then on our PPO runs.

Part 1, synthetic: noisy pass-rate curves are sampled from the fits ScaleRL reports for its 8B dense runs
(R0 0.40; A 0.610, B 1.92, C_mid 2,542 GPU-hours over a 16k budget; A 0.645, B 1.89, C_mid 11,272 over
100k). Each evaluation is a pass rate on 1,000 held-out prompts, either one generation per prompt (binomial
noise, sd about 0.015) or the mean of 16 (sd about 0.004), on top of a slowly drifting AR(1) offset (sd
0.005, lag-1 correlation 0.9) standing for the policy's own wander; 100 evaluations evenly spread over the
budget; the first 1.5k GPU-hours are left out as in the paper. Per replicate:
  - recovery: fit the whole budget, 95% bootstrap intervals; report the share of replicates whose
    interval holds the true value (coverage) and the median error, with R0 free and with R0 fixed at the
    pass rate measured before training (a noisy measurement, not the truth);
  - extrapolation: fit the first half of the compute only, predict the second half; mean absolute error
    of the sigmoid and of the power law R = A - D C^-alpha against the true curve, and their ratio.

Part 2, ``--ppo``: our PPO on the tasks of bench_ppo.py (CartPole-v1 with SB3's defaults, Pendulum-v1 with
rl-zoo's settings), several seeds, compute = environment steps, metric = training episode_reward_mean. For
fit budgets of 25/50/75% of the run, the pooled seeds are fitted and the rest predicted; the error is
against the observed points (noise included), sigmoid vs power law. Runs are kept under
benchmarks/results/scaling/ and retrained only with ``--retrain``; the figure of all fits goes to
benchmarks/results/scaling/ppo_curves.png.

    .venv/bin/python benchmarks/bench_scaling.py                         # synthetic, 30 replicates
    .venv/bin/python benchmarks/bench_scaling.py --replicates 20         # a quick look
    nice -n 5 .venv/bin/python benchmarks/bench_scaling.py --ppo         # also the PPO runs
    nice -n 5 .venv/bin/python benchmarks/bench_scaling.py --ppo-only --grpo  # PPO and GRPO runs only

Part 3, ``--grpo``: GRPO (``resonance_os.llm``) on the tiny seeded Llama of tests/llm/tiny_lm.py (LoRA rank
4), reward = share of "cat" in 8-token completions, 100 steps, 3 seeds for each of three recipes: GRPO,
CISPO (ScaleRL's loss) and GRPO with a KL penalty (beta 0.1); compute = optimiser steps (each the same
32 completions), metric = episode_reward_mean in [0, 1]; fits on the first 50% and 75% of the steps.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import shutil  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from itertools import product  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from resonance_os.rl.scaling import ComputeCurve, SigmoidCurve, fit_compute_curve  # noqa: E402
from resonance_os.rl.scaling_io import read_compute_curve  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "scaling"


@dataclass(frozen=True)
class PaperRun:
    """A curve ScaleRL reports (third-party transcription of the paper's table; R0 from Fig. 1's digitization)."""

    name: str
    truth: SigmoidCurve
    budget: float  # GPU-hours


PAPER_RUNS = (
    PaperRun("8B dense, 14k gen", SigmoidCurve(0.40, 0.610, 1.92, 2542.0), 16_000.0),
    PaperRun("8B dense, 32k gen", SigmoidCurve(0.40, 0.645, 1.89, 11_272.0), 100_000.0),
)
EXCLUDE_BELOW = 1500.0  # GPU-hours, the paper's early regime
PROMPTS = 1000  # held-out prompts per evaluation
DRIFT_SD, DRIFT_PHI = 0.005, 0.9
EVALUATIONS = 100


@dataclass(frozen=True)
class Noise:
    """How one evaluation's pass rate scatters around the curve."""

    name: str
    samples_per_prompt: int  # pass rate averaged over this many generations of each of PROMPTS prompts


NOISES = (Noise("1 sample/prompt", 1), Noise("16 samples/prompt", 16))


def sample_run(run: PaperRun, noise: Noise, rng: np.random.Generator) -> tuple[ComputeCurve, float]:
    """Noisy evaluations along the paper's curve, and the pass rate measured before training."""
    compute = np.linspace(run.budget / EVALUATIONS, run.budget, EVALUATIONS)
    innovations = rng.normal(0.0, DRIFT_SD * np.sqrt(1 - DRIFT_PHI**2), EVALUATIONS)
    drift = np.empty(EVALUATIONS)
    drift[0] = rng.normal(0.0, DRIFT_SD)
    for i in range(1, EVALUATIONS):
        drift[i] = DRIFT_PHI * drift[i - 1] + innovations[i]
    trials = PROMPTS * noise.samples_per_prompt
    rate = np.clip(run.truth(compute) + drift, 0.0, 1.0)
    measured = rng.binomial(trials, rate) / trials
    r0_measured = rng.binomial(trials, run.truth.r0) / trials
    return ComputeCurve(compute, measured, label=run.name), float(r0_measured)


def synthetic(replicates: int, n_bootstrap: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    recovery_rows, extrapolation_rows = [], []
    for run in PAPER_RUNS:
        truth = run.truth.as_dict()
        for noise, mode in product(NOISES, ("R0 free", "R0 fixed")):
            covered = {name: 0 for name in truth}
            errors = {name: [] for name in truth}
            sig_err, pl_err, wins = [], [], 0
            for rep in range(replicates):
                curve, r0_measured = sample_run(run, noise, rng)
                r0 = r0_measured if mode == "R0 fixed" else None
                full = fit_compute_curve(
                    curve, exclude_below=EXCLUDE_BELOW, r0=r0, n_bootstrap=n_bootstrap, seed=rep
                )
                for name, value in full.curve.as_dict().items():
                    low, high = full.intervals[name]
                    covered[name] += low <= truth[name] <= high
                    errors[name].append(abs(value - truth[name]))
                half = fit_compute_curve(
                    curve, exclude_below=EXCLUDE_BELOW, r0=r0, fit_fraction=0.5, n_bootstrap=0, seed=rep
                )
                held = curve.compute[curve.compute > half.held_out["from_compute"]]
                s = float(np.mean(np.abs(half.curve(held) - run.truth(held))))
                p = float(np.mean(np.abs(half.power_law(held) - run.truth(held))))
                sig_err.append(s)
                pl_err.append(p)
                wins += s < p
            setting = f"{run.name}, {noise.name}"
            for name in truth:
                if mode == "R0 fixed" and name == "R0":
                    continue
                recovery_rows.append(
                    (
                        setting,
                        mode,
                        name,
                        truth[name],
                        float(np.median(errors[name])),
                        covered[name] / replicates,
                    )
                )
            extrapolation_rows.append(
                (setting, mode, float(np.mean(sig_err)), float(np.mean(pl_err)), wins / replicates)
            )

    print(
        f"\nRecovery on the paper's curves: {replicates} replicates, {EVALUATIONS} evaluations on {PROMPTS} prompts "
        f"+ AR(1) drift sd {DRIFT_SD}, points below {EXCLUDE_BELOW:g} GPU-h left out, {n_bootstrap} bootstrap refits"
    )
    print(
        f"{'run, evaluation noise':<40} {'mode':<9} {'param':<6} {'truth':>9} {'median |err|':>13} {'coverage':>9} {'nominal':>8}"
    )
    for name, mode, param, true, err, cover in recovery_rows:
        print(f"{name:<40} {mode:<9} {param:<6} {true:>9.4g} {err:>13.4g} {cover:>9.2f} {0.95:>8.2f}")
    print(
        "\nExtrapolation from half the budget to the full budget: mean |prediction - true curve| on the second half"
    )
    print(
        f"{'run, evaluation noise':<40} {'mode':<9} {'sigmoid':>9} {'power law':>10} {'ratio PL/sig':>13} {'sigmoid better':>15}"
    )
    for name, mode, s, p, share in extrapolation_rows:
        print(f"{name:<40} {mode:<9} {s:>9.4f} {p:>10.4f} {p / s:>13.2f} {share:>14.0%}")


@dataclass(frozen=True)
class PPOTask:
    env_id: str
    timesteps: int
    seeds: int
    bounds: tuple[float, float]
    hyperparams: dict
    n_envs: int = 1


PPO_TASKS = {
    # bench_ppo.py's CartPole: SB3 defaults with ent_coef 0; the return lies in [0, 500]
    "cartpole": PPOTask("CartPole-v1", 100_000, 3, (0.0, 500.0), dict(ent_coef=0.0)),
    # bench_ppo.py's Pendulum (rl-zoo settings); a return is 200 steps of reward in [-16.27, 0]
    "pendulum": PPOTask(
        "Pendulum-v1",
        150_000,
        3,
        (-3254.0, 0.0),
        dict(
            n_steps=1024,
            gae_lambda=0.95,
            gamma=0.9,
            n_epochs=10,
            ent_coef=0.0,
            learning_rate=1e-3,
            clip_range=0.2,
            batch_size=64,
        ),
        n_envs=4,
    ),
}
FIT_FRACTIONS = (0.25, 0.5, 0.75)


def train_ppo(name: str, task: PPOTask, seed: int, retrain: bool) -> Path:
    run_dir = RESULTS / name / f"seed{seed}"
    if (run_dir / "metrics.jsonl").is_file() and not retrain:
        return run_dir
    import torch

    from resonance_os.rl.algorithms.ppo import PPO

    torch.set_num_threads(1)
    shutil.rmtree(run_dir, ignore_errors=True)
    model = PPO("MlpPolicy", task.env_id, log_dir=run_dir, n_envs=task.n_envs, seed=seed, **task.hyperparams)
    start = time.process_time()
    model.learn(task.timesteps, progress_bar=False)
    print(f"trained {name} seed {seed}: {task.timesteps} steps, {time.process_time() - start:.0f} CPU-s")
    return run_dir


def ppo(tasks: list[str], n_bootstrap: int, retrain: bool) -> None:
    from resonance_os.rl.scaling_plot import plot_compute_curves

    rows, plotted, plotted_runs = [], [], []
    for name in tasks:
        task = PPO_TASKS[name]
        runs = [
            read_compute_curve(train_ppo(name, task, seed, retrain), label=f"{name} seed {seed}")
            for seed in range(task.seeds)
        ]
        final = float(np.mean([run.metric[-max(3, run.metric.size // 10) :].mean() for run in runs]))
        for fraction in FIT_FRACTIONS:
            fit = fit_compute_curve(
                runs, bounds=task.bounds, fit_fraction=fraction, n_bootstrap=n_bootstrap, label=name
            )
            rows.append((name, fraction, task.timesteps, fit, final))
            if fraction == 0.5:
                plotted.append(fit)
                plotted_runs.append(runs)
    out = plot_compute_curves(
        plotted,
        plotted_runs,
        RESULTS / "ppo_curves.png",
        metric_name="episode_reward_mean",
        compute_name="env steps",
    )
    print("\nOur PPO runs: fit on the first part of the steps (seeds pooled), predict the rest")
    print(
        f"{'task':<9} {'fit on':>8} {'A [95% interval]':>26} {'final':>8} {'B':>6} {'C_mid':>8} "
        f"{'MAE sigmoid':>12} {'MAE power law':>14} {'ratio PL/sig':>13}"
    )
    for name, fraction, budget, fit, final in rows:
        low, high = fit.intervals["A"]
        error = fit.extrapolation_error
        interval = f"{fit.curve.a:.1f} [{low:.1f}, {high:.1f}]"
        print(
            f"{name:<9} {int(fraction * budget):>8} {interval:>26} {final:>8.1f} {fit.curve.b:>6.2f} "
            f"{fit.curve.c_mid:>8.0f} {error['sigmoid']:>12.1f} {error['power_law']:>14.1f} "
            f"{error['power_law'] / error['sigmoid']:>13.2f}"
        )
        for note in fit.warnings:
            print(f"    {name} @ {fraction:.0%}: {note}")
    print(f"(final = mean of each seed's last 10% of points; figure: {out})")


GRPO_RECIPES = {
    "grpo": dict(loss_type="grpo"),
    "cispo": dict(loss_type="cispo"),  # ScaleRL's loss
    "grpo_kl": dict(loss_type="grpo", beta=0.1),  # a KL leash to the initial policy: a lower ceiling
}
GRPO_STEPS, GRPO_SEEDS = 100, 3
GRPO_PROMPTS = ["the cat sat on the mat", "a dog ran", "one two three", "hello world", "red blue green"]


def cat_share(prompts: list[str], completions: list[str]) -> list[float]:
    """Share of a completion's words that are "cat": learnable token by token from the tiny model's random init."""
    return [c.split().count("cat") / max(len(c.split()), 1) for c in completions]


def train_grpo(recipe: str, seed: int, retrain: bool) -> Path:
    run_dir = RESULTS / f"grpo_{recipe}" / f"seed{seed}"
    if (run_dir / "metrics.jsonl").is_file() and not retrain:
        return run_dir
    import sys

    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "llm"))
    from tiny_lm import make_model, make_tokenizer

    from resonance_os.llm.grpo import GRPO, GRPOConfig
    from resonance_os.llm.policy import LMPolicy, PolicyConfig

    torch.set_num_threads(1)
    shutil.rmtree(run_dir, ignore_errors=True)
    tokenizer = make_tokenizer()
    policy = LMPolicy(
        tokenizer, make_model(len(tokenizer), seed=seed), PolicyConfig(lora_rank=4, lora_alpha=8)
    )
    config = GRPOConfig(
        group_size=8,
        prompts_per_step=4,
        max_new_tokens=8,
        learning_rate=2e-4,
        seed=seed,
        **GRPO_RECIPES[recipe],
    )
    start = time.process_time()
    GRPO(policy, cat_share, GRPO_PROMPTS, config, log_dir=run_dir).learn(GRPO_STEPS, progress_bar=False)
    print(f"trained GRPO {recipe} seed {seed}: {GRPO_STEPS} steps, {time.process_time() - start:.0f} CPU-s")
    return run_dir


def grpo(n_bootstrap: int, retrain: bool) -> None:
    from resonance_os.rl.scaling_plot import plot_compute_curves

    rows, plotted, groups = [], [], []
    for recipe in GRPO_RECIPES:
        runs = [
            read_compute_curve(
                train_grpo(recipe, seed, retrain), metric="episode_reward_mean", label=f"seed {seed}"
            )
            for seed in range(GRPO_SEEDS)
        ]
        final = float(np.mean([run.metric[-10:].mean() for run in runs]))
        for fraction in (0.5, 0.75):
            fit = fit_compute_curve(runs, fit_fraction=fraction, n_bootstrap=n_bootstrap, label=recipe)
            rows.append((fit, fraction, final))
            if fraction == 0.75:
                plotted.append(fit)
                groups.append(runs)
    out = plot_compute_curves(
        plotted,
        groups,
        RESULTS / "grpo_curves.png",
        metric_name="reward (share of 'cat')",
        compute_name="GRPO steps",
    )
    print(
        f"\nGRPO on the tiny model ({GRPO_SEEDS} seeds, {GRPO_STEPS} steps), fit on the first part, predict the rest"
    )
    print(
        f"{'recipe':<8} {'fit on':>6} {'R0':>6} {'A [95% interval]':>22} {'final':>6} {'B':>6} {'C_mid':>6} "
        f"{'MAE sigmoid':>12} {'MAE power law':>14} {'ratio PL/sig':>13}"
    )
    for fit, fraction, final in rows:
        low, high = fit.intervals["A"]
        error = fit.extrapolation_error
        interval = f"{fit.curve.a:.3f} [{low:.3f}, {high:.3f}]"
        print(
            f"{fit.label:<8} {int(fraction * GRPO_STEPS):>6} {fit.curve.r0:>6.3f} {interval:>22} {final:>6.3f} "
            f"{fit.curve.b:>6.2f} {fit.curve.c_mid:>6.1f} {error['sigmoid']:>12.4f} {error['power_law']:>14.4f} "
            f"{error['power_law'] / error['sigmoid']:>13.2f}"
        )
        for note in fit.warnings:
            print(f"    {fit.label} @ {fraction:.0%}: {note}")
    print(f"(final = mean of each seed's last 10 steps; figure at 75%: {out})")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--replicates", type=int, default=30)
    parser.add_argument("--bootstrap", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ppo", action="store_true", help="also fit our PPO runs (trains missing ones)")
    parser.add_argument(
        "--grpo", action="store_true", help="also fit GRPO runs of the tiny model (trains missing ones)"
    )
    parser.add_argument("--ppo-only", action="store_true", help="skip the synthetic part")
    parser.add_argument("--tasks", nargs="+", default=list(PPO_TASKS), choices=list(PPO_TASKS))
    parser.add_argument("--retrain", action="store_true", help="retrain the PPO runs even if stored")
    args = parser.parse_args()
    if not args.ppo_only:
        synthetic(args.replicates, args.bootstrap, args.seed)
    if args.ppo or args.ppo_only:
        ppo(args.tasks, args.bootstrap, args.retrain)
    if args.grpo:
        grpo(args.bootstrap, args.retrain)


if __name__ == "__main__":
    main()
