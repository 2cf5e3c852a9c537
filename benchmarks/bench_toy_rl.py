"""A verifiable toy task, learnt by the tiny model: a short SFT warm-up, then GRPO, DAPO, GSPO and CISPO.

Task: sort three digits written as words ("seven two seven" -> "two seven seven"); the reward is the
built-in ``digits_sorted`` (1 when the completion's digits are the prompt's in ascending order, else 0),
so the pass rate is the share of sampled completions that are right. The 1,000 three-digit prompts are
split once (seeded): 100 held out for evaluation, 900 for training.

Per seed: the tiny seeded Llama of tests/llm/tiny_lm.py (full fine-tuning, ~80k weights) gets a short
supervised warm-up (``llm.sft.SFT``: ``--sft-steps`` steps of 32 prompt/answer pairs), saved once; each
loss then starts from that same checkpoint and runs ``--rl-steps`` GRPO-trainer steps with the same
seed, prompts, G and budget. Only the loss (and its own clip range) differs:

    grpo   epsilon 0.2 (symmetric), sequence mean             Shao et al. 2024
    dapo   epsilon 0.2 / epsilon_high 0.28, token mean         Yu et al. 2025
    gspo   sequence-level ratio, epsilon 3e-4 / 4e-4 (paper)  Zheng et al. 2025
    cispo  clipped IS weight, cap 5.0, token mean             MiniMax 2025

Each step trains on its completions in ``--minibatches`` updates (default 2), so every update after the
first is off-policy and the losses' clipping and weighting act; with one on-policy update per step
the ratio is 1 and grpo/gspo (and dapo/cispo) give the same gradient, hence the same run.

Evaluation: the pass rate on the 100 held-out prompts, 4 samples each at temperature 1 with a fixed
seed, after the warm-up and every ``--eval-every`` steps. Printed: a table per loss (warm-up pass rate,
final pass rate, gain; mean and min-max over seeds); written: ``benchmarks/out/toy_rl/curves.png`` (the
four held-out curves side by side, mean over seeds with the min-max band, and the trainer's own
pass rate on training prompts) and ``results.json``.

    .venv/bin/python benchmarks/bench_toy_rl.py                        # seeds 0 1 2, 100 RL steps
    .venv/bin/python benchmarks/bench_toy_rl.py --seeds 0 --rl-steps 60 --device cuda
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import torch  # noqa: E402

torch.set_num_threads(1)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "llm"))
from tiny_lm import make_model, make_tokenizer  # noqa: E402

from resonance_os.llm.grpo import GRPO, GRPOConfig  # noqa: E402
from resonance_os.llm.policy import LMPolicy, PolicyConfig  # noqa: E402
from resonance_os.llm.rewards import DIGIT_WORDS, build_reward  # noqa: E402
from resonance_os.llm.sampling import sample  # noqa: E402
from resonance_os.llm.sft import SFT, SFTConfig  # noqa: E402

OUT = Path(__file__).resolve().parent / "out" / "toy_rl"
LOSSES: dict[str, dict[str, Any]] = {
    "grpo": {"loss_type": "grpo", "epsilon": 0.2},
    "dapo": {"loss_type": "dapo", "epsilon": 0.2, "epsilon_high": 0.28},
    "gspo": {"loss_type": "gspo", "epsilon": 3e-4, "epsilon_high": 4e-4},
    "cispo": {"loss_type": "cispo", "epsilon_high": 5.0},
}
HELD_OUT, EVAL_SAMPLES, EVAL_SEED, MAX_NEW_TOKENS = 100, 4, 12_345, 6


def toy_task() -> tuple[list[str], list[str], list[str]]:
    """(train prompts, their sorted answers, held-out prompts): every 3-digit sequence, split once."""
    combos = list(itertools.product(range(10), repeat=3))
    random.Random(0).shuffle(combos)

    def words(digits: Any) -> str:
        return " ".join(DIGIT_WORDS[d] for d in digits)

    train = combos[HELD_OUT:]
    return [words(c) for c in train], [words(sorted(c)) for c in train], [words(c) for c in combos[:HELD_OUT]]


def pass_rate(policy: LMPolicy, prompts: list[str], reward: Any) -> float:
    """Share of held-out samples (temperature 1, fixed seed) that sort their prompt's digits."""
    samples = sample(
        policy, prompts, n=EVAL_SAMPLES, max_new_tokens=MAX_NEW_TOKENS, temperature=1.0, seed=EVAL_SEED
    )
    scores = reward([prompts[i] for i in samples.prompt_index], samples.texts)
    return sum(s > 0 for s in scores) / len(scores)


