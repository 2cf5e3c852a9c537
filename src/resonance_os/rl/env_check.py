"""A quick check, before training, that an env speaks the Gymnasium API its spaces promise.

Envs written for the old ``gym`` API (``reset()`` returning only the observation, ``step()`` returning
4 values) otherwise fail on the first rollout with an unpacking error deep inside the vector env.
"""

from __future__ import annotations

import gymnasium as gym

from resonance_os.rl.errors import EnvMismatchError

GYMNASIUM_API = "Gymnasium envs return (obs, info) from reset() and (obs, reward, terminated, truncated, info) from step()"


def check_env_api(env: gym.Env) -> None:
    """Reset ``env`` once and take one random step; ``EnvMismatchError`` names what does not fit.

    Checks: both spaces are ``gymnasium.spaces.Space`` objects, ``reset()`` returns ``(obs, info)``
    with ``obs`` in the observation space, ``step()`` returns 5 values with ``obs`` in the space. The
    env is left reset-able (the caller's training resets it again).
    """
    name = type(env).__name__
    for what in ("observation_space", "action_space"):
        if not isinstance(getattr(env, what, None), gym.spaces.Space):
            raise EnvMismatchError(
                f"{name}.{what} is {getattr(env, what, None)!r}; set a gymnasium.spaces space"
            )
    result = env.reset()
    if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict)):
        raise EnvMismatchError(
            f"{name}.reset() returned {type(result).__name__}, not (obs, info); {GYMNASIUM_API}"
        )
    _check_obs(env, result[0], "reset()")
    result = env.step(env.action_space.sample())
    if not (isinstance(result, tuple) and len(result) == 5):
        size = len(result) if isinstance(result, tuple) else type(result).__name__
        raise EnvMismatchError(f"{name}.step() returned {size} values; {GYMNASIUM_API}")
    _check_obs(env, result[0], "step()")
    env.reset()


def _check_obs(env: gym.Env, obs: object, where: str) -> None:
    if not env.observation_space.contains(obs):
        raise EnvMismatchError(
            f"{type(env).__name__}.{where} returned an observation outside its observation space "
            f"{env.observation_space}: {obs!r}"
        )
