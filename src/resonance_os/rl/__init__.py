"""The general RL engine: algorithms, environments, networks, buffers, logger and checkpoints.

It imports nothing ResonanceOS-specific, so it can be used on any gymnasium environment.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

# Public names exported lazily, so ``import resonance_os.rl`` stays light (no torch) until one is used.
_LAZY_EXPORTS = {
    "PPO": "resonance_os.rl.algorithms.ppo",
    "PPOConfig": "resonance_os.rl.algorithms.ppo",
}

__all__ = sorted(_LAZY_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _LAZY_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'resonance_os.rl' has no attribute {name!r}")
    return getattr(import_module(module), name)
