"""On-policy rollout storage with Generalised Advantage Estimation (Schulman et al. 2016, "GAE").

The buffer holds ``n_steps`` transitions of ``n_envs`` environments in preallocated float32 arrays.
After a rollout, :meth:`RolloutBuffer.compute_returns_and_advantage` fills

    delta_t = r_t + gamma * V(s_{t+1}) * (1 - done_t) - V(s_t)
    A_t     = delta_t + gamma * lambda * (1 - done_t) * A_{t+1}
    R_t     = A_t + V(s_t)                      (the TD(lambda) return, the value target)

where ``done_t`` marks that the episode ended at step t. Episodes cut by a time limit
(*truncated*, not *terminated*) are bootstrapped by the caller before storing: it adds
``gamma * V(final observation)`` to the reward of the truncating step, as SB3 does.
"""

from __future__ import annotations

import numpy as np
import torch


class RolloutBuffer:
    """Transitions of one rollout, shape ``(n_steps, n_envs, ...)``.

    Args:
        n_steps: steps per environment between updates.
        n_envs: parallel environments.
        obs_dim: length of a flattened observation.
        action_dim: length of a stored action (1 for Discrete, the Box dimension otherwise).
    """

    def __init__(self, n_steps: int, n_envs: int, obs_dim: int, action_dim: int) -> None:
        self.n_steps, self.n_envs = n_steps, n_envs
        self.obs_dim, self.action_dim = obs_dim, action_dim
        self.observations = np.zeros((n_steps, n_envs, obs_dim), dtype=np.float32)
        self.actions = np.zeros((n_steps, n_envs, action_dim), dtype=np.float32)
        self.rewards = np.zeros((n_steps, n_envs), dtype=np.float32)
        self.dones = np.zeros((n_steps, n_envs), dtype=np.float32)
        self.values = np.zeros((n_steps, n_envs), dtype=np.float32)
        self.log_probs = np.zeros((n_steps, n_envs), dtype=np.float32)
        self.advantages = np.zeros((n_steps, n_envs), dtype=np.float32)
        self.returns = np.zeros((n_steps, n_envs), dtype=np.float32)
        self.pos = 0

    def add(
        self,
        obs: np.ndarray,
        action: np.ndarray,
        reward: np.ndarray,
        done: np.ndarray,
        value: np.ndarray,
    ) -> None:
        """Store step ``pos`` for all envs: ``obs`` (n_envs, obs_dim), ``action`` (n_envs, action_dim), rest (n_envs,).

        ``log_probs`` are written for the whole rollout at once after it (one vectorised call).
        """
        t = self.pos
        self.observations[t] = obs
        self.actions[t] = action
        self.rewards[t] = reward
        self.dones[t] = done
        self.values[t] = value
        self.pos += 1

    @property
    def full(self) -> bool:
        return self.pos == self.n_steps

    def compute_returns_and_advantage(self, last_values: np.ndarray, gamma: float, gae_lambda: float) -> None:
        """Fill ``advantages`` and ``returns`` by GAE; ``last_values`` (n_envs,) is V of the observation after the rollout."""
        next_advantage = np.zeros(self.n_envs, dtype=np.float32)
        next_values = last_values.astype(np.float32)
        for t in reversed(range(self.n_steps)):
            not_done = 1.0 - self.dones[t]
            delta = self.rewards[t] + gamma * next_values * not_done - self.values[t]
            next_advantage = delta + gamma * gae_lambda * not_done * next_advantage
            self.advantages[t] = next_advantage
            next_values = self.values[t]
        self.returns[:] = self.advantages + self.values

    def packed(self) -> torch.Tensor:
        """All transitions as one float32 tensor ``(n_steps * n_envs, obs_dim + action_dim + 4)``.

        Columns: observation, action, old log-prob, advantage, return, old value. One tensor lets the
        update shuffle everything with a single gather per epoch and slice minibatches as views.
        """
        n = self.n_steps * self.n_envs
        return torch.from_numpy(
            np.concatenate(
                [
                    self.observations.reshape(n, self.obs_dim),
                    self.actions.reshape(n, self.action_dim),
                    self.log_probs.reshape(n, 1),
                    self.advantages.reshape(n, 1),
                    self.returns.reshape(n, 1),
                    self.values.reshape(n, 1),
                ],
                axis=1,
            )
        )

    def reset(self) -> None:
        self.pos = 0
