"""Gaussian-process controller: Bayesian optimisation of a saturated linear feedback law.

The policy is ``u = clip(-K (x - x*) + c, low, high)`` with gains ``K`` (one per state), an optional
bias ``c`` and ``x*`` the env's ``equilibrium`` (the origin when it has none). Its parameters
``theta = (K, c)`` live in the box ``[-gain_bound, gain_bound]``. Each evaluation rolls the policy out
from a fixed set of start states (``env.reset(seed=seed + i)``) for ``horizon`` steps and returns the
mean per-step cost ``J = -sum(rewards) / (starts * horizon)`` (a diverged rollout keeps its penalty).

Bayesian optimisation (Jones, Schonlau and Welch 1998; Snoek et al. 2012):

1. a scrambled Sobol design of ``n_initial`` parameter vectors is evaluated;
2. a GP (scikit-learn ``GaussianProcessRegressor``, Matern 5/2 ARD kernel plus white noise,
   normalised targets) is fitted to ``log J`` against the parameters scaled to ``[0, 1]^d``;
3. the next parameters maximise expected improvement
   ``EI(theta) = (f* - mu - xi) Phi(z) + s phi(z)``, ``z = (f* - mu - xi) / s`` over uniform random
   candidates and Gaussian perturbations of the incumbent;
4. repeat from 2 until ``total_timesteps`` environment steps are used; the best evaluated
   parameters become the policy.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium
import numpy as np
import torch
from gymnasium import spaces
from scipy.stats import norm, qmc
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

from resonance_os.rl.checkpoint import load_checkpoint, save_checkpoint
from resonance_os.rl.config import JsonConfig
from resonance_os.rl.contract import Callback, as_callback, checkpoint_metadata, timesteps_from_metadata
from resonance_os.rl.errors import ConfigError, EnvMismatchError
from resonance_os.rl.logger import MetricsLogger
from resonance_os.rl.spaces import env_and_spaces

DEFAULT_HORIZON = 200


@dataclass
class GPControlConfig(JsonConfig):
    """Hyperparameters of :class:`GPController` (defaults in brackets).

    n_initial: Sobol design points before the GP is used [8]. n_candidates: random candidates scored
    by EI per iteration [2000]. n_eval_starts: start states per evaluation [4]. horizon: steps per
    evaluation rollout, ``None`` = the env's time limit (or 200) [None]. gain_bound: half-width of
    the parameter box [5.0]. bias: add a constant term ``c`` to the law [False]. xi: EI exploration
    margin in log-cost units [0.01]. seed: start states, design and GP restarts [None].
    """

    config_name: ClassVar[str] = "GP controller"

    n_initial: int = 8
    n_candidates: int = 2000
    n_eval_starts: int = 4
    horizon: int | None = None
    gain_bound: float = 5.0
    bias: bool = False
    xi: float = 0.01
    seed: int | None = None

    def __post_init__(self) -> None:
        for name in ("n_initial", "n_candidates", "n_eval_starts"):
            if not getattr(self, name) >= 1:
                raise ConfigError(f"GPControlConfig.{name}={getattr(self, name)} must be >= 1")
        if self.horizon is not None and self.horizon < 1:
            raise ConfigError(f"GPControlConfig.horizon={self.horizon} must be >= 1 or None")
        if not self.gain_bound > 0:
            raise ConfigError(f"GPControlConfig.gain_bound={self.gain_bound} must be > 0")
        if self.xi < 0:
            raise ConfigError(f"GPControlConfig.xi={self.xi} must be >= 0")


def expected_improvement(mu: np.ndarray, std: np.ndarray, best: float, xi: float) -> np.ndarray:
    """EI for minimisation of a GP with posterior ``mu``, ``std`` (shape (m,)) below ``best``."""
    std = np.maximum(std, 1e-12)
    gap = best - mu - xi
    z = gap / std
    return gap * norm.cdf(z) + std * norm.pdf(z)


class GPController:
    """Bayesian-optimised linear feedback: ``GPController("LinearFeedback", env, **config)``.

    ``learn(total_timesteps)`` runs BO within that many env steps; ``predict(obs)`` returns
    ``(u, None)``; ``save``/``load`` use a checkpoint folder. ``self.params`` (d,) holds ``theta``,
    ``self.history_params`` (n, d) and ``self.history_costs`` (n,) every evaluation. Callbacks, ``history``
    and checkpoint keys follow ``resonance_os.rl.contract``, as PPO's and SAC's do.
    """

    algorithm = "GPController"

    def __init__(
        self,
        policy: str,
        env: gymnasium.Env | str | None,
        *,
        log_dir: str | os.PathLike[str] | None = None,
        observation_space: spaces.Box | None = None,
        action_space: spaces.Box | None = None,
        equilibrium: np.ndarray | None = None,
        **config: Any,
    ) -> None:
        if policy != "LinearFeedback":
            raise ConfigError(f"policy={policy!r} is not supported; GPController offers 'LinearFeedback'")
        self.config = GPControlConfig.from_dict(config)
        self.env, observation_space, action_space = env_and_spaces(
            env, observation_space, action_space, "GPController"
        )
        if self.env is not None:
            equilibrium = getattr(self.env.unwrapped, "equilibrium", None)
        if not isinstance(observation_space, spaces.Box) or len(observation_space.shape) != 1:
            raise EnvMismatchError(f"GPController needs a 1-D Box observation space, got {observation_space}")
        if not isinstance(action_space, spaces.Box) or action_space.shape != (1,):
            raise EnvMismatchError(f"GPController needs a scalar Box action space, got {action_space}")
        self.observation_space, self.action_space = observation_space, action_space
        n = observation_space.shape[0]
        self.equilibrium = np.zeros(n) if equilibrium is None else np.asarray(equilibrium, dtype=np.float64)
        self.dim = n + int(self.config.bias)
        self.params = np.zeros(self.dim)
        self.history_params = np.empty((0, self.dim))
        self.history_costs = np.empty(0)
        self.num_timesteps = 0
        self.history: list[dict[str, Any]] = []
        self.log_dir = log_dir
        self.logger = MetricsLogger(None)

    # --- acting ------------------------------------------------------------------------------------
    def _action(self, params: np.ndarray, observation: np.ndarray) -> np.ndarray:
        n = self.equilibrium.size
        x = np.asarray(observation, dtype=np.float64) - self.equilibrium
        u = -(x @ params[:n])
        if self.config.bias:
            u = u + params[n]
        u = np.clip(u, self.action_space.low[0], self.action_space.high[0])
        return np.asarray(u, dtype=np.float32)[..., None]

    def predict(
        self, observation: np.ndarray, state: Any = None, deterministic: bool = True
    ) -> tuple[np.ndarray, None]:
        """``u`` of shape (1,) for one observation (n,), or (batch, 1) for (batch, n)."""
        return self._action(self.params, observation), None

    # --- learning ----------------------------------------------------------------------------------
    def evaluate(self, params: np.ndarray) -> tuple[float, int]:
        """Mean per-step cost ``J`` of ``params`` over the fixed start states, and the env steps used."""
        if self.env is None:
            raise ConfigError("this GPController has no env; pass env= to GPController.load to keep learning")
        cfg = self.config
        horizon = cfg.horizon or getattr(self.env.spec, "max_episode_steps", None) or DEFAULT_HORIZON
        base = 0 if cfg.seed is None else cfg.seed
        total, steps = 0.0, 0
        for i in range(cfg.n_eval_starts):
            obs, _ = self.env.reset(seed=base + i)
            for _ in range(horizon):
                obs, reward, terminated, truncated, _ = self.env.step(self._action(params, obs))
                total += float(reward)
                steps += 1
                if terminated or truncated:
                    break
        cost = -total / (cfg.n_eval_starts * horizon)
        if cost < 0:
            raise EnvMismatchError(
                f"the rollouts earned a positive mean reward ({-cost:.4g}); GPController minimises costs and "
                "needs rewards <= 0 (negated costs), as the ODE control envs give"
            )
        return cost, steps

    def learn(
        self,
        total_timesteps: int,
        callback: Callback | None = None,
        progress_bar: bool = False,
        reset_num_timesteps: bool = True,
    ) -> GPController:
        """Bayesian optimisation within ``total_timesteps`` env steps (the last evaluation may overrun it).

        ``callback(model, metrics)`` runs after each evaluation with the row just appended to
        ``self.history``; returning ``False`` stops early.
        """
        if total_timesteps < 1:
            raise ConfigError(f"total_timesteps={total_timesteps} must be >= 1")
        callback = as_callback(callback, "GPController")
        if reset_num_timesteps:
            self.num_timesteps = 0
        cfg = self.config
        rng = np.random.default_rng(cfg.seed)
        low, high = -cfg.gain_bound * np.ones(self.dim), cfg.gain_bound * np.ones(self.dim)
        design = qmc.Sobol(self.dim, scramble=True, seed=rng).random(cfg.n_initial)
        self.logger = MetricsLogger(
            self.log_dir, progress_bar=progress_bar, total_timesteps=total_timesteps, description="GP control"
        )
        used = 0
        unit_points = list(design)
        xs: list[np.ndarray] = []
        log_costs: list[float] = []
        try:
            while used < total_timesteps:
                if unit_points:
                    unit = unit_points.pop(0)
                else:
                    unit = self._propose(np.array(xs), np.array(log_costs), rng)
                params = low + unit * (high - low)
                cost, steps = self.evaluate(params)
                used += steps
                self.num_timesteps += steps
                xs.append(unit)
                log_costs.append(float(np.log(cost + 1e-9)))
                self.history_params = np.vstack([self.history_params, params])
                self.history_costs = np.append(self.history_costs, cost)
                self.params = self.history_params[int(np.argmin(self.history_costs))]
                row = self.logger.record(
                    {"cost": cost, "best_cost": float(self.history_costs.min()),
                     "episode_reward_mean": -cost * steps / cfg.n_eval_starts,
                     "evaluations": len(self.history_costs)},
                    self.num_timesteps,
                )  # fmt: skip
                self.history.append(row)
                if callback is not None and callback(self, row) is False:
                    break
        finally:
            self.logger.close()
        return self

    def _propose(self, xs: np.ndarray, ys: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The candidate in ``[0, 1]^d`` with the largest expected improvement under a GP fit to (xs, ys)."""
        kernel = ConstantKernel(1.0, (1e-3, 1e3)) * Matern(
            length_scale=np.full(self.dim, 0.3), length_scale_bounds=(1e-2, 1e1), nu=2.5
        ) + WhiteKernel(1e-3, (1e-6, 1e-1))
        gp = GaussianProcessRegressor(
            kernel, normalize_y=True, n_restarts_optimizer=2, random_state=int(rng.integers(2**31))
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            gp.fit(xs, ys)
        best = xs[int(np.argmin(ys))]
        n_local = self.config.n_candidates // 2
        candidates = np.vstack([
            rng.uniform(size=(self.config.n_candidates - n_local, self.dim)),
            np.clip(best + 0.05 * rng.standard_normal((n_local, self.dim)), 0.0, 1.0),
        ])  # fmt: skip
        mu, std = gp.predict(candidates, return_std=True)
        return candidates[int(np.argmax(expected_improvement(mu, std, float(ys.min()), self.config.xi)))]

    # --- persistence -------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write a checkpoint folder: the law's parameters, every evaluation, config and spaces."""
        save_checkpoint(
            path,
            weights={"policy": {"params": torch.as_tensor(self.params, dtype=torch.float64)}},
            states={
                "history": {
                    "params": torch.as_tensor(self.history_params),
                    "costs": torch.as_tensor(self.history_costs),
                }
            },  # fmt: skip
            config=self.config.to_dict(),
            metadata={
                "algorithm": self.algorithm,
                **checkpoint_metadata(self),
                "equilibrium": self.equilibrium.tolist(),
                "observation_space": {
                    "low": self.observation_space.low.tolist(),
                    "high": self.observation_space.high.tolist(),
                },
                "action_space": {
                    "low": self.action_space.low.tolist(),
                    "high": self.action_space.high.tolist(),
                },
            },  # fmt: skip
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str], env: gymnasium.Env | str | None = None) -> GPController:
        """Load a checkpoint written by :meth:`save`; ``env`` is needed only to keep learning."""
        ckpt = load_checkpoint(path, expected_algorithm=cls.algorithm)
        meta = ckpt.metadata
        obs = meta["observation_space"]
        act = meta["action_space"]
        model = cls(
            "LinearFeedback",
            env,
            observation_space=spaces.Box(np.array(obs["low"], np.float32), np.array(obs["high"], np.float32)),
            action_space=spaces.Box(np.array(act["low"], np.float32), np.array(act["high"], np.float32)),
            equilibrium=np.array(meta["equilibrium"]),
            **ckpt.config,
        )
        params = ckpt.weights["policy"]["params"].numpy()
        if params.shape != (model.dim,):
            raise EnvMismatchError(
                f"checkpoint {path} holds {params.shape[0]} parameters, the env needs {model.dim}; "
                "pass the env it was trained on"
            )
        model.params = params
        model.history_params = ckpt.states["history"]["params"].numpy()
        model.history_costs = ckpt.states["history"]["costs"].numpy()
        model.num_timesteps = timesteps_from_metadata(meta)
        return model
