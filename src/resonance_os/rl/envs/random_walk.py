"""The 1000-state random walk of Sutton & Barto, Example 9.1, and its exact true values.

States are numbered ``1..n_states``; ``0`` and ``n_states + 1`` are the terminal states. An episode
starts in the middle (state ``n_states // 2``, 500 for the book's walk); each step jumps uniformly
``1..max_jump`` states left or right (probability 1/2 each). A jump past an edge ends the episode
there with reward -1 (left) or +1 (right); every other reward is 0 and the process is undiscounted.

The walk has no choices to make: its action space is ``Discrete(1)``. ``walk_step`` is the
transition rule shared by the gymnasium environment and the numba kernels of
``algorithms.approximation``, so both simulate the same process; ``transition_matrix`` writes the
same rule in closed form for the exact solutions.
"""

from __future__ import annotations

import functools
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from numba import njit

from resonance_os.rl.errors import ConfigError


@njit(cache=True)
def walk_step(state: int, jump: int, n_states: int) -> tuple[int, float, bool]:
    """Move ``state`` by the signed ``jump``; returns ``(next_state, reward, terminated)``."""
    target = state + jump
    if target < 1:
        return 0, -1.0, True
    if target > n_states:
        return n_states + 1, 1.0, True
    return target, 0.0, False


def _check(n_states: int, max_jump: int) -> None:
    if n_states < 2:
        raise ConfigError(f"n_states={n_states} is too small; use at least 2 states")
    if not 1 <= max_jump <= n_states:
        raise ConfigError(f"max_jump={max_jump} must lie in 1..n_states ({n_states})")


class RandomWalk(gymnasium.Env):
    """Example 9.1's random walk (see the module docstring).

    Args:
        n_states: number of non-terminal states (default 1000).
        max_jump: largest jump in either direction (default 100).

    Observation: the state number in ``0..n_states + 1`` (``Discrete(n_states + 2)``); action: ``0``.
    """

    metadata = {"render_modes": []}

    def __init__(self, n_states: int = 1000, max_jump: int = 100) -> None:
        _check(n_states, max_jump)
        self.n_states = n_states
        self.max_jump = max_jump
        self.start_state = n_states // 2
        self.observation_space = spaces.Discrete(n_states + 2)
        self.action_space = spaces.Discrete(1)
        self._state = self.start_state

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[int, dict]:
        super().reset(seed=seed)
        self._state = self.start_state
        return self._state, {}

    def step(self, action: int) -> tuple[int, float, bool, bool, dict]:
        size = int(self.np_random.integers(1, self.max_jump + 1))
        jump = size if self.np_random.random() < 0.5 else -size
        self._state, reward, terminated = walk_step(self._state, jump, self.n_states)
        return self._state, reward, terminated, False, {}


@functools.lru_cache(maxsize=4)
def _transition_matrix(n_states: int, max_jump: int) -> tuple[np.ndarray, np.ndarray]:
    _check(n_states, max_jump)
    p_jump = 0.5 / max_jump
    states = np.arange(1, n_states + 1)[:, None]
    sizes = np.arange(1, max_jump + 1)[None, :]
    P = np.zeros((n_states, n_states))
    r = np.zeros(n_states)
    for targets in (states + sizes, states - sizes):
        inside = (targets >= 1) & (targets <= n_states)
        rows = np.broadcast_to(states, targets.shape)[inside] - 1
        np.add.at(P, (rows, targets[inside] - 1), p_jump)
        r += p_jump * ((targets > n_states).sum(axis=1) - (targets < 1).sum(axis=1))
    P.flags.writeable = r.flags.writeable = False
    return P, r


def transition_matrix(n_states: int = 1000, max_jump: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """Transition matrix among non-terminal states and the expected reward of each.

    Returns ``(P, r)``: ``P`` is ``(n_states, n_states)`` with ``P[i, j]`` the probability of moving
    from state ``i + 1`` to state ``j + 1``; ``r`` is ``(n_states,)``, the expected one-step reward
    (+1 times the chance of jumping past the right edge, -1 times that of the left edge).
    """
    P, r = _transition_matrix(n_states, max_jump)
    return P.copy(), r.copy()


def true_values(n_states: int = 1000, max_jump: int = 100) -> np.ndarray:
    """Exact state values ``v(1..n_states)``, shape ``(n_states,)``, from solving ``(I - P) v = r``."""
    P, r = transition_matrix(n_states, max_jump)
    return np.linalg.solve(np.eye(n_states) - P, r)


def on_policy_distribution(n_states: int = 1000, max_jump: int = 100) -> np.ndarray:
    """The on-policy distribution mu over states ``1..n_states`` (expected visits per episode, normalised).

    Expected visits ``eta`` solve ``eta = h + P^T eta`` with ``h`` the start state's indicator.
    """
    P, _ = transition_matrix(n_states, max_jump)
    start = np.zeros(n_states)
    start[n_states // 2 - 1] = 1.0
    visits = np.linalg.solve(np.eye(n_states) - P.T, start)
    return visits / visits.sum()
