"""Control environments around ODEs (Moore-Greitzer, Van der Pol, Lorenz, generalized mean-field).

Registered as ``resonance_os/MGM-v0``, ``resonance_os/VanDerPol-v0``, ``resonance_os/Lorenz-v0`` and
``resonance_os/MeanField-v0`` when ``resonance_os.rl.envs`` is imported.
"""

from resonance_os.rl.envs.ode.base import ODEControlEnv
from resonance_os.rl.envs.ode.lorenz import LorenzEnv
from resonance_os.rl.envs.ode.meanfield import MeanFieldEnv
from resonance_os.rl.envs.ode.mgm import MGMEnv
from resonance_os.rl.envs.ode.rollout import Trajectory, rollout
from resonance_os.rl.envs.ode.vanderpol import VanDerPolEnv

__all__ = ["LorenzEnv", "MGMEnv", "MeanFieldEnv", "ODEControlEnv", "Trajectory", "VanDerPolEnv", "rollout"]
