"""Value iteration, Q-learning, SARSA and Expected SARSA on the grid world and other finite envs."""

import gymnasium
import numpy as np
import pytest

from resonance_os.rl.algorithms.tabular import (
    action_values,
    expected_sarsa,
    greedy_policy,
    greedy_rollout,
    q_learning,
    sarsa,
    value_iteration,
)
from resonance_os.rl.envs.gridworld import GridWorld
from resonance_os.rl.envs.mountain_car import MountainCar
from resonance_os.rl.envs.random_walk import RandomWalk
from resonance_os.rl.errors import ConfigError, EnvMismatchError

SHORTEST = 7  # steps from (2, 2) to the award on the article's map


def test_value_iteration_on_the_grid_world():
    env = GridWorld()
    values = value_iteration(env, gamma=0.9)
    assert values.shape == (5, 8)
    assert values[2, 2] == pytest.approx(0.9**6)
    assert values[1, 5] == pytest.approx(1.0) and values[2, 6] == pytest.approx(1.0)
    assert np.all(values[env.grid != 0] == 0)  # water and award keep 0
    path = greedy_rollout(env, action_values(env, values))
    assert len(path) - 1 == SHORTEST


@pytest.mark.parametrize("seed", range(3))
def test_article_q_learning_finds_the_shortest_path_in_1000_steps(seed):
    env = GridWorld()
    q = q_learning(env, 1000, alpha=0.005, seed=seed, sweep_actions=True)
    assert q.shape == (5, 8, 4)
    path = greedy_rollout(env, q)
    assert len(path) - 1 == SHORTEST and env.position_of(path[-1]) == (6, 1)


def test_untrained_agent_does_not_find_the_path():
    env = GridWorld()
    assert len(greedy_rollout(env, q_learning(env, 0, seed=0), max_steps=50)) - 1 != SHORTEST


@pytest.mark.parametrize(
    ("method", "alpha", "steps"), [(q_learning, 0.5, 3000), (sarsa, 0.1, 5000), (expected_sarsa, 0.5, 3000)]
)
def test_sampled_td_control_learns_the_shortest_path(method, alpha, steps):
    env = GridWorld()
    q = method(env, steps, alpha=alpha, seed=0)
    assert len(greedy_rollout(env, q, max_steps=50)) - 1 == SHORTEST


def test_epsilon_decays_as_in_the_article_and_callback_sees_every_step():
    seen = []
    q_learning(GridWorld(), 50, seed=0, callback=lambda step, q, r, over: seen.append((step, q.shape)))
    assert [s for s, _ in seen] == list(range(50)) and seen[0][1] == (5, 8, 4)


def test_same_seed_same_table():
    a = q_learning(GridWorld(), 300, seed=7)
    b = q_learning(GridWorld(), 300, seed=7)
    assert np.array_equal(a, b) and not np.array_equal(a, q_learning(GridWorld(), 300, seed=8))


def test_works_on_any_finite_gymnasium_env():
    env = gymnasium.make("CliffWalking-v1")
    values = value_iteration(env, gamma=1.0)
    assert values.shape == (48,)
    assert values[36] == pytest.approx(-13.0)  # 13 steps along the cliff edge
    q = q_learning(env, 5000, alpha=0.5, gamma=1.0, seed=0)
    assert q.shape == (48, 4)
    assert greedy_policy(q).shape == (48,)
    assert len(greedy_rollout(env, q, max_steps=100)) - 1 == 13


def test_errors_name_the_problem():
    with pytest.raises(EnvMismatchError, match="Discrete"):
        q_learning(MountainCar(), 10)
    with pytest.raises(EnvMismatchError, match="model"):
        value_iteration(RandomWalk())
    with pytest.raises(ConfigError, match="alpha"):
        sarsa(GridWorld(), 10, alpha=0.0)
