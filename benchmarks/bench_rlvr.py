"""RLVR throughput: synchronous vs asynchronous GRPO with sandbox rewards, same settings.

The policy is the tiny seeded Llama of tests/llm/tiny_lm.py (LoRA rank 4, context 256), the prompts
are the 8 shipped stdin/stdout problems (``verify.builtin_problems``), the reward is
``verify.CodeReward`` (+1 when the completion's program passes every test, -1 otherwise: the tiny
model's programs all fail, so this measures the pipeline's throughput, not learning). Every run gets
the same ``GRPOConfig``, seed and verifier count. Four schedules:

- ``GRPO``: the synchronous trainer in one process (generate, score, train), its verifiers an
  in-process ``VerifierPool`` (threads driving sandbox processes);
- ``sync``: ``AsyncGRPO(max_policy_lag=0)``: the same schedule with generation on a worker process
  and the verifiers a ``RemoteVerifierPool`` in another (the pipeline's code path, nothing overlaps);
- ``async k=1``, ``async k=2``: the pipeline with 1 or 2 batches in flight.

The runs alternate (GRPO, sync, k=1, k=2, GRPO, ...) so other load on the machine slows all alike.
Per run: steps per hour, how much of the wall time the generator (sampling) and the verifiers
(sandbox runs, summed over the pool's workers) were idle, the mean policy lag, and the CPU seconds
per step of each process (the pipeline's generation worker, its verifier worker with the sandbox
runs it waited for, the trainer; the kernel's own work for the runs' namespaces is not counted).
The ratio is against the faster of the two synchronous schedules.

    .venv/bin/python benchmarks/bench_rlvr.py                          # 3 repeats x 8 steps, 4 verifiers
    .venv/bin/python benchmarks/bench_rlvr.py --repeats 3 --steps 12 --workers 8 --max-new-tokens 64
    .venv/bin/python benchmarks/bench_rlvr.py --ray auto       # the pipeline's workers as Ray actors

With ``--ray ADDRESS`` (``auto``, ``host:port`` or ``local``) the pipeline's generation worker and
verifier pool are Ray actors on that cluster (the ``ray`` extra); ``GRPO`` stays in this process.
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import math  # noqa: E402
import resource  # noqa: E402
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

from resonance_os.distributed import LocalProcesses, Placement, placement_for  # noqa: E402
from resonance_os.llm.grpo import GRPO, GRPOConfig  # noqa: E402
from resonance_os.llm.pipeline import AsyncGRPO  # noqa: E402
from resonance_os.llm.policy import LMPolicy, PolicyConfig  # noqa: E402
from resonance_os.verify import CodeReward, Sandbox, SandboxLimits, VerifierPool, builtin_problems  # noqa: E402
from resonance_os.verify.remote_pool import RemoteVerifierPool  # noqa: E402

SCHEDULES = ("GRPO", "sync", "async k=1", "async k=2")
LIMITS = SandboxLimits(wall_seconds=15.0)


def make_policy() -> LMPolicy:
    tokenizer = make_tokenizer()
    return LMPolicy(
        tokenizer, make_model(len(tokenizer), context=256), PolicyConfig(lora_rank=4, lora_alpha=8)
    )


def cpu_here() -> float:
    """CPU seconds of this process and of the child processes it has waited for (sandbox runs)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def timed(trainer: GRPO, pool, steps: int) -> tuple[float, float, list[dict], dict[str, float]]:
    """Wall seconds, verifier busy seconds, metric rows and CPU seconds (this process; for the
    pipeline also its generation and verifier workers) of ``steps`` steps after a warm-up step."""
    trainer.learn(1)  # warm-up (workers started, the pipeline's on-policy first step), not counted
    workers = isinstance(trainer, AsyncGRPO)
    busy, before = pool.busy_seconds, cpu_here()
    if workers:
        generation, verification = trainer.generator_cpu_seconds(), pool.cpu_seconds
    start = time.perf_counter()
    trainer.learn(steps, reset_num_timesteps=False)
    wall = time.perf_counter() - start
    cpu = {"cpu_trainer": cpu_here() - before}
    if workers:
        cpu["cpu_generation"] = trainer.generator_cpu_seconds() - generation
        cpu["cpu_verification"] = pool.cpu_seconds - verification
    return wall, pool.busy_seconds - busy, trainer.history[1:], cpu


