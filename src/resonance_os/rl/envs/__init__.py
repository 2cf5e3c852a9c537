"""Our gymnasium environments, registered under the ``resonance_os/`` namespace on import.

Each environment module exposes its classes; the ``gymnasium.register`` calls below make them
available as ``gymnasium.make("resonance_os/<Name>-v0")`` once ``resonance_os.rl.envs`` is imported.
"""

from __future__ import annotations

import gymnasium


def _register(env_id: str, entry_point: str, **kwargs: object) -> None:
    """Register ``env_id`` once (re-importing this module must not raise)."""
    if env_id not in gymnasium.registry:
        gymnasium.register(id=env_id, entry_point=entry_point, **kwargs)
