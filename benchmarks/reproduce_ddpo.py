"""Reproduce the DDPO paper's comparison (Black et al. 2023, Fig. 4) on the 16x16 digits DDPM.

All four methods (DDPO_IS, DDPO_SF, RWR, sparse RWR) fine-tune the same pretrained model on each
reward with the same sample budget, for several seeds. Prints a table of the final reward
(mean +- std over seeds) beside the pretrained model's, checks the paper's ordering
(DDPO_IS >= DDPO_SF > RWR, sparse RWR), writes one figure per reward (reward against samples
seen) and the final sample grids to ``benchmarks/results/``, and measures the samples/s of one
DDPO_IS epoch with and without the optimisations (batched guidance, inference-mode sampling,
timestep subsampling).

    nice -n 5 .venv/bin/python benchmarks/reproduce_ddpo.py                 # full: 3 rewards x 4 x 3 seeds
    .venv/bin/python benchmarks/reproduce_ddpo.py --rewards compressibility --epochs 4 --seeds 0
    .venv/bin/python benchmarks/reproduce_ddpo.py --rewards --speed-repeats 3     # only the speed table

Each finished run is kept in ``results/ddpo_runs/`` and read back on the next call, so the grid can
run as several processes (``--rewards X --methods Y --skip-speed``) and a last call aggregates it;
each reward writes ``results/ddpo_<reward>.json`` and ``.png``, the speed table ``results/ddpo_speed.json``.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from pathlib import Path

import numpy as np
import torch

from resonance_os.diffusion.ddim import ddim_step_with_logprob, ddim_timesteps, linear_alphas_cumprod
from resonance_os.diffusion.ddpo import DDPO, DDPOConfig
from resonance_os.diffusion.grid import save_grid
from resonance_os.diffusion.pretrain import load_pretrained
from resonance_os.diffusion.rewards import REWARD_NAMES, make_reward

METHODS = {"is": "DDPO_IS", "sf": "DDPO_SF", "rwr": "RWR", "sparse_rwr": "RWR_sparse"}
COLOURS = {"is": "tab:blue", "sf": "tab:orange", "rwr": "tab:green", "sparse_rwr": "tab:red"}
RESULTS = Path(__file__).parent / "results"
EVAL_SAMPLES = 200
EVAL_SEED = 99
NOISE_FLOOR_SEEDS = 5
UNOPTIMISED = "unoptimised (two CFG passes, autograd sampling, all steps)"


def evaluate(trainer: DDPO, reward_fn, seed: int = EVAL_SEED) -> float:
    """Mean reward of EVAL_SAMPLES fresh samples (20 of each digit) with fixed noise."""
    labels = torch.arange(EVAL_SAMPLES) % 10
    images = trainer.sample(labels, seed=seed).images
    return float(np.mean(reward_fn(images, labels)))


def noise_floor(trainer: DDPO, reward_fn) -> float:
    """How far the evaluation moves with no training at all: the std of the untrained model's
    mean reward over NOISE_FLOOR_SEEDS other noise draws (the evaluation itself reuses one draw)."""
    return float(np.std([evaluate(trainer, reward_fn, seed) for seed in range(NOISE_FLOOR_SEEDS)]))


def permuted(reward_fn, seed: int):
    """The no-signal control: each batch's rewards shuffled among its samples, so the updates keep
    their size and noise but not the reward's direction (the batch mean, the curve, is unchanged)."""
    rng = np.random.default_rng(seed)
    return lambda images, labels: rng.permutation(np.asarray(reward_fn(images, labels), dtype=np.float64))


def train_batch_size(method: str, args) -> int:
    """Chains per gradient step: ``--train-batch-size`` for DDPO_IS (the one method whose run name
    records it), half an epoch's samples otherwise and by default."""
    return (args.train_batch_size if method == "is" else 0) or args.samples_per_epoch // 2


def run_one(models, reward: str, method: str, seed: int, args) -> dict:
    reward_fn = make_reward(reward, models.classifier)
    unet = copy.deepcopy(models.unet)
    config = DDPOConfig(
        method=method,
        reward=reward,
        seed=seed,
        samples_per_epoch=args.samples_per_epoch,
        train_batch_size=train_batch_size(method, args),
        learning_rate=args.learning_rate,
        clip_range=args.clip_range,
        num_inner_epochs=args.inner_epochs if method == "is" else 1,
        min_policy_std=args.min_policy_std,
    )
    trainer = DDPO(unet, permuted(reward_fn, seed) if args.permuted_rewards else reward_fn, config)
    start = time.perf_counter()
    trainer.learn(args.epochs * args.samples_per_epoch)
    seconds = time.perf_counter() - start
    curve = [(row["timesteps"], row["episode_reward_mean"]) for row in trainer.logger.history]
    final = evaluate(trainer, reward_fn)
    if seed == args.seeds[0]:
        labels = torch.arange(20) % 10
        save_grid(
            trainer.sample(labels, seed=EVAL_SEED).images,
            RESULTS / f"ddpo_{reward}{args.tag}_{method}_grid.png",
        )
    trainer.close()
    return {"curve": curve, "final": final, "seconds": seconds}


