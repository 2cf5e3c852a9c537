"""SAC parity and speed: ours vs Stable-Baselines3 on Pendulum-v1, run interleaved in one process.

For each seed, every implementation learns ``--steps`` environment steps with SB3's default
hyperparameters, then its deterministic policy is scored on 10 fixed evaluation episodes. Runs are
interleaved (seed by seed, rotating the order) so that load from other processes hits all alike;
wall-clock and process CPU time are both measured, one torch thread throughout.

    .venv/bin/python benchmarks/bench_sac.py [--steps 20000] [--seeds 0 1 2] [--impls ours ours-bf16 sb3]
                                             [--jobs 1]

``--jobs N`` runs up to N seeds in parallel processes (each still one torch thread, each still
interleaving the implementations): on a machine shared with other work it gets a larger share of the
CPU; compare the CPU-time ratio then, which contention does not distort.

Results are also written to ``benchmarks/out/sac/results.json``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import gymnasium  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from resonance_os.rl.algorithms.sac import SAC  # noqa: E402

torch.set_num_threads(1)
ENV_ID = "Pendulum-v1"
EVAL_EPISODES = 10
OUT = Path(__file__).parent / "out" / "sac"


def make_model(impl: str, seed: int):
    env = gymnasium.make(ENV_ID)
    if impl == "sb3":
        from stable_baselines3 import SAC as SB3SAC

        return SB3SAC("MlpPolicy", env, seed=seed, device="cpu")
    precision = "bfloat16" if impl == "ours-bf16" else "float32"
    return SAC("MlpPolicy", env, seed=seed, precision=precision)


def evaluate(model) -> float:
    env = gymnasium.make(ENV_ID)
    returns = []
    for episode in range(EVAL_EPISODES):
        obs, _ = env.reset(seed=10_000 + episode)
        done, total = False, 0.0
        while not done:
            action, _ = model.predict(obs, deterministic=True)
            obs, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    return float(np.mean(returns))


def run(impl: str, seed: int, steps: int) -> dict[str, float]:
    model = make_model(impl, seed)
    wall, cpu = time.perf_counter(), time.process_time()
    model.learn(steps)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"impl": impl, "seed": seed, "wall_s": wall, "cpu_s": cpu, "return": evaluate(model)}


def run_seed(impls: list[str], seed: int, steps: int, rotate: int) -> list[dict[str, float]]:
    """All implementations on one seed, in an order rotated by ``rotate``."""
    torch.set_num_threads(1)
    order = impls[rotate % len(impls) :] + impls[: rotate % len(impls)]
    rows = []
    for impl in order:
        row = run(impl, seed, steps)
        rows.append(row)
        with open(OUT / "rows.jsonl", "a") as file:  # each finished run at once, for partial results
            file.write(json.dumps(row) + "\n")
        print(f"{impl:>9} seed {seed}: return {row['return']:8.1f}  wall {row['wall_s']:6.1f} s  "
              f"cpu {row['cpu_s']:6.1f} s", flush=True)  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--impls", nargs="+", default=["ours", "ours-bf16", "sb3"],
                        choices=["ours", "ours-bf16", "sb3"])  # fmt: skip
    parser.add_argument("--jobs", type=int, default=1, help="seeds run in parallel processes")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "rows.jsonl").unlink(missing_ok=True)
    rows: list[dict[str, float]] = []
    with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [
            pool.submit(run_seed, args.impls, seed, args.steps, i) for i, seed in enumerate(args.seeds)
        ]
        for future in futures:
            rows += future.result()
            (OUT / "results.json").write_text(json.dumps({"steps": args.steps, "rows": rows}, indent=2))

    def summary(impl: str) -> dict[str, float]:
        mine = [r for r in rows if r["impl"] == impl]
        returns = [r["return"] for r in mine]
        return {
            "return_mean": float(np.mean(returns)),
            "return_std": float(np.std(returns)),
            "steps_per_s": args.steps * len(mine) / sum(r["wall_s"] for r in mine),
            "steps_per_cpu_s": args.steps * len(mine) / sum(r["cpu_s"] for r in mine),
        }

    table = {impl: summary(impl) for impl in args.impls}
    print(f"\nPendulum-v1, {args.steps} steps, seeds {args.seeds}, 1 torch thread per process, "
          f"{args.jobs} process(es), implementations interleaved")  # fmt: skip
    print(f"{'impl':>10} | {'return (mean +- std)':>20} | {'env-steps/s':>11} | {'steps/CPU-s':>11} | "
          f"{'ratio/SB3 wall':>14} | {'ratio/SB3 CPU':>13}")  # fmt: skip
    base = table.get("sb3")
    for impl, s in table.items():
        wall_ratio = s["steps_per_s"] / base["steps_per_s"] if base else float("nan")
        cpu_ratio = s["steps_per_cpu_s"] / base["steps_per_cpu_s"] if base else float("nan")
        print(f"{impl:>10} | {s['return_mean']:9.1f} +- {s['return_std']:7.1f} | {s['steps_per_s']:11.1f} | "
              f"{s['steps_per_cpu_s']:11.1f} | {wall_ratio:14.2f} | {cpu_ratio:13.2f}")  # fmt: skip
    (OUT / "results.json").write_text(
        json.dumps({"steps": args.steps, "rows": rows, "summary": table}, indent=2)
    )


if __name__ == "__main__":
    main()
