"""Running observation and reward normalisation for vectorised rollouts (the idea of SB3's VecNormalize).

* Observations: ``clip((obs - mean) / sqrt(var + eps), -clip_obs, clip_obs)`` with the running mean
  and variance of every observation seen in training.
* Rewards: divided by the running standard deviation of the *discounted return*
  ``R_t = gamma * R_{t-1} + r_t`` (reset at episode ends), then clipped to ``[-clip_reward, clip_reward]``;
  the mean is not subtracted, so the sign of a reward is kept.

Statistics update only while training (``update=True``); ``predict`` and evaluation use them frozen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class RunningMeanStd:
    """Mean and variance of a stream of batches, merged with the parallel (Chan et al.) update.

    Attributes:
        mean, var: arrays of ``shape``; ``count`` starts at a tiny value so the first batch dominates.
    """

    shape: tuple[int, ...] = ()
    mean: np.ndarray = field(init=False)
    var: np.ndarray = field(init=False)
    count: float = 1e-4

    def __post_init__(self) -> None:
        self.mean = np.zeros(self.shape, dtype=np.float64)
        self.var = np.ones(self.shape, dtype=np.float64)

    def update(self, batch: np.ndarray) -> None:
        """Merge a batch of shape ``(n, *shape)`` into the running statistics."""
        batch_mean = batch.mean(axis=0)
        batch_var = batch.var(axis=0)
        n = batch.shape[0]
        delta = batch_mean - self.mean
        total = self.count + n
        self.mean = self.mean + delta * n / total
        m2 = self.var * self.count + batch_var * n + delta**2 * self.count * n / total
        self.var = m2 / total
        self.count = total

    def state_dict(self) -> dict[str, Any]:
        return {"mean": self.mean.tolist(), "var": self.var.tolist(), "count": float(self.count)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.mean = np.asarray(state["mean"], dtype=np.float64).reshape(self.shape)
        self.var = np.asarray(state["var"], dtype=np.float64).reshape(self.shape)
        self.count = float(state["count"])


class Normalizer:
    """Observation and/or reward normalisation for ``n_envs`` parallel environments.

    Args:
        obs_shape: shape of one observation.
        n_envs: number of parallel environments (rewards arrive as arrays of this length).
        normalize_obs, normalize_reward: which of the two to apply; both off makes every call a no-op.
        gamma: discount of the return whose spread scales the rewards.
        clip_obs, clip_reward: symmetric clipping after scaling.
        epsilon: added to the variance before the square root.
    """

    def __init__(
        self,
        obs_shape: tuple[int, ...],
        n_envs: int,
        *,
        normalize_obs: bool,
        normalize_reward: bool,
        gamma: float,
        clip_obs: float = 10.0,
        clip_reward: float = 10.0,
        epsilon: float = 1e-8,
    ) -> None:
        self.normalize_obs = normalize_obs
        self.normalize_reward = normalize_reward
        self.gamma = gamma
        self.clip_obs = clip_obs
        self.clip_reward = clip_reward
        self.epsilon = epsilon
        self.obs_rms = RunningMeanStd(obs_shape)
        self.ret_rms = RunningMeanStd(())
        self.returns = np.zeros(n_envs, dtype=np.float64)

    def obs(self, obs: np.ndarray, update: bool = False) -> np.ndarray:
        """Normalised float32 copy of ``obs`` (shape ``(n, *obs_shape)``); updates the statistics first if asked."""
        if not self.normalize_obs:
            return obs.astype(np.float32, copy=False)
        if update:
            self.obs_rms.update(obs)
        scaled = (obs - self.obs_rms.mean) / np.sqrt(self.obs_rms.var + self.epsilon)
        return np.clip(scaled, -self.clip_obs, self.clip_obs).astype(np.float32)

    def reward(self, reward: np.ndarray, done: np.ndarray) -> np.ndarray:
        """Scale a step's rewards (shape ``(n_envs,)``) and update the return statistics; ``done`` resets returns."""
        if not self.normalize_reward:
            return reward.astype(np.float32, copy=False)
        self.returns = self.returns * self.gamma + reward
        self.ret_rms.update(self.returns)
        scaled = reward / np.sqrt(self.ret_rms.var + self.epsilon)
        self.returns[done] = 0.0
        return np.clip(scaled, -self.clip_reward, self.clip_reward).astype(np.float32)

    def state_dict(self) -> dict[str, Any]:
        return {"obs_rms": self.obs_rms.state_dict(), "ret_rms": self.ret_rms.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.obs_rms.load_state_dict(state["obs_rms"])
        self.ret_rms.load_state_dict(state["ret_rms"])