def run_or_load(models, reward: str, method: str, seed: int, args) -> dict:
    """A finished run is kept in ``results/ddpo_runs/`` and read back, so the grid can be split
    across processes (one per reward or method) and a last call only aggregates."""
    name = f"{reward}_{method}_seed{seed}_{args.epochs}x{args.samples_per_epoch}_lr{args.learning_rate:g}"
    if method in ("is", "sf"):  # the settings only DDPO reads
        name += f"_std{args.min_policy_std:g}"
    if method == "is":  # only DDPO_IS reuses a batch
        name += f"_clip{args.clip_range:g}_inner{args.inner_epochs}"
        if train_batch_size(method, args) != args.samples_per_epoch // 2:
            name += f"_batch{train_batch_size(method, args)}"
    if args.permuted_rewards:
        name += "_permuted"
    path = RESULTS / "ddpo_runs" / f"{name}.json"
    if path.is_file():
        return json.loads(path.read_text())
    result = run_one(models, reward, method, seed, args)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result))
    tmp.replace(path)
    return result


def plot_reward(reward: str, runs: dict, baseline: float, out: Path, control: bool = False) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for method, seeds in runs.items():
        xs = np.array([x for x, _ in seeds[0]["curve"]])
        ys = np.array([[y for _, y in run["curve"]] for run in seeds])
        mean, std = ys.mean(axis=0), ys.std(axis=0)
        ax.plot(xs, mean, color=COLOURS[method], label=METHODS[method])
        ax.fill_between(xs, mean - std, mean + std, color=COLOURS[method], alpha=0.15, linewidth=0)
    ax.axhline(baseline, color="grey", linestyle="--", linewidth=1, label="pretrained")
    ax.set_xlabel("samples seen")
    ax.set_ylabel(f"{reward} (batch mean)")
    title = f"{reward}: mean +- std over {len(next(iter(runs.values())))} seeds"
    ax.set_title(f"{title}\nno-signal control: each batch's rewards permuted" if control else title)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def naive_sample(unet, labels: torch.Tensor, num_steps: int, guidance_scale: float, seed: int) -> None:
    """The unoptimised sampler: autograd on, the two guidance branches as two forward passes."""
    generator = torch.Generator().manual_seed(seed)
    size = unet.config.image_size
    x = torch.randn((labels.shape[0], 1, size, size), generator=generator)
    null = torch.full_like(labels, unet.null_label)
    alphas = linear_alphas_cumprod()
    for t in ddim_timesteps(num_steps):
        batch_t = t.expand(labels.shape[0])
        eps_cond, eps_uncond = unet(x, batch_t, labels), unet(x, batch_t, null)
        eps = eps_uncond + guidance_scale * (eps_cond - eps_uncond)
        x, _ = ddim_step_with_logprob(eps, batch_t, x, alphas, num_steps, generator=generator)


