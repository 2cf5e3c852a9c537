"""Replay buffer for off-policy algorithms (SAC): a preallocated ring of transitions, sampled uniformly.

All fields of a transition live in one row of a float32 table ``[obs | action | reward | next_obs |
terminated]``, so a minibatch is one ``index_select`` into a preallocated tensor; the returned
fields are views into it and are overwritten by the next ``sample`` call.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from resonance_os.rl.errors import ConfigError


class ReplayBatch(NamedTuple):
    """A minibatch: ``observations`` (B, obs_dim), ``actions`` (B, act_dim), ``rewards`` (B, 1),
    ``next_observations`` (B, obs_dim), ``terminated`` (B, 1) as 0./1. floats."""

    observations: torch.Tensor
    actions: torch.Tensor
    rewards: torch.Tensor
    next_observations: torch.Tensor
    terminated: torch.Tensor


class ReplayBuffer:
    """Ring buffer of ``capacity`` transitions; the oldest are overwritten once it is full.

    Args:
        capacity: number of transitions kept (>= 1).
        obs_dim, act_dim: flat observation and action sizes.
        seed: seed of the sampling generator (``None`` draws one from the OS).
    """

    def __init__(self, capacity: int, obs_dim: int, act_dim: int, seed: int | None = None) -> None:
        if capacity < 1:
            raise ConfigError(f"buffer capacity={capacity} must be >= 1")
        self.capacity = int(capacity)
        self.obs_dim, self.act_dim = obs_dim, act_dim
        width = 2 * obs_dim + act_dim + 2
        self._table = np.zeros((self.capacity, width), dtype=np.float32)
        self._table_t = torch.from_numpy(self._table)  # shares memory with the numpy table
        o, a = obs_dim, act_dim
        self._slices = (slice(0, o), slice(o, o + a), slice(o + a, o + a + 1),
                        slice(o + a + 1, 2 * o + a + 1), slice(2 * o + a + 1, width))  # fmt: skip
        self._batch: torch.Tensor | None = None
        self._generator = torch.Generator()
        if seed is None:
            self._generator.seed()
        else:
            self._generator.manual_seed(int(seed))
        self.position = 0
        self.size = 0

    def __len__(self) -> int:
        return self.size

    def add(
        self,
        observation: np.ndarray,
        action: np.ndarray,
        reward: float,
        next_observation: np.ndarray,
        terminated: bool,
    ) -> None:
        """Store one transition (``terminated`` only, not truncation, stops bootstrapping)."""
        row = self._table[self.position]
        s = self._slices
        row[s[0]] = observation
        row[s[1]] = action
        row[s[2]] = reward
        row[s[3]] = next_observation
        row[s[4]] = float(terminated)
        self.position = (self.position + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, batch_size: int) -> ReplayBatch:
        """``batch_size`` transitions drawn uniformly with replacement."""
        if self.size == 0:
            raise ConfigError("cannot sample from an empty replay buffer; add transitions first")
        if self._batch is None or self._batch.shape[0] != batch_size:
            self._batch = torch.empty((batch_size, self._table.shape[1]), dtype=torch.float32)
        index = torch.randint(0, self.size, (batch_size,), generator=self._generator)
        torch.index_select(self._table_t, 0, index, out=self._batch)
        return ReplayBatch(*(self._batch[:, s] for s in self._slices))
