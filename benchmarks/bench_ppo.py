"""Our PPO against Stable-Baselines3's, side by side, same hyperparameters and network, one torch thread.

For every task and seed the two libraries run interleaved (SB3, ours, ours with the fast preset), so a
machine loaded by other work slows all of them alike. Per run: wall seconds and CPU seconds of
``learn()``, env-steps per second, and the final evaluation return (deterministic policy, mean over 20
episodes). The table gives means over seeds and the ratio ours / SB3.

    .venv/bin/python benchmarks/bench_ppo.py                       # full: Pendulum 100k, CartPole 50k, 3 seeds
    .venv/bin/python benchmarks/bench_ppo.py --scale 0.2 --seeds 1 # a quick look
    .venv/bin/python benchmarks/bench_ppo.py --tasks pendulum --profile  # cProfile of one run of each
    .venv/bin/python benchmarks/bench_ppo.py --tasks pendulum --step-cost  # ms per gradient step, us per env step

Adding a task is one entry in TASKS.
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import cProfile  # noqa: E402
import pstats  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any  # noqa: E402

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)

from resonance_os.rl.algorithms.ppo import PPO, PPOConfig  # noqa: E402


@dataclass
class Task:
    """One benchmark: an env id, its step budget and the hyperparameters both libraries get."""

    env_id: str
    timesteps: int
    hyperparams: dict[str, Any]
    n_envs: int = 1
    fast_preset: bool = False  # also run our fast preset on this task
    make_env: Callable[[], gym.Env] | None = field(default=None)  # for envs without a registered id


TASKS: dict[str, Task] = {
    # rl-zoo hyperparams/ppo.yml for Pendulum-v1, with use_sde=False
    "pendulum": Task(
        "Pendulum-v1",
        100_000,
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
        fast_preset=True,
    ),
    # SB3 defaults (our ent_coef default is the spec's 0.01, so SB3's 0.0 is passed explicitly)
    "cartpole": Task("CartPole-v1", 50_000, dict(ent_coef=0.0)),
    # the ResonanceOS spec's training configuration (SB3's defaults but ent_coef 0.01), 5000 steps
    "hrwriting": Task(
        "resonance_os/HRWriting-v0", 5_000, dict(ent_coef=0.01), make_env=lambda: _hr_writing_env()
    ),
}


def _hr_writing_env() -> gym.Env:
    from resonance_os.evolution.hr_rl_trainer import HRWritingEnv

    return HRWritingEnv()


def make_env(task: Task) -> gym.Env:
    return task.make_env() if task.make_env is not None else gym.make(task.env_id)


def evaluate(predict: Callable[[np.ndarray], np.ndarray], task: Task, seed: int, episodes: int = 20) -> float:
    """Mean return of the deterministic policy over ``episodes`` episodes of a fresh env."""
    env = make_env(task)
    returns = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=10_000 + seed * 100 + episode)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(predict(obs))
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    return float(np.mean(returns))


def run_sb3(task: Task, seed: int) -> tuple[Any, Callable[[], None]]:
    from stable_baselines3 import PPO as SB3PPO
    from stable_baselines3.common.env_util import make_vec_env

    vec = make_vec_env(lambda: make_env(task), n_envs=task.n_envs, seed=seed)
    model = SB3PPO("MlpPolicy", vec, seed=seed, device="cpu", use_sde=False, **task.hyperparams)
    return model, lambda: model.learn(task.timesteps)


def run_ours(task: Task, seed: int, fast: bool = False) -> tuple[Any, Callable[[], None]]:
    config = PPOConfig(**task.hyperparams, n_envs=task.n_envs, seed=seed)
    if fast:
        config = config.fast()
    env: Any = task.env_id
    if task.make_env is not None:
        env = gym.vector.SyncVectorEnv(
            [task.make_env] * task.n_envs, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP
        )
    lr = config.learning_rate
    settings = {k: v for k, v in vars(config).items() if k != "learning_rate"}
    model = PPO("MlpPolicy", env, learning_rate=lr, **settings)
    return model, lambda: model.learn(task.timesteps, progress_bar=False)


def timed(
    task: Task, seed: int, make: Callable[..., tuple[Any, Callable[[], None]]], **kw: Any
) -> dict[str, float]:
    model, learn = make(task, seed, **kw)
    wall, cpu = time.perf_counter(), time.process_time()
    learn()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    ret = evaluate(lambda obs: model.predict(obs, deterministic=True)[0], task, seed)
    return {"wall": wall, "cpu": cpu, "sps": task.timesteps / wall, "return": ret}


def profile(task: Task, seed: int, make: Callable[..., tuple[Any, Callable[[], None]]], label: str) -> None:
    _, learn = make(task, seed)
    profiler = cProfile.Profile()
    profiler.runcall(learn)
    print(f"\n--- cProfile: {label} on {task.env_id}, {task.timesteps} steps (top 25 by own time)")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def step_cost(task: Task, repeats: int = 5) -> None:
    """Time one update (all epochs) and one rollout of each library on the same settings, interleaved.

    Reports milliseconds per gradient step and microseconds per env step (best of ``repeats``), the
    two numbers that PPO's speed on small networks is made of.
    """
    sb3, _ = run_sb3(task, 0)
    total, callback = sb3._setup_learn(10**9, None)
    callback.on_training_start(locals(), globals())
    ours, _ = run_ours(task, 0)
    ours._last_obs = ours._observe(ours.env.reset(seed=0)[0], update=True)
    rollout = task.hyperparams.get("n_steps", 2048) * task.n_envs
    grad_steps = task.hyperparams.get("n_epochs", 10) * -(-rollout // task.hyperparams.get("batch_size", 64))
    best = {key: float("inf") for key in ("SB3 rollout", "ours rollout", "SB3 update", "ours update")}
    for _ in range(repeats):
        for key, call in (
            ("SB3 rollout", lambda: sb3.collect_rollouts(sb3.env, callback, sb3.rollout_buffer, sb3.n_steps)),
            ("ours rollout", ours._collect_rollout),
            ("SB3 update", sb3.train),
            ("ours update", lambda: ours._update(ours.config.learning_rate)),
        ):
            start = time.process_time()
            call()
            best[key] = min(best[key], time.process_time() - start)
    print(
        f"\n{task.env_id}: rollout of {rollout} env steps, update of {grad_steps} gradient steps (CPU time, best of {repeats})"
    )
    print(f"{'':<8} {'us / env step':>14} {'ms / gradient step':>19}")
    for lib in ("SB3", "ours"):
        print(
            f"{lib:<8} {best[lib + ' rollout'] / rollout * 1e6:>14.1f} {best[lib + ' update'] / grad_steps * 1e3:>19.3f}"
        )
    print(
        f"{'SB3/ours':<8} {best['SB3 rollout'] / best['ours rollout']:>13.2f}x "
        f"{best['SB3 update'] / best['ours update']:>18.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every step budget (quick looks)")
    parser.add_argument("--profile", action="store_true", help="cProfile one run of SB3 and ours instead")
    parser.add_argument(
        "--step-cost", action="store_true", help="time one rollout and one update of each instead"
    )
    args = parser.parse_args()
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, scale {args.scale}")
    for name in args.tasks:
        base = TASKS[name]
        task = Task(**{**vars(base), "timesteps": int(base.timesteps * args.scale)})
        if args.profile:
            profile(task, 0, run_sb3, "SB3")
            profile(task, 0, run_ours, "ours")
            continue
        if args.step_cost:
            step_cost(task)
            continue
        results: dict[str, list[dict[str, float]]] = {"SB3": [], "ours": [], "ours fast": []}
        for seed in range(args.seeds):
            results["SB3"].append(timed(task, seed, run_sb3))
            results["ours"].append(timed(task, seed, run_ours))
            if task.fast_preset:
                results["ours fast"].append(timed(task, seed, run_ours, fast=True))
            print(
                f"  {name} seed {seed}: "
                + ", ".join(
                    f"{k} {r[-1]['wall']:.1f}s ret {r[-1]['return']:.1f}" for k, r in results.items() if r
                )
            )
        print_table(name, task, results)


def print_table(name: str, task: Task, results: dict[str, list[dict[str, float]]]) -> None:
    sb3 = results["SB3"]
    print(f"\n{name}: {task.env_id}, {task.timesteps} steps, {task.n_envs} env(s), {len(sb3)} seed(s)")
    print(
        f"{'run':<10} {'wall s':>8} {'cpu s':>8} {'steps/s':>9} {'x SB3 steps/s':>14} {'wall / SB3':>11} {'return (per seed)':>30}"
    )
    sb3_sps = np.mean([r["sps"] for r in sb3])
    sb3_wall = np.mean([r["wall"] for r in sb3])
    for label, runs in results.items():
        if not runs:
            continue
        sps = np.mean([r["sps"] for r in runs])
        wall = np.mean([r["wall"] for r in runs])
        rets = [r["return"] for r in runs]
        per_seed = " ".join(f"{x:.0f}" for x in rets)
        print(
            f"{label:<10} {wall:>8.1f} {np.mean([r['cpu'] for r in runs]):>8.1f} {sps:>9.0f} {sps / sb3_sps:>13.2f}x"
            f" {wall / sb3_wall:>10.0%} {np.mean(rets):>9.1f} ({per_seed})"
        )


if __name__ == "__main__":
    main()