def measure_speed(models, args) -> dict[str, float]:
    """Samples per CPU-second of one DDPO_IS epoch (sample + reward + update), best of ``args.speed_repeats``.

    CPU time (one thread) rather than wall time, so that the figure holds on a busy shared machine.
    """
    reward_fn = make_reward("compressibility")
    n = args.samples_per_epoch
    labels = torch.arange(n) % 10

    def epoch(timestep_fraction: float, min_policy_std: float, naive: bool, inner_epochs: int = 1) -> float:
        config = DDPOConfig(
            samples_per_epoch=n,
            train_batch_size=n // 2,
            timestep_fraction=timestep_fraction,
            min_policy_std=min_policy_std,
            num_inner_epochs=inner_epochs,
        )
        trainer = DDPO(copy.deepcopy(models.unet), reward_fn, config)
        best = float("inf")
        for repeat in range(args.speed_repeats):
            start = time.process_time()
            if naive:
                naive_sample(
                    trainer.unet, labels, trainer.config.num_steps, trainer.config.guidance_scale, repeat
                )
                sample_seconds = time.process_time() - start
                trajectory = trainer.sample(labels, seed=repeat)  # the update's input, not timed
            else:
                trajectory = trainer.sample(labels, seed=repeat)
                sample_seconds = time.process_time() - start
            update_start = time.process_time()
            trainer.update(trajectory, reward_fn(trajectory.images, labels), seed=repeat)
            best = min(best, sample_seconds + time.process_time() - update_start)
        return n / best

    floor = DDPOConfig.min_policy_std
    return {
        f"optimised (batched CFG, inference mode, 50% of the steps with sigma >= {floor:g})": epoch(
            0.5, floor, naive=False
        ),
        "the same with two inner epochs (the benchmark's DDPO_IS)": epoch(0.5, floor, False, inner_epochs=2),
        "50% of all 10 steps (no sigma floor)": epoch(0.5, 0.0, naive=False),
        "all 10 steps trained (timestep_fraction 1.0)": epoch(1.0, 0.0, naive=False),
        UNOPTIMISED: epoch(1.0, 0.0, naive=True),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rewards", nargs="*", default=list(REWARD_NAMES), choices=REWARD_NAMES)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--samples-per-epoch", type=int, default=64)
    parser.add_argument(
        "--train-batch-size",
        type=int,
        default=0,
        help="chains per DDPO_IS gradient step (default: half an epoch's samples, two steps per inner epoch)",
    )
    parser.add_argument("--learning-rate", type=float, default=DDPOConfig.learning_rate)
    parser.add_argument("--clip-range", type=float, default=DDPOConfig.clip_range)
    parser.add_argument("--inner-epochs", type=int, default=DDPOConfig.num_inner_epochs)
    parser.add_argument(
        "--min-policy-std",
        type=float,
        default=DDPOConfig.min_policy_std,
        help="DDPO trains only the denoising steps with sigma_t at least this (0: all)",
    )
    parser.add_argument(
        "--permuted-rewards",
        action="store_true",
        help="control: train on each batch's rewards shuffled among its samples (no signal); "
        "the final reward is still the true one. Give it its own --tag",
    )
    parser.add_argument("--speed-repeats", type=int, default=2)
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--tag", default="", help="suffix of the figure, JSON and grid names (e.g. _long)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    RESULTS.mkdir(parents=True, exist_ok=True)
    models = load_pretrained(on_progress=print)
    pretrained_trainer = DDPO(copy.deepcopy(models.unet), make_reward("compressibility"))
    save_grid(
        pretrained_trainer.sample(torch.arange(20) % 10, seed=EVAL_SEED).images,
        RESULTS / "ddpo_pretrained_grid.png",
    )

    budget = args.epochs * args.samples_per_epoch
    print(
        f"budget: {args.epochs} epochs x {args.samples_per_epoch} samples = {budget} samples per run; seeds {args.seeds}"
    )
    for reward in args.rewards:
        reward_fn = make_reward(reward, models.classifier)
        baseline = evaluate(pretrained_trainer, reward_fn)
        floor = noise_floor(pretrained_trainer, reward_fn)
        runs: dict = {}
        for method in args.methods:
            runs[method] = [run_or_load(models, reward, method, seed, args) for seed in args.seeds]
        minutes = sum(r["seconds"] for seeds in runs.values() for r in seeds) / 60  # summed over runs
        plot_reward(reward, runs, baseline, RESULTS / f"ddpo_{reward}{args.tag}.png", args.permuted_rewards)
        finals = {m: np.array([r["final"] for r in seeds]) for m, seeds in runs.items()}
        print(
            f"\n{reward}: final reward on {EVAL_SAMPLES} fresh samples after {budget} samples "
            f"({len(args.seeds)} seeds; {minutes:.1f} min of training summed over runs)"
        )
        print(f"{'method':<12}{'final mean +- std':>24}{'gain vs pretrained':>20}{'gain / DDPO_IS gain':>22}")
        print(
            f"{'pretrained':<12}{baseline:>24.4f}   (noise floor: +- {floor:.4f} over {NOISE_FLOOR_SEEDS} noise draws)"
        )
        gains = {m: finals[m].mean() - baseline for m in finals}
        for method, values in finals.items():
            ratio = gains[method] / gains["is"] if "is" in gains and gains["is"] != 0 else float("nan")
            print(
                f"{METHODS[method]:<12}{values.mean():>15.4f} +- {values.std():.4f}"
                f"{gains[method]:>+20.4f}{ratio:>22.2f}"
            )
        if {"is", "sf"} <= set(finals) and len(args.seeds) > 1:  # same seed, same pretrained model and noise
            diff = finals["is"] - finals["sf"]
            print(
                f"DDPO_IS - DDPO_SF paired by seed: {diff.mean():+.4f} +- {diff.std(ddof=1) / np.sqrt(len(diff)):.4f} "
                f"(s.e.); DDPO_IS >= DDPO_SF in {int((diff >= 0).sum())} of {len(diff)} seeds"
            )
        if set(METHODS) <= set(finals):
            means = {m: finals[m].mean() for m in finals}
            holds = means["is"] >= means["sf"] > max(means["rwr"], means["sparse_rwr"])
            print(
                f"paper's ordering DDPO_IS >= DDPO_SF > RWR, RWR_sparse: {'holds' if holds else 'does NOT hold'}"
            )
        summary = {
            "config": vars(args),
            "pretrained": baseline,
            "noise_floor": floor,
            "minutes": minutes,
            "final": {m: finals[m].tolist() for m in finals},
            "curves": {m: [r["curve"] for r in seeds] for m, seeds in runs.items()},
        }
        (RESULTS / f"ddpo_{reward}{args.tag}.json").write_text(json.dumps(summary, indent=1))
    if not args.skip_speed:
        speeds = measure_speed(models, args)
        base = speeds[UNOPTIMISED]
        print(
            f"\nDDPO_IS epoch speed ({args.samples_per_epoch} samples, one thread, CPU time, best of {args.speed_repeats})"
        )
        for name, value in speeds.items():
            print(f"{name:<80}{value:>8.1f} samples/CPU-s{value / base:>8.2f}x")
        (RESULTS / "ddpo_speed.json").write_text(json.dumps(speeds, indent=1))


if __name__ == "__main__":
    main()
