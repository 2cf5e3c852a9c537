"""The ODE-control comparison: one place that knows each system's settings and trains each controller.

``train_controller("mgm", "gp", steps=20_000, seed=0)`` returns a :class:`TrainedController` whose
``act(obs)`` is the feedback law; ``evaluate(system, act)`` rolls it out from the fixed evaluation
start states (``reset(seed=1000 + i)``). The CLI (``resonance control``) and
``benchmarks/bench_control.py`` both use these, so they report the same numbers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium
import numpy as np

import resonance_os.rl.envs  # noqa: F401  (registers the resonance_os/* envs)
from resonance_os.rl.envs.ode.rollout import Trajectory, rollout
from resonance_os.rl.errors import ConfigError

ALGORITHMS = ("none", "lqr", "sac", "gp")
EVAL_SEED = 1000


@dataclass(frozen=True)
class ControlSystem:
    """Settings of one system: env id, LQR state weight ``q`` (None: LQR does not apply), GP settings,
    default learning budgets (env steps) and the number of evaluation start states."""

    env_id: str
    lqr_q: float | None
    gp: dict[str, Any]
    sac_steps: int
    gp_steps: int
    eval_starts: int = 5
    sac: dict[str, Any] = field(default_factory=dict)


SYSTEMS: dict[str, ControlSystem] = {
    "mgm": ControlSystem("resonance_os/MGM-v0", lqr_q=1.0, sac_steps=10_000, gp_steps=10_000,
                         gp={"gain_bound": 10.0, "n_eval_starts": 2, "horizon": 100}),
    "vanderpol": ControlSystem("resonance_os/VanDerPol-v0", lqr_q=1.0, sac_steps=10_000, gp_steps=10_000,
                               gp={"gain_bound": 10.0, "n_eval_starts": 2, "horizon": 100}),
    # Q = I leaves the chaotic transient too long; q = 100 settles every start on the fixed point.
    "lorenz": ControlSystem("resonance_os/Lorenz-v0", lqr_q=100.0, sac_steps=10_000, gp_steps=10_000,
                            gp={"gain_bound": 20.0, "n_eval_starts": 2, "horizon": 150}),
    # The linearisation at 0 is not stabilisable (b reaches a1, a2 only through sigma): no LQR.
    "meanfield": ControlSystem("resonance_os/MeanField-v0", lqr_q=None, sac_steps=10_000, gp_steps=10_000,
                               gp={"gain_bound": 5.0, "bias": True, "n_eval_starts": 2, "horizon": 200},
                               eval_starts=3),
}  # fmt: skip


@dataclass
class TrainedController:
    """A feedback law ``act(obs) -> u`` with what it cost to obtain: env steps, wall seconds, and a
    learning curve of ``(env steps, mean evaluation cost J)`` points (empty for none/LQR)."""

    algo: str
    act: Callable[[np.ndarray], np.ndarray] | None
    steps: int
    wall_s: float
    curve: list[tuple[int, float]]
    model: Any = None


def system_spec(name: str) -> ControlSystem:
    try:
        return SYSTEMS[name]
    except KeyError:
        raise ConfigError(f"unknown system {name!r}; choose one of {sorted(SYSTEMS)}") from None


def make_env(name: str) -> gymnasium.Env:
    return gymnasium.make(system_spec(name).env_id)


def evaluate(name: str, act: Callable[[np.ndarray], np.ndarray] | None) -> list[Trajectory]:
    """Trajectories of ``act`` from the system's fixed evaluation start states."""
    env = make_env(name)
    return [rollout(env, act, seed=EVAL_SEED + i) for i in range(system_spec(name).eval_starts)]


def mean_cost(trajectories: list[Trajectory]) -> float:
    return float(np.mean([t.mean_cost for t in trajectories]))


def train_controller(
    name: str, algo: str, steps: int | None = None, seed: int = 0, eval_every: int = 1000
) -> TrainedController:
    """Obtain a controller of kind ``algo`` (``none``, ``lqr``, ``sac``, ``gp``) for system ``name``.

    ``steps`` is the env-step budget for the learners (default: the system's). For SAC the learning
    curve is measured every ``eval_every`` steps on the evaluation starts (not counted as learning).
    """
    spec = system_spec(name)
    if algo not in ALGORITHMS:
        raise ConfigError(f"unknown algorithm {algo!r}; choose one of {ALGORITHMS}")
    if steps is not None and steps < 1:
        raise ConfigError(f"steps={steps} must be >= 1")
    start = time.perf_counter()
    if algo == "none":
        return TrainedController("none", None, 0, 0.0, [])
    if algo == "lqr":
        from resonance_os.rl.algorithms.lqr import LQR

        if spec.lqr_q is None:
            raise ConfigError(
                f"LQR does not apply to {name}: its linearisation is not stabilisable; use sac or gp"
            )
        lqr = LQR(make_env(name), q=spec.lqr_q)
        return TrainedController(
            "lqr", lambda obs: lqr.predict(obs)[0], 0, time.perf_counter() - start, [], lqr
        )
    curve: list[tuple[int, float]] = []
    eval_time = 0.0
    if algo == "sac":
        from resonance_os.rl.algorithms.sac import SAC

        model = SAC("MlpPolicy", make_env(name), seed=seed, **spec.sac)
        act = lambda obs: model.predict(obs, deterministic=True)[0]  # noqa: E731

        def sac_callback(m: SAC, _metrics: dict[str, Any]) -> None:
            nonlocal eval_time
            if m.num_timesteps % eval_every == 0:
                t0 = time.perf_counter()
                curve.append((m.num_timesteps, mean_cost(evaluate(name, act))))
                eval_time += time.perf_counter() - t0

        model.learn(steps or spec.sac_steps, callback=sac_callback)
        used = model.num_timesteps
    else:
        from resonance_os.rl.algorithms.gp_control import GPController

        model = GPController("LinearFeedback", make_env(name), seed=seed, **spec.gp)
        act = lambda obs: model.predict(obs)[0]  # noqa: E731
        best = [np.inf]

        def gp_callback(m: GPController, _metrics: dict[str, Any]) -> None:
            nonlocal eval_time
            if m.history_costs[-1] < best[0]:  # the incumbent changed: measure it
                best[0] = m.history_costs[-1]
                t0 = time.perf_counter()
                curve.append((m.num_timesteps, mean_cost(evaluate(name, act))))
                eval_time += time.perf_counter() - t0
            else:
                curve.append((m.num_timesteps, curve[-1][1]))

        model.learn(steps or spec.gp_steps, callback=gp_callback)
        used = model.num_timesteps
    return TrainedController(algo, act, used, time.perf_counter() - start - eval_time, curve, model)


def steps_to_converge(curve: list[tuple[int, float]], tolerance: float = 0.1) -> int | None:
    """First env-step count after which the curve stays within ``tolerance`` (relative) of its final value."""
    if not curve:
        return None
    final = curve[-1][1]
    limit = final + tolerance * abs(final)
    for i, (step, _) in enumerate(curve):
        if all(cost <= limit for _, cost in curve[i:]):
            return step
    return curve[-1][0]
