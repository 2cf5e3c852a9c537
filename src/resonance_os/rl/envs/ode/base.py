"""A gymnasium environment around a controlled ODE ``dx/dt = f(x, u)``, integrated with ``solve_ivp``.

Each ``step`` holds the action constant (zero-order hold) for ``dt`` time units and integrates the
dynamics with SciPy's ``solve_ivp`` (``method``, ``rtol``, ``atol`` are constructor arguments). The
observation is the state itself. When the solver fails, the state becomes non-finite or leaves the
observation box, the episode terminates with ``divergence_penalty`` as its last reward and the
observation is clipped to the box, so a learner never sees NaN.

Subclasses define the system: ``state_names``, ``dynamics``, ``sample_initial_state`` and
``state_cost``; ``equilibrium`` is the state the controller should drive the system to.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from scipy.integrate import solve_ivp

from resonance_os.rl.errors import ConfigError

SOLVER_METHODS = ("RK45", "RK23", "DOP853", "Radau", "BDF", "LSODA")


class ODEControlEnv(gymnasium.Env[np.ndarray, np.ndarray]):
    """Base class of the ODE control environments (a scalar control input ``u``).

    Args:
        dt: time units integrated per step (> 0).
        action_bound: ``u`` lies in ``[-action_bound, action_bound]``.
        observation_bound: the observation box is ``[-observation_bound, observation_bound]`` per state;
            leaving it counts as divergence.
        action_cost: ``c`` in the per-step reward ``-(state_cost(x) + c * u**2)``.
        divergence_penalty: reward of the step on which the system diverges (<= 0).
        method, rtol, atol: passed to ``scipy.integrate.solve_ivp``.
    """

    metadata = {"render_modes": []}
    state_names: tuple[str, ...] = ()

    def __init__(
        self,
        *,
        dt: float,
        action_bound: float,
        observation_bound: float | Sequence[float],
        action_cost: float = 0.0,
        divergence_penalty: float = -1000.0,
        method: str = "RK45",
        rtol: float = 1e-6,
        atol: float = 1e-8,
    ) -> None:
        _check_positive("dt", dt)
        _check_positive("action_bound", action_bound)
        _check_positive("rtol", rtol)
        _check_positive("atol", atol)
        if action_cost < 0:
            raise ConfigError(f"action_cost={action_cost} must be >= 0 (it is a cost on u**2)")
        if divergence_penalty > 0:
            raise ConfigError(f"divergence_penalty={divergence_penalty} must be <= 0 (it is a penalty)")
        if method not in SOLVER_METHODS:
            raise ConfigError(f"method={method!r} is not a solve_ivp method; choose one of {SOLVER_METHODS}")
        n = len(self.state_names)
        bound = np.broadcast_to(np.asarray(observation_bound, dtype=np.float64), (n,)).copy()
        if np.any(bound <= 0):
            raise ConfigError(f"observation_bound={observation_bound} must be > 0")
        self.dt = float(dt)
        self.action_cost = float(action_cost)
        self.divergence_penalty = float(divergence_penalty)
        self.method = method
        self.rtol = float(rtol)
        self.atol = float(atol)
        self.observation_bound = bound
        box = bound.astype(np.float32)
        self.observation_space = spaces.Box(-box, box, shape=(n,), dtype=np.float32)
        self.action_space = spaces.Box(-action_bound, action_bound, shape=(1,), dtype=np.float32)
        self.state = np.zeros(n)
        self.time = 0.0

    # --- the system (subclasses) -------------------------------------------------------------------
    @property
    def equilibrium(self) -> np.ndarray:
        """The target state (a fixed point of the uncontrolled system), shape ``(n,)``; the origin here."""
        return np.zeros(len(self.state_names))

    def dynamics(self, t: float, x: np.ndarray, u: float) -> np.ndarray:
        """``dx/dt`` at state ``x`` (shape ``(n,)``) under control ``u``."""
        raise NotImplementedError

    def sample_initial_state(self) -> np.ndarray:
        """A start state drawn with ``self.np_random``, shape ``(n,)``."""
        raise NotImplementedError

    def state_cost(self, x: np.ndarray) -> float:
        """The state part of the per-step cost (the reward is its negative minus the action cost)."""
        raise NotImplementedError

    # --- gymnasium API -------------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a new episode; ``options={"state": [...]}`` starts from a given state instead of a draw."""
        super().reset(seed=seed)
        if options and options.get("state") is not None:
            self.state = self._validated_state(options["state"])
        else:
            self.state = np.asarray(self.sample_initial_state(), dtype=np.float64)
        self.time = 0.0
        return self._observation(), {"state": self.state.copy(), "time": self.time}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        u = float(np.clip(np.asarray(action, dtype=np.float64).reshape(-1)[0], -self._umax, self._umax))
        if not np.isfinite(u):
            u = 0.0
        with np.errstate(all="ignore"):
            sol = solve_ivp(
                self.dynamics,
                (self.time, self.time + self.dt),
                self.state,
                method=self.method,
                args=(u,),
                rtol=self.rtol,
                atol=self.atol,
            )
        new_state = sol.y[:, -1] if sol.success and sol.y.shape[1] else np.full_like(self.state, np.nan)
        self.time += self.dt
        diverged = (not sol.success) or not np.all(np.isfinite(new_state))
        diverged = diverged or bool(np.any(np.abs(new_state) > self.observation_bound))
        if diverged:
            finite = np.where(np.isfinite(new_state), new_state, np.sign(self.state) * self.observation_bound)
            self.state = np.clip(finite, -self.observation_bound, self.observation_bound)
            reward = self.divergence_penalty
        else:
            self.state = new_state
            reward = -(self.state_cost(self.state) + self.action_cost * u * u)
        info = {"state": self.state.copy(), "time": self.time, "u": u, "diverged": diverged}
        return self._observation(), float(reward), diverged, False, info

    # --- helpers -------------------------------------------------------------------------------------
    @property
    def _umax(self) -> float:
        return float(self.action_space.high[0])

    def _observation(self) -> np.ndarray:
        return np.clip(self.state, -self.observation_bound, self.observation_bound).astype(np.float32)

    def _validated_state(self, state: object) -> np.ndarray:
        x = np.asarray(state, dtype=np.float64).reshape(-1)
        n = len(self.state_names)
        if x.shape != (n,) or not np.all(np.isfinite(x)):
            raise ConfigError(
                f"options['state']={state!r} must be {n} finite numbers ({', '.join(self.state_names)})"
            )
        if np.any(np.abs(x) > self.observation_bound):
            raise ConfigError(
                f"options['state']={state!r} lies outside the observation box "
                f"+-{self.observation_bound.tolist()}; pass a state inside it"
            )
        return x


def _check_positive(name: str, value: float) -> None:
    if not (np.isfinite(value) and value > 0):
        raise ConfigError(f"{name}={value} must be a positive number")


def uniform_away_from_origin(
    rng: np.random.Generator, n: int, half_width: float, min_abs: float
) -> np.ndarray:
    """``n`` coordinates, each uniform in ``[-half_width, half_width]`` with ``|x_i| >= min_abs``."""
    magnitude = rng.uniform(min_abs, half_width, size=n)
    sign = rng.choice(np.array([-1.0, 1.0]), size=n)
    return magnitude * sign
