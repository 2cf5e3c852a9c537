"""Per-prompt running reward statistics that turn rewards into advantages (as ddpo-pytorch's tracker).

Each prompt (here: class label) keeps its last ``buffer_size`` rewards. Until a prompt has
``min_count`` rewards, its samples are normalised with the whole batch's mean and standard
deviation; afterwards with its own buffer's. ``advantage = (reward - mean) / (std + 1e-6)``.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from resonance_os.rl.errors import ConfigError


class PerPromptStatTracker:
    def __init__(self, buffer_size: int = 32, min_count: int = 16) -> None:
        if buffer_size < 1 or min_count < 1 or min_count > buffer_size:
            raise ConfigError(
                f"stat tracker needs 1 <= min_count <= buffer_size (got min_count={min_count}, "
                f"buffer_size={buffer_size})"
            )
        self.buffer_size = buffer_size
        self.min_count = min_count
        self.buffers: dict[int, deque[float]] = {}

    def update(self, prompts: np.ndarray, rewards: np.ndarray) -> np.ndarray:
        """Add this batch's rewards to the buffers and return one advantage per sample."""
        prompts = np.asarray(prompts)
        rewards = np.asarray(rewards, dtype=np.float64)
        advantages = np.empty_like(rewards)
        batch_mean, batch_std = rewards.mean(), rewards.std()
        for prompt in np.unique(prompts):
            mask = prompts == prompt
            buffer = self.buffers.setdefault(int(prompt), deque(maxlen=self.buffer_size))
            buffer.extend(rewards[mask].tolist())
            if len(buffer) < self.min_count:
                mean, std = batch_mean, batch_std
            else:
                mean, std = float(np.mean(buffer)), float(np.std(buffer))
            advantages[mask] = (rewards[mask] - mean) / (std + 1e-6)
        return advantages

    def state_dict(self) -> dict[str, Any]:
        return {"buffers": {str(k): list(v) for k, v in self.buffers.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.buffers = {
            int(k): deque((float(x) for x in v), maxlen=self.buffer_size) for k, v in state["buffers"].items()
        }
