"""Turn what a user passes as ``env`` (an id, an Env, a vector env) into a same-step-autoreset vector env."""

from __future__ import annotations

import gymnasium as gym
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv

from resonance_os.rl.errors import ConfigError


def as_vector_env(env: str | gym.Env | VectorEnv, n_envs: int = 1) -> VectorEnv:
    """Return a gymnasium vector env that resets finished sub-envs in the same step.

    Args:
        env: an env id (``gymnasium.make`` is called ``n_envs`` times), a ``gymnasium.Env`` (wrapped
            alone; ``n_envs`` must be 1) or a ``gymnasium.vector.VectorEnv`` created with
            ``autoreset_mode=AutoresetMode.SAME_STEP`` (used as is; ``n_envs`` is ignored).
        n_envs: number of copies for an env id.

    Same-step autoreset puts the final observation of an ended episode in ``info["final_obs"]``,
    which the algorithms need to bootstrap time-limit truncations.
    """
    if n_envs < 1:
        raise ConfigError(f"n_envs must be >= 1, got {n_envs}")
    if isinstance(env, VectorEnv):
        mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        if mode != AutoresetMode.SAME_STEP:
            raise ConfigError(
                f"the vector env uses autoreset_mode={mode}; create it with "
                "autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP (or pass an env id and n_envs)"
            )
        return env
    if isinstance(env, str):
        try:
            gym.spec(env)
        except gym.error.Error as exc:
            raise ConfigError(f"unknown environment id {env!r}: {exc}") from exc
        return SyncVectorEnv(
            [lambda: gym.make(env) for _ in range(n_envs)], autoreset_mode=AutoresetMode.SAME_STEP
        )
    if isinstance(env, gym.Env):
        if n_envs != 1:
            raise ConfigError(
                f"n_envs={n_envs} needs an env id (or a vector env) to build copies; a single Env instance "
                "can only run alone"
            )
        return SyncVectorEnv([lambda: env], autoreset_mode=AutoresetMode.SAME_STEP)
    raise ConfigError(
        f"env must be an env id, a gymnasium.Env or a gymnasium vector env, got {type(env).__name__}"
    )
