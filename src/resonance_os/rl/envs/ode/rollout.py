"""Roll a controller out on an ODE control env and summarise the trajectory (cost, reaction, smoothness)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import gymnasium
import numpy as np

Controller = Callable[[np.ndarray], np.ndarray]


@dataclass
class Trajectory:
    """One controlled episode: ``time`` (T+1,), ``states`` (T+1, n), ``actions`` (T,), ``costs`` (T,).

    ``costs`` are the negated rewards (a diverged step carries the penalty); ``horizon`` is the number
    of steps asked for, so an early divergence still counts over the full horizon in ``mean_cost``.
    """

    time: np.ndarray
    states: np.ndarray
    actions: np.ndarray
    costs: np.ndarray
    horizon: int
    diverged: bool

    @property
    def mean_cost(self) -> float:
        """``J``: total cost divided by the horizon."""
        return float(self.costs.sum() / self.horizon)

    def final_cost(self, fraction: float = 0.2) -> float:
        """Mean per-step cost over the last ``fraction`` of the steps taken (the steady-state error)."""
        tail = max(1, int(round(len(self.costs) * fraction)))
        return float(self.costs[-tail:].mean())

    def reaction_steps(self, level: float = 0.1) -> int:
        """First step at which the cost falls below ``level`` times the first step's cost (T if never)."""
        below = np.flatnonzero(self.costs <= level * self.costs[0])
        return int(below[0]) + 1 if below.size else len(self.costs)

    @property
    def action_variation(self) -> float:
        """Mean absolute change of ``u`` between steps (0 for a constant control; lower is smoother)."""
        return float(np.abs(np.diff(self.actions)).mean()) if self.actions.size > 1 else 0.0


def rollout(
    env: gymnasium.Env,
    controller: Controller | None,
    *,
    seed: int | None = None,
    state: np.ndarray | None = None,
    steps: int | None = None,
) -> Trajectory:
    """Run ``controller(obs) -> u`` (``None``: u = 0) from ``state`` (or a ``seed``-ed reset) for ``steps``.

    ``steps`` defaults to the env's time limit; the rollout stops early on termination (divergence).
    """
    options = {"state": state} if state is not None else None
    obs, info = env.reset(seed=seed, options=options)
    horizon = steps or (env.spec.max_episode_steps if env.spec is not None else None) or 200
    zero = np.zeros(env.action_space.shape, dtype=env.action_space.dtype)
    system = env.unwrapped
    dt = float(getattr(system, "dt", 1.0))
    states, actions, costs = [np.asarray(info.get("state", obs), dtype=np.float64)], [], []
    diverged = False
    for _ in range(horizon):
        action = (
            zero if controller is None else np.asarray(controller(obs), dtype=np.float32).reshape(zero.shape)
        )
        obs, reward, terminated, truncated, info = env.step(action)
        states.append(np.asarray(info.get("state", obs), dtype=np.float64))
        actions.append(float(info.get("u", action.reshape(-1)[0])))
        costs.append(-float(reward))
        if terminated or truncated:
            diverged = bool(terminated)
            break
    return Trajectory(
        time=dt * np.arange(len(states)),
        states=np.array(states),
        actions=np.array(actions),
        costs=np.array(costs),
        horizon=horizon,
        diverged=diverged,
    )
