"""Does GRPO learn as well from bf16 rollouts as from float32 ones? SmolLM2-135M-Instruct + LoRA, side by side.

``GRPOConfig.rollout_dtype="bfloat16"`` samples from a bf16 copy of the policy and corrects the loss
with TRL's importance weights; ``mixed_precision="bfloat16"`` also runs the update under autocast.
This trains the same task with each setting, same seeds, interleaved per seed (float32, bf16
rollouts, bf16 rollouts + update), and prints the reward curve (the mean over the first and last
quarter of the steps, and the gain), seconds per step, and how far the rollout copy was from the
policy (k3 KL per token, share of completions the correction masked). The task: the verifiable
reward of ``bench_grpo.py`` (a completion of 12 words scores 0, each word off costs 1/12), on its
eight prompts, G = 4, 2 prompts a step, 32 new tokens, dapo, LoRA r 4, one torch thread.

    .venv/bin/python -W ignore benchmarks/bench_rollout_precision.py --steps 16 --seeds 0 1 2
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
from typing import Any  # noqa: E402

import torch  # noqa: E402
from bench_grpo import LORA_ALPHA, LORA_RANK, PROMPTS, model_pair, near_twelve_words  # noqa: E402

from resonance_os.llm.grpo import GRPO, GRPOConfig  # noqa: E402
from resonance_os.llm.policy import LMPolicy, PolicyConfig  # noqa: E402

SETTINGS = {
    "float32": {},
    "bf16 rollouts": {"rollout_dtype": "bfloat16"},
    "bf16 rollouts + update": {"rollout_dtype": "bfloat16", "mixed_precision": "bfloat16"},
}


def run(setting: dict[str, Any], seed: int, args: argparse.Namespace) -> list[dict[str, float]]:
    policy = LMPolicy(*model_pair("smollm2"), PolicyConfig(lora_rank=LORA_RANK, lora_alpha=LORA_ALPHA))
    cfg = GRPOConfig(
        group_size=4, prompts_per_step=2, max_new_tokens=32, chat_template=False, learning_rate=args.learning_rate,
        loss_type="dapo", seed=seed, **setting,
    )  # fmt: skip
    return GRPO(policy, near_twelve_words, PROMPTS["smollm2"], cfg).learn(args.steps).history


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--learning-rate", type=float, default=3e-4)
    args = parser.parse_args()
    torch.set_num_threads(1)

    histories: dict[str, list[list[dict[str, float]]]] = {name: [] for name in SETTINGS}
    for seed in args.seeds:
        for name, setting in SETTINGS.items():
            histories[name].append(run(setting, seed, args))
            rewards = [row["episode_reward_mean"] for row in histories[name][-1]]
            print(f"seed {seed} {name:24} rewards " + " ".join(f"{r:+.2f}" for r in rewards), flush=True)

    quarter = max(1, args.steps // 4)
    print(f"\nSmolLM2 + LoRA r{LORA_RANK}, {args.steps} steps, seeds {args.seeds}, lr {args.learning_rate}; mean over "
          f"seeds (seed spread in brackets)\n")  # fmt: skip
    print(
        "| setting | reward, first quarter | last quarter | gain | s / step | KL(copy ‖ policy) / token | masked |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, runs in histories.items():
        first = [statistics.mean(r["episode_reward_mean"] for r in h[:quarter]) for h in runs]
        last = [statistics.mean(r["episode_reward_mean"] for r in h[-quarter:]) for h in runs]
        gains = [b - a for a, b in zip(first, last)]
        step = statistics.mean(r["time_step"] for h in runs for r in h[1:])
        kl = statistics.mean(r.get("rollout_kl", 0.0) for h in runs for r in h)
        masked = statistics.mean(r.get("rollout_weight_zero", 0.0) for h in runs for r in h)
        print(f"| {name} | {statistics.mean(first):+.3f} | {statistics.mean(last):+.3f} | {statistics.mean(gains):+.3f} "
              f"[{min(gains):+.3f}, {max(gains):+.3f}] | {step:.2f} | {kl:.1e} | {masked:.1%} |")  # fmt: skip


if __name__ == "__main__":
    main()
