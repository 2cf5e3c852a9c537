"""Linear value-function approximation: gradient Monte Carlo, n-step semi-gradient TD and episodic
semi-gradient Sarsa (Sutton & Barto, chapters 9 and 10).

The value estimate is linear, ``v_hat(s, w) = w @ x(s)`` with ``x`` a feature map of
``resonance_os.rl.features``, so ``grad v_hat = x(s)``. The updates, for an episode S_0 .. S_T:

    gradient MC          w += alpha [G_t - v_hat(S_t)] x(S_t)                        (G_t: the return)
    n-step TD            w += alpha [G_{t:t+n} - v_hat(S_t)] x(S_t),
                         G_{t:t+n} = R_{t+1} + ... + gamma^{n-1} R_{t+n} + gamma^n v_hat(S_{t+n})
    semi-gradient Sarsa  w += alpha [R + gamma q_hat(S', A') - q_hat(S, A)] x(S, A)  (target R at the end)

For prediction the policy does not depend on ``w``, so applying an episode's updates in time order
once it has ended gives exactly the online algorithm; ``nstep_td_episode`` does that, and gradient
MC is the case n >= T. On the ``RandomWalk`` and ``MountainCar`` envs the learners simulate the same
process (the env's own transition function) inside numba kernels, which is what makes the book's
hundreds of thousands of episodes cheap; ``fast=False`` steps the gymnasium env instead, which is
also what happens on any other env.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

import gymnasium
import numpy as np
from numba import njit

from resonance_os.rl.envs.mountain_car import START_HIGH, START_LOW, MountainCar, car_step
from resonance_os.rl.envs.random_walk import RandomWalk, on_policy_distribution, true_values, walk_step
from resonance_os.rl.errors import ConfigError, EnvMismatchError
from resonance_os.rl.features import FeatureMap, TileCoding, sparse_table, tile_indices

Policy = Callable[[object, np.random.Generator], int]
"""A policy to evaluate: ``policy(observation, rng) -> action``; default uniform random."""


@dataclass
class ErrorTrace:
    """Records the value error of the estimate every ``every`` episodes while learning.

    Args:
        states: the observations to evaluate, shape ``(m,)``.
        true_values: their true values ``v_pi``, shape ``(m,)``.
        on_policy: the on-policy distribution mu over ``states`` (sums to 1); ``None`` skips root VE.
        every: record after every ``every``-th episode.

    After learning: ``episodes`` (the episode counts recorded at), ``rms`` (the unweighted root mean
    squared error over ``states``) and ``root_ve`` (``sqrt(sum mu (v - v_hat)^2)``, the book's
    root VE; NaN without ``on_policy``), each of shape ``(episodes // every,)``.
    """

    states: np.ndarray
    true_values: np.ndarray
    on_policy: np.ndarray | None = None
    every: int = 1
    episodes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    rms: np.ndarray = field(default_factory=lambda: np.zeros(0))
    root_ve: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @classmethod
    def random_walk(cls, env: gymnasium.Env, every: int = 1) -> ErrorTrace:
        """A trace against the exact true values and on-policy distribution of a ``RandomWalk``."""
        walk = env.unwrapped
        if not isinstance(walk, RandomWalk):
            raise EnvMismatchError(
                f"ErrorTrace.random_walk needs a RandomWalk env, got {type(walk).__name__}"
            )
        return cls(
            states=np.arange(1, walk.n_states + 1),
            true_values=true_values(walk.n_states, walk.max_jump),
            on_policy=on_policy_distribution(walk.n_states, walk.max_jump),
            every=every,
        )

    def _weights(self) -> tuple[np.ndarray, np.ndarray]:
        m = len(self.states)
        if self.true_values.shape != (m,) or self.every < 1:
            raise ConfigError(f"ErrorTrace needs true_values of shape ({m},) and every >= 1")
        uniform = np.full(m, 1.0 / m)
        mu = np.full(m, np.nan) if self.on_policy is None else np.asarray(self.on_policy, dtype=np.float64)
        return uniform, mu


# ----------------------------------------------------------------------------------------------
# Shared numba pieces


@njit(cache=True)
def _value(w: np.ndarray, idx: np.ndarray, val: np.ndarray, row: int) -> float:
    total = 0.0
    for j in range(idx.shape[1]):
        total += val[row, j] * w[idx[row, j]]
    return total


@njit(cache=True)
def nstep_td_episode(
    w: np.ndarray,
    idx: np.ndarray,
    val: np.ndarray,
    rows: np.ndarray,
    rewards: np.ndarray,
    length: int,
    n: int,
    alpha: float,
    gamma: float,
    last_row: int,
) -> None:
    """Apply the n-step semi-gradient TD updates of one finished episode to ``w`` in place.

    ``rows[t]`` is the feature-table row of S_t (t < ``length`` = T) and ``rewards[t]`` is R_t
    (``rewards[0]`` unused). ``n <= 0`` means Monte Carlo (no bootstrapping). ``last_row`` is the
    row of S_T when the episode was cut off by a time limit (its value is bootstrapped), else -1.
    """
    for tau in range(length):
        end = length if n <= 0 else min(tau + n, length)
        ret, discount = 0.0, 1.0
        for k in range(tau + 1, end + 1):
            ret += discount * rewards[k]
            discount *= gamma
        if end < length:
            ret += discount * _value(w, idx, val, rows[end])
        elif last_row >= 0:
            ret += discount * _value(w, idx, val, last_row)
        row = rows[tau]
        delta = alpha * (ret - _value(w, idx, val, row))
        for j in range(idx.shape[1]):
            w[idx[row, j]] += delta * val[row, j]


@njit(cache=True)
def _errors(
    w: np.ndarray, idx: np.ndarray, val: np.ndarray, true: np.ndarray, uniform: np.ndarray, mu: np.ndarray
) -> tuple[float, float]:
    """(unweighted RMS, root VE) of the rows of a trace table against ``true``."""
    mse, ve = 0.0, 0.0
    for i in range(true.shape[0]):
        err = (_value(w, idx, val, i) - true[i]) ** 2
        mse += uniform[i] * err
        ve += mu[i] * err
    return np.sqrt(mse), np.sqrt(ve)


@njit(cache=True)
def _walk_kernel(
    w: np.ndarray,
    idx: np.ndarray,
    val: np.ndarray,
    n_states: int,
    max_jump: int,
    episodes: int,
    n: int,
    alpha: float,
    gamma: float,
    rng: np.random.Generator,
    trace_idx: np.ndarray,
    trace_val: np.ndarray,
    trace_true: np.ndarray,
    uniform: np.ndarray,
    mu: np.ndarray,
    every: int,
    rms_out: np.ndarray,
    ve_out: np.ndarray,
) -> None:
    """Learn on simulated random-walk episodes; feature rows are indexed by state (0..n_states+1).

    Draws from ``rng`` exactly as ``RandomWalk.step`` draws from ``env.np_random``, so given the
    env's generator it reproduces, number for number, the episodes the env would produce.
    """
    rows = np.empty(1024, dtype=np.int64)
    rewards = np.zeros(1025)
    for episode in range(episodes):
        state, t, terminated = n_states // 2, 0, False
        while not terminated:
            if t + 1 >= rows.shape[0]:
                rows = np.concatenate((rows, np.empty_like(rows)))
                rewards = np.concatenate((rewards, np.zeros_like(rewards)))
            rows[t] = state
            size = rng.integers(1, max_jump + 1)
            jump = size if rng.random() < 0.5 else -size
            state, reward, terminated = walk_step(state, jump, n_states)
            t += 1
            rewards[t] = reward
        nstep_td_episode(w, idx, val, rows, rewards, t, n, alpha, gamma, -1)
        if every > 0 and (episode + 1) % every == 0:
            k = (episode + 1) // every - 1
            rms_out[k], ve_out[k] = _errors(w, trace_idx, trace_val, trace_true, uniform, mu)


# ----------------------------------------------------------------------------------------------
# Prediction


_TABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _table(features: FeatureMap, states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``sparse_table(features, states)``, remembered per feature map (they never change meaning),
    so that many short runs (Fig 9.2's 20,000) do not rebuild it each time."""
    states = np.asarray(states)
    per_features = _TABLES.setdefault(features, {})
    key = (states.dtype.str, states.shape, states.tobytes())
    if key not in per_features:
        per_features[key] = sparse_table(features, states)
    return per_features[key]


def _check_common(alpha: float, episodes: int, gamma: float) -> None:
    if alpha <= 0 or episodes < 0 or not 0.0 <= gamma <= 1.0:
        raise ConfigError(
            f"need alpha > 0, episodes >= 0 and gamma in [0, 1]; got alpha={alpha}, episodes={episodes}, "
            f"gamma={gamma}"
        )


def _fast_env(env: gymnasium.Env, kind: type) -> bool:
    """Whether ``env`` is exactly our ``kind`` env (no time limit), so a kernel may simulate it."""
    spec = getattr(env, "spec", None)
    return isinstance(env.unwrapped, kind) and (spec is None or spec.max_episode_steps is None)


def _predict(
    env: gymnasium.Env,
    features: FeatureMap,
    alpha: float,
    episodes: int,
    n: int,
    gamma: float,
    seed: int | None,
    trace: ErrorTrace | None,
    policy: Policy | None,
    fast: bool,
) -> np.ndarray:
    _check_common(alpha, episodes, gamma)
    w = np.zeros(features.n_features)
    records = episodes // trace.every if trace is not None else 0
    rms, ve = np.zeros(records), np.zeros(records)
    if trace is not None:
        uniform, mu = trace._weights()
        trace_idx, trace_val = _table(features, trace.states)
    else:
        uniform = mu = np.zeros(0)
        trace_idx, trace_val = np.zeros((0, 1), dtype=np.int64), np.zeros((0, 1))
    true = np.zeros(0) if trace is None else np.asarray(trace.true_values, dtype=np.float64)
    every = 0 if trace is None else trace.every
    obs, _ = env.reset(seed=seed)
    if fast and policy is None and _fast_env(env, RandomWalk):
        walk = env.unwrapped
        idx, val = _table(features, np.arange(1, walk.n_states + 1))
        pad = ((1, 1), (0, 0))  # terminal rows 0 and n_states + 1 are never read
        idx, val = np.pad(idx, pad), np.pad(val, pad)
        _walk_kernel(
            w, idx, val, walk.n_states, walk.max_jump, episodes, n, alpha, gamma, walk.np_random,
            trace_idx, trace_val, true, uniform, mu, every, rms, ve,
        )  # fmt: skip
    else:
        rng = np.random.default_rng(seed)
        env.action_space.seed(seed)
        for episode in range(episodes):
            if episode > 0:
                obs, _ = env.reset()
            states, rewards = [obs], [0.0]
            while True:
                action = env.action_space.sample() if policy is None else policy(obs, rng)
                obs, reward, terminated, truncated, _ = env.step(action)
                rewards.append(float(reward))
                if terminated or truncated:
                    break
                states.append(obs)
            length = len(rewards) - 1
            if not terminated:
                states.append(obs)
            idx, val = sparse_table(features, states)
            last_row = -1 if terminated else length
            rows = np.arange(len(states), dtype=np.int64)
            nstep_td_episode(w, idx, val, rows, np.asarray(rewards), length, n, alpha, gamma, last_row)
            if every and (episode + 1) % every == 0:
                k = (episode + 1) // every - 1
                rms[k], ve[k] = _errors(w, trace_idx, trace_val, true, uniform, mu)
    if trace is not None:
        trace.episodes = np.arange(1, records + 1) * trace.every
        trace.rms, trace.root_ve = rms, ve
    return w


def gradient_monte_carlo(
    env: gymnasium.Env,
    features: FeatureMap,
    alpha: float,
    episodes: int,
    seed: int | None = None,
    gamma: float = 1.0,
    trace: ErrorTrace | None = None,
    policy: Policy | None = None,
    fast: bool = True,
) -> np.ndarray:
    """Gradient Monte Carlo prediction (book section 9.3); returns ``w`` of shape ``(n_features,)``.

    Args:
        env: an episodic env whose observations ``features`` accepts (terminal ones are never passed).
        features: a feature map from ``resonance_os.rl.features``.
        alpha: step size (the book uses 2e-5 for Fig 9.1).
        episodes: number of episodes.
        seed: seeds the env (``env.reset(seed=seed)``) and the policy.
        trace: records the value error while learning (see ``ErrorTrace``).
        policy: the policy to evaluate; default uniform random over the action space.
        fast: simulate a ``RandomWalk`` inside a numba kernel (drawing from the env's own generator,
            so the result is the same as stepping the env, only faster).
    """
    return _predict(env, features, alpha, episodes, 0, gamma, seed, trace, policy, fast)


def semi_gradient_td(
    env: gymnasium.Env,
    features: FeatureMap,
    alpha: float,
    episodes: int,
    n: int = 1,
    seed: int | None = None,
    gamma: float = 1.0,
    trace: ErrorTrace | None = None,
    policy: Policy | None = None,
    fast: bool = True,
) -> np.ndarray:
    """n-step semi-gradient TD prediction (sections 9.3 and 7.1; ``n=1`` is TD(0)); returns ``w``.

    Arguments as for ``gradient_monte_carlo``, plus ``n >= 1``, the number of rewards before bootstrapping.
    """
    if n < 1:
        raise ConfigError(f"n={n} must be >= 1 (use gradient_monte_carlo for no bootstrapping)")
    return _predict(env, features, alpha, episodes, n, gamma, seed, trace, policy, fast)


# ----------------------------------------------------------------------------------------------
# Control: episodic semi-gradient Sarsa


@njit(cache=True)
def _choose(q: np.ndarray, epsilon: float, rng: np.random.Generator) -> int:
    """Epsilon-greedy with random tie-breaking among the greedy actions."""
    if epsilon > 0.0 and rng.random() < epsilon:
        return rng.integers(0, q.shape[0])
    best = q.max()
    ties = 0
    for a in range(q.shape[0]):
        if q[a] == best:
            ties += 1
    pick = rng.integers(0, ties)
    for a in range(q.shape[0]):
        if q[a] == best:
            if pick == 0:
                return a
            pick -= 1
    return 0


@njit(cache=True)
def _q_values(w: np.ndarray, active: np.ndarray, out: np.ndarray) -> None:
    for a in range(active.shape[0]):
        total = 0.0
        for i in active[a]:
            total += w[i]
        out[a] = total


@njit(cache=True)
def _add(w: np.ndarray, active: np.ndarray, delta: float) -> None:
    for i in active:
        w[i] += delta


@njit(cache=True)
def _car_sarsa_kernel(
    w: np.ndarray,
    low: np.ndarray,
    scale: np.ndarray,
    n_tilings: int,
    keys: np.ndarray,
    slots: np.ndarray,
    counter: np.ndarray,
    size: int,
    alpha: float,
    gamma: float,
    epsilon: float,
    max_steps: int,
    first_position: float,
    starts: np.random.Generator,
    rng: np.random.Generator,
    steps_out: np.ndarray,
) -> None:
    """Semi-gradient Sarsa on simulated Mountain Car episodes with tile coding (action as a coordinate).

    Episode starts are drawn from ``starts`` as ``MountainCar.reset`` draws them from the env's
    generator (the first one is ``first_position``); ``rng`` breaks ties and explores.
    """
    n_actions = 3
    active, next_active = (
        np.empty((n_actions, n_tilings), np.int64),
        np.empty((n_actions, n_tilings), np.int64),
    )
    q, next_q = np.empty(n_actions), np.empty(n_actions)
    scaled, ints, coords = np.empty(2), np.empty(1, np.int64), np.empty(keys.shape[1], np.int64)

    def encode(position, velocity, out):  # active tiles of every action at (position, velocity)
        scaled[0] = (position - low[0]) * scale[0]
        scaled[1] = (velocity - low[1]) * scale[1]
        for a in range(n_actions):
            ints[0] = a
            tile_indices(scaled, ints, n_tilings, keys, slots, counter, size, coords, out[a])

    for episode in range(steps_out.shape[0]):
        position = first_position if episode == 0 else starts.uniform(START_LOW, START_HIGH)
        velocity = 0.0
        encode(position, velocity, active)
        _q_values(w, active, q)
        action = _choose(q, epsilon, rng)
        steps = max_steps
        for t in range(max_steps):
            position, velocity, terminated = car_step(position, velocity, action)
            target = -1.0
            if not terminated:
                encode(position, velocity, next_active)
                _q_values(w, next_active, next_q)
                next_action = _choose(next_q, epsilon, rng)
                target += gamma * next_q[next_action]
            _q_values(w, active, q)
            _add(w, active[action], alpha * (target - q[action]))
            if terminated:
                steps = t + 1
                break
            active, next_active = next_active, active
            action = next_action
        steps_out[episode] = steps


def semi_gradient_sarsa(
    env: gymnasium.Env,
    features: TileCoding,
    alpha: float,
    episodes: int,
    epsilon: float = 0.0,
    gamma: float = 1.0,
    max_steps: int = 10_000,
    seed: int | None = None,
    fast: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Episodic semi-gradient one-step Sarsa with binary features of (state, action) (book section 10.1).

    Args:
        env: an env with a ``Discrete`` action space (observations as ``features`` expects).
        features: binary features with ``active(state, action)`` (``TileCoding(..., n_ints=1)``).
        alpha: step size per active feature (the book's "0.5/8" for 8 tilings is ``alpha=0.5 / 8``).
        episodes: number of episodes.
        epsilon: exploration rate; 0 relies on the optimism of ``w = 0`` (greedy ties broken at random).
        max_steps: cap on an episode's length (a greedy agent can dither at the valley bottom).
        seed: seeds the env (``env.reset(seed=seed)``) and the tie-breaking / exploration.
        fast: simulate our ``MountainCar`` inside a numba kernel (same draws as stepping the env).

    Returns ``(w, steps)``: the weights ``(n_features,)`` and each episode's length ``(episodes,)``.
    """
    _check_common(alpha, episodes, gamma)
    if not hasattr(features, "active") or getattr(features, "n_ints", 1) != 1:
        raise ConfigError(
            "semi_gradient_sarsa needs binary features with active(state, action), e.g. TileCoding(..., n_ints=1)"
        )
    if not isinstance(env.action_space, gymnasium.spaces.Discrete):
        raise EnvMismatchError(f"semi_gradient_sarsa needs a Discrete action space, got {env.action_space}")
    n_actions = int(env.action_space.n)
    w = np.zeros(features.n_features)
    steps = np.zeros(episodes, dtype=np.int64)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    if (
        fast
        and _fast_env(env, MountainCar)
        and isinstance(features, TileCoding)
        and features.low.shape == (2,)
    ):
        table = features.table
        _car_sarsa_kernel(
            w, features.low, features.scale, features.n_tilings, table.keys, table.slots, table.counter,
            table.size, alpha, gamma, epsilon, max_steps, float(obs[0]), env.unwrapped.np_random, rng, steps,
        )  # fmt: skip
        return w, steps

    # Stepping the env, with the kernel's own pieces (q values, choice, update) so both agree.
    def encode(observation: object) -> np.ndarray:
        return np.stack([features.active(observation, a) for a in range(n_actions)])

    q, next_q = np.zeros(n_actions), np.zeros(n_actions)
    for episode in range(episodes):
        if episode > 0:
            obs, _ = env.reset()
        active = encode(obs)
        _q_values(w, active, q)
        action = _choose(q, epsilon, rng)
        steps[episode] = max_steps
        for t in range(max_steps):
            obs, reward, terminated, truncated, _ = env.step(action)
            target = float(reward)
            if not terminated:
                next_active = encode(obs)
                _q_values(w, next_active, next_q)
                next_action = _choose(next_q, epsilon, rng)
                target += gamma * next_q[next_action]
            _q_values(w, active, q)
            _add(w, active[action], alpha * (target - q[action]))
            if terminated or truncated:
                steps[episode] = t + 1
                break
            active, action = next_active, next_action
    return w, steps
