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


# ODE control (issue 7): time limits in steps of each env's dt.
_register("resonance_os/MGM-v0", "resonance_os.rl.envs.ode:MGMEnv", max_episode_steps=200)
_register("resonance_os/VanDerPol-v0", "resonance_os.rl.envs.ode:VanDerPolEnv", max_episode_steps=200)
_register("resonance_os/Lorenz-v0", "resonance_os.rl.envs.ode:LorenzEnv", max_episode_steps=250)
_register("resonance_os/MeanField-v0", "resonance_os.rl.envs.ode:MeanFieldEnv", max_episode_steps=500)

# Classic RL (issue 6): the spec's grid world, Sutton & Barto's random walk and Mountain Car (no cap).
_register("resonance_os/GridWorld-v0", "resonance_os.rl.envs.gridworld:GridWorld")
_register("resonance_os/RandomWalk-v0", "resonance_os.rl.envs.random_walk:RandomWalk")
_register("resonance_os/MountainCar-v0", "resonance_os.rl.envs.mountain_car:MountainCar")
