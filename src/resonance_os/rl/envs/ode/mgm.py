"""Moore-Greitzer model (MGM) of compressor surge and stall, in the form of the ODE-control article.

``dx1/dt = -x2 - 1.5 x1**2 - 0.5 x1**3``, ``dx2/dt = x1 + u``; x1 is the mass flow, x2 the pressure
rise (deviations from the operating point). The states are clipped to +-20 inside the dynamics as in
the article; the observation box is +-29 and ``u`` lies in [-10, 10]. Each step integrates 0.05 time
units. Source: Manchester and Slotine, "Output-feedback control of nonlinear systems using control
contraction metrics and convex optimization" (2014), after Moore and Greitzer (1986).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from resonance_os.rl.envs.ode.base import ODEControlEnv, uniform_away_from_origin
from resonance_os.rl.errors import ConfigError

DYNAMICS_CLIP = 20.0


class MGMEnv(ODEControlEnv):
    """Moore-Greitzer surge/stall model with control on the pressure rise.

    Args:
        reward: ``"x1"`` (default, the article's ``-|x1|``) or ``"norm"`` (``-||x||``).
        action_cost: cost ``c * u**2`` subtracted from the reward (default 0).
        start_half_width, start_min_abs: reset draws each state uniformly in
            ``[-start_half_width, start_half_width]`` with ``|x_i| >= start_min_abs`` (defaults 8 and 2.5).
        **kwargs: ``dt`` (0.05), ``divergence_penalty``, ``method``, ``rtol``, ``atol``.
    """

    state_names = ("x1", "x2")

    def __init__(
        self,
        reward: Literal["x1", "norm"] = "x1",
        action_cost: float = 0.0,
        start_half_width: float = 8.0,
        start_min_abs: float = 2.5,
        dt: float = 0.05,
        **kwargs: object,
    ) -> None:
        if reward not in ("x1", "norm"):
            raise ConfigError(f"reward={reward!r} is unknown; choose 'x1' (-|x1|) or 'norm' (-||x||)")
        if not 0 <= start_min_abs < start_half_width <= 29:
            raise ConfigError(
                f"start_min_abs={start_min_abs}, start_half_width={start_half_width}: need "
                "0 <= start_min_abs < start_half_width <= 29"
            )
        super().__init__(dt=dt, action_bound=10.0, observation_bound=29.0, action_cost=action_cost, **kwargs)
        self.reward_mode = reward
        self.start_half_width = float(start_half_width)
        self.start_min_abs = float(start_min_abs)

    def dynamics(self, t: float, x: np.ndarray, u: float) -> np.ndarray:
        x1 = min(max(x[0], -DYNAMICS_CLIP), DYNAMICS_CLIP)
        x2 = min(max(x[1], -DYNAMICS_CLIP), DYNAMICS_CLIP)
        return np.array([-x2 - 1.5 * x1 * x1 - 0.5 * x1 * x1 * x1, x1 + u])

    def sample_initial_state(self) -> np.ndarray:
        return uniform_away_from_origin(self.np_random, 2, self.start_half_width, self.start_min_abs)

    def state_cost(self, x: np.ndarray) -> float:
        return abs(float(x[0])) if self.reward_mode == "x1" else float(np.hypot(x[0], x[1]))
