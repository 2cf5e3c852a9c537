"""Tabular methods: value iteration, Q-learning, SARSA and Expected SARSA (Sutton & Barto ch. 4 and 6).

They work on any gymnasium env with ``Discrete`` observation and action spaces. Tables are indexed
by observation; their shape follows one rule: if the (unwrapped) env has an attribute
``table_shape`` (``GridWorld`` sets ``(height, width)``), value tables have that shape and Q tables
that shape plus ``(n_actions,)``; otherwise they are ``(n_states,)`` and ``(n_states, n_actions)``.
So on the grid world ``V[y, x]`` and ``Q[y, x, a]`` read like the map.

Value iteration needs the env's model in gymnasium's toy-text format, ``env.unwrapped.P[s][a] =
[(prob, next_state, reward, terminated), ...]`` (``GridWorld``, ``FrozenLake``, ``CliffWalking`` and
``Taxi`` have it). The learners only sample the env. Their exploration is the spec article's: with
probability ``epsilon`` a random action, else the greedy one with ties broken at random, and after
every choice ``epsilon <- max(epsilon_min, epsilon - epsilon_decay)``.
"""

from __future__ import annotations

from collections.abc import Callable

import gymnasium
import numpy as np
from gymnasium import spaces

from resonance_os.rl.errors import ConfigError, EnvMismatchError

StepCallback = Callable[[int, np.ndarray, float, bool], None]
"""Called after each learning step with (step index, Q table, reward, episode over)."""


def _sizes(env: gymnasium.Env) -> tuple[int, int]:
    if not isinstance(env.observation_space, spaces.Discrete) or not isinstance(
        env.action_space, spaces.Discrete
    ):
        raise EnvMismatchError(
            f"tabular methods need Discrete observation and action spaces, got {env.observation_space} "
            f"and {env.action_space}; discretise the env or use algorithms.approximation"
        )
    return int(env.observation_space.n), int(env.action_space.n)


def table_shape(env: gymnasium.Env) -> tuple[int, ...]:
    """Shape of a value table for ``env`` (see the module docstring)."""
    n_states, _ = _sizes(env)
    shape = tuple(getattr(env.unwrapped, "table_shape", (n_states,)))
    if int(np.prod(shape)) != n_states:
        raise EnvMismatchError(f"env.table_shape {shape} does not hold its {n_states} observations")
    return shape


