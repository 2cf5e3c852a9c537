"""Mountain Car as in Sutton & Barto, chapter 10 (Example 10.1), without an episode cap.

We implement the book's version rather than wrapping gymnasium's ``MountainCar-v0`` so the numba
kernels of ``algorithms.approximation`` share one transition function (``car_step``) with this env.
The dynamics equal gymnasium's (a test checks this step by step):

    velocity <- clip(velocity + 0.001 * (action - 1) - 0.0025 * cos(3 * position), -0.07, 0.07)
    position <- clip(position + velocity, -1.2, 0.5); at position -1.2 the velocity is reset to 0

Actions are ``0`` full throttle reverse, ``1`` zero throttle, ``2`` full throttle forward. The reward
is -1 per step; the episode ends when the position reaches 0.5. The start is position ~ U[-0.6, -0.4),
velocity 0. There is no time limit unless you pass ``max_episode_steps`` to ``gymnasium.make`` (the
registered ``resonance_os/MountainCar-v0`` has none).
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from numba import njit

MIN_POSITION, MAX_POSITION = -1.2, 0.5
MAX_SPEED = 0.07
START_LOW, START_HIGH = -0.6, -0.4


@njit(cache=True)
def car_step(position: float, velocity: float, action: int) -> tuple[float, float, bool]:
    """One step of the book's dynamics; returns ``(position, velocity, terminated)``."""
    velocity += 0.001 * (action - 1) - 0.0025 * math.cos(3.0 * position)
    velocity = min(max(velocity, -MAX_SPEED), MAX_SPEED)
    position += velocity
    position = min(max(position, MIN_POSITION), MAX_POSITION)
    if position == MIN_POSITION:
        velocity = 0.0
    return position, velocity, position >= MAX_POSITION


class MountainCar(gymnasium.Env):
    """The book's Mountain Car; observation ``[position, velocity]`` (float64), actions ``Discrete(3)``."""

    metadata = {"render_modes": []}

    def __init__(self) -> None:
        self.observation_space = spaces.Box(
            low=np.array([MIN_POSITION, -MAX_SPEED]),
            high=np.array([MAX_POSITION, MAX_SPEED]),
            dtype=np.float64,
        )
        self.action_space = spaces.Discrete(3)
        self._state = np.zeros(2)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._state = np.array([self.np_random.uniform(START_LOW, START_HIGH), 0.0])
        return self._state.copy(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        position, velocity, terminated = car_step(float(self._state[0]), float(self._state[1]), int(action))
        self._state = np.array([position, velocity])
        return self._state.copy(), -1.0, bool(terminated), False, {}
