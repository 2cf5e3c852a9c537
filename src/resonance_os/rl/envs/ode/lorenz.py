"""Lorenz system with control on dx/dt (the SINDy-MPC form of Kaiser, Kutz and Brunton 2018, Eq. 4.1).

``dx/dt = sigma (y - x) + u``, ``dy/dt = x (rho - z) - y``, ``dz/dt = x y - beta z`` with sigma = 10,
rho = 28, beta = 8/3 (chaotic). The goal is a chosen fixed point: ``"positive"``
(``(+sqrt(beta (rho-1)), +sqrt(beta (rho-1)), rho-1)`` = (8.485, 8.485, 27), the default),
``"negative"`` or ``"origin"``. Source: Lorenz (1963); Kaiser, Kutz, Brunton, Proc. R. Soc. A 474 (2018).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from resonance_os.rl.envs.ode.base import ODEControlEnv
from resonance_os.rl.errors import ConfigError


class LorenzEnv(ODEControlEnv):
    """Lorenz system; the reward is ``-||x - x*||`` toward the chosen fixed point ``x*``.

    Args:
        target: ``"positive"`` (default), ``"negative"`` or ``"origin"``.
        sigma, rho, beta: the Lorenz parameters (10, 28, 8/3).
        action_cost: cost ``c * u**2`` subtracted from the reward (default 0).
        **kwargs: ``dt`` (0.02), ``divergence_penalty``, ``method``, ``rtol``, ``atol``.

    ``u`` lies in [-50, 50]; reset draws x, y uniformly in [-15, 15] and z in [5, 45]; the
    observation box is +-100.
    """

    state_names = ("x", "y", "z")

    def __init__(
        self,
        target: Literal["positive", "negative", "origin"] = "positive",
        sigma: float = 10.0,
        rho: float = 28.0,
        beta: float = 8.0 / 3.0,
        action_cost: float = 0.0,
        dt: float = 0.02,
        **kwargs: object,
    ) -> None:
        if target not in ("positive", "negative", "origin"):
            raise ConfigError(f"target={target!r} is unknown; choose 'positive', 'negative' or 'origin'")
        if target != "origin" and not rho > 1:
            raise ConfigError(f"rho={rho} must be > 1 for the fixed points other than the origin to exist")
        super().__init__(dt=dt, action_bound=50.0, observation_bound=100.0, action_cost=action_cost, **kwargs)
        self.sigma, self.rho, self.beta = float(sigma), float(rho), float(beta)
        self.target = target
        if target == "origin":
            self._equilibrium = np.zeros(3)
        else:
            c = np.sqrt(self.beta * (self.rho - 1.0)) * (1.0 if target == "positive" else -1.0)
            self._equilibrium = np.array([c, c, self.rho - 1.0])

    @property
    def equilibrium(self) -> np.ndarray:
        return self._equilibrium.copy()

    def dynamics(self, t: float, s: np.ndarray, u: float) -> np.ndarray:
        x, y, z = s[0], s[1], s[2]
        return np.array([self.sigma * (y - x) + u, x * (self.rho - z) - y, x * y - self.beta * z])

    def sample_initial_state(self) -> np.ndarray:
        return np.array(
            [self.np_random.uniform(-15, 15), self.np_random.uniform(-15, 15), self.np_random.uniform(5, 45)]
        )

    def state_cost(self, x: np.ndarray) -> float:
        return float(np.linalg.norm(x - self._equilibrium))