def new_policy(device: str) -> LMPolicy:
    tok = make_tokenizer()
    return LMPolicy(tok, make_model(len(tok), seed=0).to(device), PolicyConfig(finetune="full"))


def warm_up(args: argparse.Namespace, seed: int, folder: Path) -> dict[str, Any]:
    """The supervised warm-up of one seed, saved to ``folder``; its held-out pass rate before/after."""
    train, answers, held = toy_task()
    reward = build_reward("digits_sorted")
    policy = new_policy(args.device)
    before = pass_rate(policy, held, reward)
    t0 = time.perf_counter()
    sft = SFT(
        policy, list(zip(train, answers)), SFTConfig(batch_size=32, learning_rate=args.sft_lr, seed=seed)
    )
    sft.learn(args.sft_steps)
    sft.save(folder)
    return {
        "untrained": before,
        "warm_up": pass_rate(policy, held, reward),
        "sft_loss": sft.history[-1]["loss"],
        "sft_seconds": time.perf_counter() - t0,
    }


def run_rl(args: argparse.Namespace, seed: int, name: str, warm: Path) -> dict[str, Any]:
    """One loss from the warm-up checkpoint: held-out pass rate every ``eval_every`` steps."""
    train, _, held = toy_task()
    reward = build_reward("digits_sorted")
    tok = make_tokenizer()
    policy = LMPolicy.load(warm, tok, make_model(len(tok), seed=0).to(args.device))
    batch = args.group_size * args.prompts_per_step
    config = GRPOConfig(
        group_size=args.group_size, prompts_per_step=args.prompts_per_step, max_new_tokens=MAX_NEW_TOKENS,
        learning_rate=args.rl_lr, minibatch_size=batch // args.minibatches, seed=seed, **LOSSES[name],
    )  # fmt: skip
    trainer = GRPO(policy, reward, train, config)
    curve = [(0, pass_rate(policy, held, reward))]
    t0 = time.perf_counter()
    while trainer.num_timesteps < args.rl_steps:
        trainer.learn(min(args.eval_every, args.rl_steps - trainer.num_timesteps), reset_num_timesteps=False)
        curve.append((trainer.num_timesteps, pass_rate(policy, held, reward)))
    return {
        "curve": curve,
        "train_pass_rate": [row["pass_rate"] for row in trainer.history],
        "seconds": time.perf_counter() - t0,
    }


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(LOSSES), figsize=(4 * len(LOSSES), 3.6), sharey=True)
    warm = statistics.mean(w["warm_up"] for w in results["warm_up"].values())
    for ax, name in zip(axes, LOSSES):
        runs = [results["runs"][name][s] for s in results["seeds"]]
        steps = [step for step, _ in runs[0]["curve"]]
        values = [[v for _, v in r["curve"]] for r in runs]
        mean = [statistics.mean(col) for col in zip(*values)]
        ax.fill_between(steps, [min(c) for c in zip(*values)], [max(c) for c in zip(*values)], alpha=0.25)
        ax.plot(steps, mean, marker="o", label="held-out pass rate")
        window = max(1, len(runs[0]["train_pass_rate"]) // 20)
        train = [statistics.mean(col) for col in zip(*[r["train_pass_rate"] for r in runs])]
        smooth = [statistics.mean(train[max(0, i - window + 1) : i + 1]) for i in range(len(train))]
        ax.plot(range(1, len(train) + 1), smooth, alpha=0.6, label="training pass rate (smoothed)")
        ax.axhline(warm, color="grey", linestyle="--", label="after SFT warm-up")
        ax.axhline(warm + 0.3, color="red", linestyle=":", label="warm-up + 0.3 (goal)")
        ax.set_title(f"{name}: {mean[0]:.2f} -> {mean[-1]:.2f}")
        ax.set_xlabel("RL step")
        ax.set_ylim(0, 1)
    axes[0].set_ylabel("pass rate (sort three digits)")
    axes[0].legend(loc="upper left", fontsize=7)
    seeds = ", ".join(map(str, results["seeds"]))
    fig.suptitle(f"tiny Llama, SFT warm-up then RL; mean over seeds {seeds} (band: min-max)", fontsize=10)
    fig.tight_layout()
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=110)
    os.replace(tmp, path)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--sft-steps", type=int, default=15)
    parser.add_argument("--sft-lr", type=float, default=3e-3)
    parser.add_argument("--rl-steps", type=int, default=100)
    parser.add_argument("--rl-lr", type=float, default=3e-4)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--prompts-per-step", type=int, default=8)
    parser.add_argument(
        "--minibatches", type=int, default=2, help="updates per step (off-policy after the first)"
    )
    parser.add_argument("--eval-every", type=int, default=10)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()

    results: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}, "seeds": args.seeds,
                               "warm_up": {}, "runs": {name: {} for name in LOSSES}}  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            folder = Path(tmp) / f"warm{seed}"
            results["warm_up"][seed] = warm_up(args, seed, folder)
            w = results["warm_up"][seed]
            print(f"seed {seed}: untrained {w['untrained']:.3f}, after {args.sft_steps} SFT steps {w['warm_up']:.3f}"
                  f" (loss {w['sft_loss']:.3f}, {w['sft_seconds']:.1f} s)", flush=True)  # fmt: skip
            for name in LOSSES:
                run = run_rl(args, seed, name, folder)
                results["runs"][name][seed] = run
                print(f"  {name:6s} {' '.join(f'{v:.2f}' for _, v in run['curve'])}  ({run['seconds']:.1f} s)",
                      flush=True)  # fmt: skip

    print(f"\nSort three digits, tiny Llama (full fine-tuning), {args.sft_steps} SFT steps then {args.rl_steps} RL "
          f"steps of {args.prompts_per_step} prompts x G={args.group_size}; held-out pass rate, "
          f"{HELD_OUT} prompts x {EVAL_SAMPLES} samples; seeds {args.seeds}")  # fmt: skip
    print(f"{'loss':8s} {'warm-up':>8s} {'final':>8s} {'gain':>8s} {'gain min-max':>15s} {'RL s/run':>9s}")
    for name in LOSSES:
        runs = [results["runs"][name][s] for s in args.seeds]
        warm = [results["warm_up"][s]["warm_up"] for s in args.seeds]
        final = [r["curve"][-1][1] for r in runs]
        gains = [f - w for f, w in zip(final, warm)]
        results.setdefault("summary", {})[name] = {"warm_up": warm, "final": final, "gain": gains}
        print(f"{name:8s} {statistics.mean(warm):8.3f} {statistics.mean(final):8.3f} {statistics.mean(gains):+8.3f} "
              f"{min(gains):+7.3f}..{max(gains):+.3f} {statistics.mean(r['seconds'] for r in runs):9.1f}")  # fmt: skip

    args.out.mkdir(parents=True, exist_ok=True)
    plot(results, args.out / "curves.png")
    tmp_json = args.out / "results.json.tmp"
    tmp_json.write_text(json.dumps(results, indent=1))
    os.replace(tmp_json, args.out / "results.json")
    print(f"\nwrote {args.out / 'curves.png'} and {args.out / 'results.json'}")


if __name__ == "__main__":
    main()
