"""Space helpers: flat observation encoding and a JSON description used to check envs against checkpoints."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from resonance_os.rl.errors import ConfigError, EnvMismatchError


def env_and_spaces(
    env: gym.Env | str | None,
    observation_space: gym.Space | None,
    action_space: gym.Space | None,
    algorithm: str,
) -> tuple[gym.Env | None, gym.Space, gym.Space]:
    """The env (``gym.make`` of an id) and its spaces; without an env, the spaces given (to load a model
    for acting only). Raises ``ConfigError`` naming ``algorithm`` when there is neither."""
    env = gym.make(env) if isinstance(env, str) else env
    if env is not None:
        observation_space, action_space = env.observation_space, env.action_space
    if observation_space is None or action_space is None:
        raise ConfigError(f"{algorithm} needs an env, or both observation_space and action_space")
    return env, observation_space, action_space


def flat_obs_dim(space: gym.Space) -> int:
    """Length of the flat float vector an observation of ``space`` becomes (Box: its size, Discrete: one-hot n)."""
    if isinstance(space, gym.spaces.Box):
        return int(np.prod(space.shape))
    if isinstance(space, gym.spaces.Discrete):
        return int(space.n)
    raise ConfigError(f"observation space {space} is not supported; use a Box or a Discrete space")


def flatten_obs(space: gym.Space, obs: np.ndarray) -> np.ndarray:
    """A batch of observations ``(n, *space.shape)`` as float ``(n, flat_obs_dim)``; Discrete becomes one-hot."""
    if isinstance(space, gym.spaces.Discrete):
        return np.eye(int(space.n), dtype=np.float32)[np.asarray(obs, dtype=np.int64) - int(space.start)]
    return np.asarray(obs).reshape(len(obs), -1)


def as_observation(observation: Any, space: gym.Space) -> np.ndarray:
    """``observation`` (one, shape ``space.shape``, or a batch ``(n, *space.shape)``) as an array for
    ``predict``; ``EnvMismatchError`` names the fix for anything else, including the ``(obs, info)``
    pair ``env.reset()`` returns (as Stable-Baselines3 does)."""
    if isinstance(observation, tuple) and len(observation) == 2 and isinstance(observation[1], dict):
        raise EnvMismatchError(
            "predict() got the (obs, info) pair that env.reset() returns (the Gymnasium API); pass the "
            "observation alone: obs, info = env.reset(); action, _ = model.predict(obs)"
        )
    try:
        obs = np.asarray(observation)
    except ValueError as exc:
        raise EnvMismatchError(
            f"predict() cannot read the observation as an array ({exc}); pass one observation of shape "
            f"{space.shape} or a batch of them"
        ) from None
    if obs.dtype == object or (obs.shape != space.shape and obs.shape[1:] != space.shape):
        raise EnvMismatchError(
            f"observation of shape {obs.shape} does not fit the model's observation space {space}; pass one "
            f"observation of shape {space.shape} or a batch of shape (n, *{space.shape})"
        )
    return obs


def space_to_dict(space: gym.Space) -> dict[str, Any]:
    """JSON description of a Box or Discrete space."""
    if isinstance(space, gym.spaces.Box):
        return {
            "type": "Box",
            "shape": list(space.shape),
            "low": space.low.tolist(),
            "high": space.high.tolist(),
            "dtype": str(space.dtype),
        }
    if isinstance(space, gym.spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    raise ConfigError(f"space {space} is not supported; use a Box or a Discrete space")


def space_from_dict(data: dict[str, Any]) -> gym.Space:
    """Inverse of :func:`space_to_dict`."""
    if data.get("type") == "Box":
        return gym.spaces.Box(
            low=np.asarray(data["low"], dtype=data["dtype"]),
            high=np.asarray(data["high"], dtype=data["dtype"]),
            shape=tuple(data["shape"]),
            dtype=data["dtype"],
        )
    if data.get("type") == "Discrete":
        return gym.spaces.Discrete(int(data["n"]), start=int(data.get("start", 0)))
    raise ConfigError(f"cannot read the space description {data}")


def check_same_space(expected: gym.Space, actual: gym.Space, what: str) -> None:
    """Raise ``EnvMismatchError`` unless ``actual`` has the type, shape and bounds of ``expected``."""
    same = type(expected) is type(actual)
    if same and isinstance(expected, gym.spaces.Box):
        same = (
            expected.shape == actual.shape
            and np.array_equal(expected.low, actual.low)
            and np.array_equal(expected.high, actual.high)
        )
    elif same and isinstance(expected, gym.spaces.Discrete):
        same = expected.n == actual.n and expected.start == actual.start
    if not same:
        raise EnvMismatchError(
            f"the env's {what} space {actual} does not match the model's {expected}; pass an env with the "
            "spaces the model was trained on"
        )