def run(
    schedule: str, config: GRPOConfig, steps: int, workers: int, cluster: Placement | None
) -> dict[str, float]:
    """One run of ``schedule``; the pipeline's workers on ``cluster``, or on local processes when None."""
    problems = builtin_problems()
    prompts = [p.prompt for p in problems]
    if schedule == "GRPO":
        with (
            Sandbox(LIMITS, max_concurrency=workers) as sandbox,
            VerifierPool(sandbox, workers=workers) as pool,
        ):
            trainer = GRPO(make_policy(), CodeReward(pool, problems), prompts, config)
            wall, verifying, rows, cpu = timed(trainer, pool, steps)
        generating = sum(row["time_generate"] for row in rows)
    else:
        lag = 0 if schedule == "sync" else int(schedule[-1])
        placement = cluster or LocalProcesses()
        try:
            pool = RemoteVerifierPool(placement, actors=1, workers=workers, limits=LIMITS)
            reward = CodeReward(pool, problems)
            with AsyncGRPO(
                make_policy(), reward, prompts, config, max_policy_lag=lag, placement=placement
            ) as trainer:
                wall, verifying, rows, cpu = timed(trainer, pool, steps)
        finally:
            if cluster is None:
                placement.close()
        generating = sum(row["time_generate_background"] for row in rows)
    return {
        "steps_per_hour": steps / wall * 3600,
        "seconds_per_step": wall / steps,
        "generator_idle": 1 - min(1.0, generating / wall),
        "verifier_idle": 1 - min(1.0, verifying / (workers * wall)),
        "policy_lag": statistics.mean(row.get("policy_lag", 0.0) for row in rows),
        "reward": statistics.mean(row["episode_reward_mean"] for row in rows),
        "cpu_total": sum(cpu.values()) / steps,
        **{
            key: cpu.get(key, math.nan) / steps
            for key in ("cpu_generation", "cpu_verification", "cpu_trainer")
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=4, help="verifiers (concurrent sandbox runs)")
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--prompts-per-step", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--ray", metavar="ADDRESS", help="run the pipeline's workers as Ray actors there")
    args = parser.parse_args()
    cluster = placement_for(args.ray) if args.ray else None
    config = GRPOConfig(
        group_size=args.group_size,
        prompts_per_step=args.prompts_per_step,
        max_new_tokens=args.max_new_tokens,
        learning_rate=1e-3,
        chat_template=False,
        seed=0,
    )
    results: dict[str, list[dict[str, float]]] = {schedule: [] for schedule in SCHEDULES}
    try:
        for _ in range(args.repeats):
            for schedule in SCHEDULES:
                results[schedule].append(run(schedule, config, args.steps, args.workers, cluster))
    finally:
        if cluster is not None:
            cluster.close()

    def median(schedule: str, key: str) -> float:
        return statistics.median(r[key] for r in results[schedule])

    print(
        f"\nRLVR throughput, tiny Llama + sandbox rewards: {args.prompts_per_step} prompts x G={args.group_size}, "
        f"{args.max_new_tokens} new tokens, {args.workers} verifiers, {args.steps} steps, median of {args.repeats}; "
        f"workers: {cluster.description if cluster else 'local processes'}; load average {os.getloadavg()[0]:.1f}"
    )
    best_sync = max(("GRPO", "sync"), key=lambda s: median(s, "steps_per_hour"))
    print(f"{'':<18}" + "".join(f"{s:>11}" for s in SCHEDULES) + f"   async k=2 / {best_sync}")
    for key, label in (
        ("steps_per_hour", "steps per hour"),
        ("seconds_per_step", "seconds per step"),
        ("generator_idle", "generator idle"),
        ("verifier_idle", "verifier idle"),
        ("policy_lag", "mean policy lag"),
        ("reward", "mean reward"),
        ("cpu_total", "CPU s/step"),
        ("cpu_generation", "  generation"),
        ("cpu_verification", "  verification"),
        ("cpu_trainer", "  trainer process"),
    ):
        values = [median(s, key) for s in SCHEDULES]
        reference = median(best_sync, key)
        ratio = f"{values[-1] / reference:.2f}x" if reference and key == "steps_per_hour" else ""
        cells = "".join(f"{v:>11.2f}" if not math.isnan(v) else f"{'-':>11}" for v in values)
        print(f"{label:<18}{cells}   {ratio}")
    ratio_k1 = median("async k=1", "steps_per_hour") / median(best_sync, "steps_per_hour")
    print(f"async k=1 / {best_sync}: {ratio_k1:.2f}x")


if __name__ == "__main__":
    main()
