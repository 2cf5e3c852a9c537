"""Van der Pol oscillator with control on the second equation.

``dx1/dt = x2``, ``dx2/dt = mu (1 - x1**2) x2 - x1 + u`` with ``mu = 1`` by default; uncontrolled, every
start other than the origin converges to a limit cycle of amplitude about 2 (period 6.66 at mu = 1).
Source: van der Pol (1926); the controlled form is the one used by pysindy's examples.
"""

from __future__ import annotations

import numpy as np

from resonance_os.rl.envs.ode.base import ODEControlEnv, uniform_away_from_origin
from resonance_os.rl.errors import ConfigError


class VanDerPolEnv(ODEControlEnv):
    """Van der Pol oscillator; the goal is the (unstable) origin.

    Args:
        mu: nonlinear damping (> 0, default 1).
        action_cost: cost ``c * u**2`` subtracted from the reward ``-||x||`` (default 0).
        **kwargs: ``dt`` (0.05), ``divergence_penalty``, ``method``, ``rtol``, ``atol``.

    ``u`` lies in [-5, 5]; reset draws each state uniformly in [-3, 3] with ``|x_i| >= 0.5``; the
    observation box is +-10.
    """

    state_names = ("x1", "x2")

    def __init__(self, mu: float = 1.0, action_cost: float = 0.0, dt: float = 0.05, **kwargs: object) -> None:
        if not mu > 0:
            raise ConfigError(f"mu={mu} must be > 0")
        super().__init__(dt=dt, action_bound=5.0, observation_bound=10.0, action_cost=action_cost, **kwargs)
        self.mu = float(mu)

    def dynamics(self, t: float, x: np.ndarray, u: float) -> np.ndarray:
        x1, x2 = x[0], x[1]
        return np.array([x2, self.mu * (1.0 - x1 * x1) * x2 - x1 + u])

    def sample_initial_state(self) -> np.ndarray:
        return uniform_away_from_origin(self.np_random, 2, 3.0, 0.5)

    def state_cost(self, x: np.ndarray) -> float:
        return float(np.hypot(x[0], x[1]))
