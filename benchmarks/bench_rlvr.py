"""RLVR throughput: synchronous GRPO vs AsyncGRPO (1 and 2 batches in flight), sandbox rewards, same settings.

The policy is the tiny seeded Llama of tests/llm/tiny_lm.py (LoRA rank 4, context 256), the prompts
are the 8 shipped stdin/stdout problems (``verify.builtin_problems``), the reward is
``verify.CodeReward`` over a ``VerifierPool`` (+1 when the completion's program passes every test,
-1 otherwise: the tiny model's programs all fail, so this measures the pipeline's throughput, not
learning). Every run gets the same ``GRPOConfig`` and seed; the runs alternate (sync, async k=1,
async k=2, sync, ...) so other load on the machine slows all alike. Per run: steps per hour, and how much of
the wall time the generator (sampling) and the verifiers (sandbox runs, summed over the pool's
workers) were idle.

    .venv/bin/python benchmarks/bench_rlvr.py                      # 2 repeats x 8 steps, 4 verifiers
    .venv/bin/python benchmarks/bench_rlvr.py --repeats 3 --steps 12 --workers 8
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

torch.set_num_threads(1)
warnings.filterwarnings("ignore", category=FutureWarning)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "llm"))
from tiny_lm import make_model, make_tokenizer  # noqa: E402

from resonance_os.llm.grpo import GRPO, GRPOConfig  # noqa: E402
from resonance_os.llm.pipeline import AsyncGRPO  # noqa: E402
from resonance_os.llm.policy import LMPolicy, PolicyConfig  # noqa: E402
from resonance_os.verify import CodeReward, Sandbox, SandboxLimits, VerifierPool, builtin_problems  # noqa: E402


def run(lag: int, config: GRPOConfig, steps: int, workers: int) -> dict[str, float]:
    """One run: synchronous GRPO for ``lag`` 0, AsyncGRPO with ``max_policy_lag=lag`` otherwise."""
    problems = builtin_problems()
    tokenizer = make_tokenizer()
    policy = LMPolicy(
        tokenizer, make_model(len(tokenizer), context=256), PolicyConfig(lora_rank=4, lora_alpha=8)
    )
    with Sandbox(SandboxLimits(wall_seconds=15.0), max_concurrency=workers) as sandbox:
        with VerifierPool(sandbox, workers=workers) as pool:
            reward, prompts = CodeReward(pool, problems), [p.prompt for p in problems]
            if lag:
                trainer = AsyncGRPO(policy, reward, prompts, config, max_policy_lag=lag)
            else:
                trainer = GRPO(policy, reward, prompts, config)
            trainer.learn(1)  # warm-up (and the async pipeline's on-policy first step), not counted
            pool.busy_seconds = 0.0
            start = time.perf_counter()
            trainer.learn(steps, reset_num_timesteps=False)
            wall = time.perf_counter() - start
            rows = trainer.history[1:]
            if isinstance(trainer, AsyncGRPO):
                trainer.close()
                generating = sum(row["time_generate_background"] for row in rows)
            else:
                generating = sum(row["time_generate"] for row in rows)
            verifying = pool.busy_seconds
    return {
        "steps_per_hour": steps / wall * 3600,
        "seconds_per_step": wall / steps,
        "generator_idle": 1 - min(1.0, generating / wall),
        "verifier_idle": 1 - min(1.0, verifying / (workers * wall)),
        "reward": statistics.mean(row["episode_reward_mean"] for row in rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--workers", type=int, default=4, help="verifier pool size")
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--prompts-per-step", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    args = parser.parse_args()
    config = GRPOConfig(
        group_size=args.group_size,
        prompts_per_step=args.prompts_per_step,
        max_new_tokens=args.max_new_tokens,
        learning_rate=1e-3,
        chat_template=False,
        seed=0,
    )
    lags = (0, 1, 2)
    results: dict[int, list[dict[str, float]]] = {lag: [] for lag in lags}
    for _ in range(args.repeats):
        for lag in lags:
            results[lag].append(run(lag, config, args.steps, args.workers))

    def median(lag: int, key: str) -> float:
        return statistics.median(r[key] for r in results[lag])

    print(
        f"\nRLVR throughput, tiny Llama + sandbox rewards: {args.prompts_per_step} prompts x G={args.group_size}, "
        f"{args.max_new_tokens} new tokens, {args.workers} verifiers, {args.steps} steps, median of {args.repeats}"
    )
    print(f"{'':<18} {'sync':>8} {'async k=1':>10} {'ratio':>7} {'async k=2':>10} {'ratio':>7}")
    for key, label in (
        ("steps_per_hour", "steps per hour"),
        ("seconds_per_step", "seconds per step"),
        ("generator_idle", "generator idle"),
        ("verifier_idle", "verifier idle"),
        ("reward", "mean reward"),
    ):
        sync = median(0, key)
        cells = [f"{label:<18} {sync:>8.2f}"]
        for lag in lags[1:]:
            value = median(lag, key)
            ratio = f"{value / sync:.2f}x" if sync else "-"
            cells.append(f"{value:>10.2f} {ratio:>7}")
        print(" ".join(cells))


if __name__ == "__main__":
    main()