def _model(env: gymnasium.Env) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The toy-text model as padded arrays ``(next, prob, reward, done)``, each ``(S, A, K)``."""
    n_states, n_actions = _sizes(env)
    model = getattr(env.unwrapped, "P", None)
    if model is None:
        raise EnvMismatchError(
            f"{type(env.unwrapped).__name__} has no model env.unwrapped.P[s][a] = [(prob, next, reward, "
            "done)]; value iteration needs one (use q_learning or sarsa, which only sample the env)"
        )
    k = max(len(model[s][a]) for s in range(n_states) for a in range(n_actions))
    nxt = np.zeros((n_states, n_actions, k), dtype=np.int64)
    prob, reward, done = np.zeros((3, n_states, n_actions, k))
    for s in range(n_states):
        for a in range(n_actions):
            for j, (p, s2, r, d) in enumerate(model[s][a]):
                nxt[s, a, j], prob[s, a, j], reward[s, a, j], done[s, a, j] = s2, p, r, d
    return nxt, prob, reward, done


def value_iteration(
    env: gymnasium.Env, gamma: float = 0.9, theta: float = 1e-10, max_sweeps: int = 100_000
) -> np.ndarray:
    """Optimal state values by synchronous sweeps ``V <- max_a sum p (r + gamma V(s') [not done])``.

    Each sweep computes all new values from the old ones, then replaces them at once (the article's
    NextValue/Step). Stops when no value changes by more than ``theta``. Returns ``V`` shaped by
    ``table_shape(env)``; terminal states keep value 0.
    """
    if not 0.0 <= gamma <= 1.0:
        raise ConfigError(f"gamma={gamma} must lie in [0, 1]")
    nxt, prob, reward, done = _model(env)
    values = np.zeros(nxt.shape[0])
    for _ in range(max_sweeps):
        q = np.sum(prob * (reward + gamma * values[nxt] * (1.0 - done)), axis=2)
        new_values = q.max(axis=1)
        change = np.max(np.abs(new_values - values))
        values = new_values
        if change <= theta:
            break
    return values.reshape(table_shape(env))


def action_values(env: gymnasium.Env, values: np.ndarray, gamma: float = 0.9) -> np.ndarray:
    """One-step look-ahead ``Q(s,a) = sum p (r + gamma V(s') [not done])`` through the env's model.

    ``greedy_policy(action_values(env, V))`` is the greedy policy of a value table. Returns Q shaped
    ``table_shape(env) + (n_actions,)``.
    """
    nxt, prob, reward, done = _model(env)
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    q = np.sum(prob * (reward + gamma * flat[nxt] * (1.0 - done)), axis=2)
    return q.reshape(table_shape(env) + (q.shape[1],))


def greedy_policy(q: np.ndarray) -> np.ndarray:
    """Greedy action per state, ``argmax`` over the last axis of ``q`` (first action on ties)."""
    return np.argmax(q, axis=-1)


def greedy_rollout(
    env: gymnasium.Env, q: np.ndarray, max_steps: int = 1000, seed: int | None = None
) -> list[int]:
    """Observations visited by the greedy policy of ``q`` from ``env.reset(seed=seed)``, start included."""
    n_states, n_actions = _sizes(env)
    policy = greedy_policy(q.reshape(n_states, n_actions))
    obs, _ = env.reset(seed=seed)
    path = [int(obs)]
    for _ in range(max_steps):
        obs, _, terminated, truncated, _ = env.step(int(policy[obs]))
        path.append(int(obs))
        if terminated or truncated:
            break
    return path


def _greedy(row: np.ndarray, rng: np.random.Generator) -> int:
    return int(rng.choice(np.flatnonzero(row == row.max())))


def _td_control(
    env: gymnasium.Env,
    steps: int,
    target: str,
    alpha: float,
    gamma: float,
    epsilon: float,
    epsilon_min: float,
    epsilon_decay: float,
    seed: int | None,
    sweep_actions: bool,
    callback: StepCallback | None,
) -> np.ndarray:
    """One loop for the three one-step TD control methods; ``target`` picks the bootstrap term."""
    if steps < 0 or not 0.0 < alpha <= 1.0 or not 0.0 <= gamma <= 1.0:
        raise ConfigError(
            f"need steps >= 0, alpha in (0, 1] and gamma in [0, 1]; got {steps}, {alpha}, {gamma}"
        )
    if not 0.0 <= epsilon_min <= 1.0 or epsilon_decay < 0:
        raise ConfigError(
            f"need epsilon_min in [0, 1] and epsilon_decay >= 0; got {epsilon_min}, {epsilon_decay}"
        )
    n_states, n_actions = _sizes(env)
    model = _model(env) if sweep_actions else None
    rng = np.random.default_rng(seed)
    q = np.zeros((n_states, n_actions))
    shaped = q.reshape(table_shape(env) + (n_actions,))
    eps = float(epsilon)

    def choose(state: int) -> int:
        nonlocal eps
        action = _greedy(q[state], rng) if rng.random() > eps else int(rng.integers(n_actions))
        eps = max(epsilon_min, eps - epsilon_decay)
        return action

    def bootstrap(state: int, action: int) -> float:
        row = q[state]
        if target == "sarsa":
            return float(row[action])
        if target == "expected_sarsa":
            best = row == row.max()
            pi = eps / n_actions + (1.0 - eps) * best / best.sum()
            return float(pi @ row)
        return float(row.max())

    obs, _ = env.reset(seed=seed)
    action = choose(obs)
    for step in range(steps):
        if model is not None:  # the article's variant: back up every action of this state from the model
            nxt, prob, reward, done = model
            best_next = q.max(axis=1)[nxt[obs]]
            q[obs] += alpha * (
                np.sum(prob[obs] * (reward[obs] + gamma * best_next * (1.0 - done[obs])), 1) - q[obs]
            )
        next_obs, r, terminated, truncated, _ = env.step(action)
        next_action = choose(next_obs)
        if model is None:
            future = 0.0 if terminated else bootstrap(next_obs, next_action)
            q[obs, action] += alpha * (r + gamma * future - q[obs, action])
        over = terminated or truncated
        if callback is not None:
            callback(step, shaped, float(r), over)
        if over:
            next_obs, _ = env.reset()
            next_action = choose(next_obs)
        obs, action = next_obs, next_action
    return shaped


def q_learning(
    env: gymnasium.Env,
    steps: int,
    alpha: float = 0.1,
    gamma: float = 0.9,
    epsilon: float = 1.0,
    epsilon_min: float = 0.05,
    epsilon_decay: float = 0.005,
    seed: int | None = None,
    sweep_actions: bool = False,
    callback: StepCallback | None = None,
) -> np.ndarray:
    """Q-learning: ``Q(s,a) += alpha [r + gamma max_a' Q(s',a') - Q(s,a)]`` over ``steps`` env steps.

    With ``sweep_actions=True`` every step instead backs up all actions of the current state through
    the env's model (the spec article's variant, which it runs with ``alpha=0.005``); the agent still
    moves by its epsilon-greedy choice. Returns Q shaped by ``table_shape(env) + (n_actions,)``.
    """
    return _td_control(
        env,
        steps,
        "q_learning",
        alpha,
        gamma,
        epsilon,
        epsilon_min,
        epsilon_decay,
        seed,
        sweep_actions,
        callback,
    )


def sarsa(
    env: gymnasium.Env,
    steps: int,
    alpha: float = 0.1,
    gamma: float = 0.9,
    epsilon: float = 1.0,
    epsilon_min: float = 0.05,
    epsilon_decay: float = 0.005,
    seed: int | None = None,
    callback: StepCallback | None = None,
) -> np.ndarray:
    """SARSA (on-policy): the target is ``r + gamma Q(s', a')`` with ``a'`` the action taken next."""
    return _td_control(
        env, steps, "sarsa", alpha, gamma, epsilon, epsilon_min, epsilon_decay, seed, False, callback
    )


def expected_sarsa(
    env: gymnasium.Env,
    steps: int,
    alpha: float = 0.1,
    gamma: float = 0.9,
    epsilon: float = 1.0,
    epsilon_min: float = 0.05,
    epsilon_decay: float = 0.005,
    seed: int | None = None,
    callback: StepCallback | None = None,
) -> np.ndarray:
    """Expected SARSA: the target is ``r + gamma sum_a' pi(a'|s') Q(s', a')`` under the epsilon-greedy pi."""
    return _td_control(
        env, steps, "expected_sarsa", alpha, gamma, epsilon, epsilon_min, epsilon_decay, seed, False, callback
    )
