"""Generalized mean-field model (GMFM) of Duriez, Brunton and Noack, *Machine Learning Control* (2017), ch. 5.

``da1/dt = sigma a1 - a2``, ``da2/dt = sigma a2 + a1``, ``da3/dt = -0.1 a3 - 10 a4``,
``da4/dt = -0.1 a4 + 10 a3 + b`` with ``sigma = 0.1 - a1**2 - a2**2 - a3**2 - a4**2``. Oscillator 1
(a1, a2; frequency 1) is unstable with a limit cycle of radius sqrt(0.1); oscillator 2 (a3, a4;
frequency 10) is stable. The control ``b`` in [-1, 1] enters a4 only, so it can quench oscillator 1
only through the shared ``sigma``: exciting oscillator 2 makes ``sigma < 0``. The cost is
``J = <a1**2 + a2**2> + 0.01 <b**2>``; without control J = 0.1 on the limit cycle.
"""

from __future__ import annotations

import numpy as np

from resonance_os.rl.envs.ode.base import ODEControlEnv

LIMIT_CYCLE_RADIUS = float(np.sqrt(0.1))


class MeanFieldEnv(ODEControlEnv):
    """GMFM; the reward is ``-(a1**2 + a2**2) - action_cost * b**2`` (so its mean is ``-J``).

    Args:
        action_cost: gamma in J (default 0.01).
        **kwargs: ``dt`` (0.1), ``divergence_penalty``, ``method``, ``rtol``, ``atol``.

    Reset puts oscillator 1 on its limit cycle at a uniform phase and oscillator 2 at rest
    (a3 = a4 = 0, as in the book's initial condition); the observation box is +-10.
    """

    state_names = ("a1", "a2", "a3", "a4")

    def __init__(self, action_cost: float = 0.01, dt: float = 0.1, **kwargs: object) -> None:
        super().__init__(dt=dt, action_bound=1.0, observation_bound=10.0, action_cost=action_cost, **kwargs)

    def dynamics(self, t: float, a: np.ndarray, b: float) -> np.ndarray:
        a1, a2, a3, a4 = a[0], a[1], a[2], a[3]
        sigma = 0.1 - a1 * a1 - a2 * a2 - a3 * a3 - a4 * a4
        return np.array([sigma * a1 - a2, sigma * a2 + a1, -0.1 * a3 - 10.0 * a4, -0.1 * a4 + 10.0 * a3 + b])

    def sample_initial_state(self) -> np.ndarray:
        phase = self.np_random.uniform(0.0, 2.0 * np.pi)
        return np.array([LIMIT_CYCLE_RADIUS * np.cos(phase), LIMIT_CYCLE_RADIUS * np.sin(phase), 0.0, 0.0])

    def state_cost(self, x: np.ndarray) -> float:
        return float(x[0] * x[0] + x[1] * x[1])
