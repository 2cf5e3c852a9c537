"""The grid world, random walk and Mountain Car environments."""

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import resonance_os.rl.envs  # noqa: F401  (registers the ids)
from resonance_os.rl.envs.gridworld import DEFAULT_MAP, GridWorld, format_grid
from resonance_os.rl.envs.mountain_car import MountainCar
from resonance_os.rl.envs.random_walk import (
    RandomWalk,
    on_policy_distribution,
    transition_matrix,
    true_values,
    walk_step,
)
from resonance_os.rl.errors import ConfigError

LEFT, RIGHT, UP, DOWN = range(4)


@pytest.mark.parametrize(
    "env_id", ["resonance_os/GridWorld-v0", "resonance_os/RandomWalk-v0", "resonance_os/MountainCar-v0"]
)
def test_registered_envs_pass_the_checker(env_id):
    env = gymnasium.make(env_id)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.spec.max_episode_steps is None  # no episode cap


def test_default_map_is_the_articles():
    env = GridWorld()
    assert env.grid.tolist() == [list(row) for row in DEFAULT_MAP]
    assert (env.height, env.width) == (5, 8)
    assert env.grid[1].tolist() == [-1, 0, 0, 0, -1, 0, 1, -1]
    obs, _ = env.reset(seed=0)
    assert env.position_of(obs) == (2, 2)


def test_actions_rewards_and_termination():
    env = GridWorld()
    env.reset()
    obs, reward, terminated, _, _ = env.step(LEFT)
    assert env.position_of(obs) == (1, 2) and reward == 0 and not terminated
    obs, reward, terminated, _, _ = env.step(LEFT)  # into the water border
    assert env.position_of(obs) == (0, 2) and reward == -1 and terminated
    env.reset()
    for action in (DOWN, RIGHT, RIGHT, RIGHT, RIGHT, UP, UP):
        obs, reward, terminated, _, _ = env.step(action)
    assert env.position_of(obs) == (6, 1) and reward == 1 and terminated  # the award


def test_custom_maps_from_rows_and_text_file(tmp_path):
    env = GridWorld([[0, 0, 1]], start=(0, 0))
    env.reset()
    env.step(RIGHT)
    _, reward, terminated, _, _ = env.step(RIGHT)
    assert reward == 1 and terminated
    _, reward, terminated, _, _ = GridWorld([[0, 1]], start=(0, 0)).step(LEFT)  # edge: stay put
    assert reward == 0 and not terminated

    path = tmp_path / "map.txt"
    path.write_text("# a corridor\n-1 -1 -1 -1\n-1 0 0 1\n-1 -1 -1 -1\n")
    assert GridWorld(path, start=(1, 1)).grid.shape == (3, 4)


def test_bad_maps_name_the_problem(tmp_path):
    with pytest.raises(ConfigError, match=r"\[5\]"):
        GridWorld([[0, 5]], start=(0, 0))
    with pytest.raises(ConfigError, match="start"):
        GridWorld(start=(0, 0))  # water
    with pytest.raises(ConfigError, match="equal length"):
        GridWorld([[0, 0], [0]], start=(0, 0))
    with pytest.raises(ConfigError, match="cannot read"):
        GridWorld(tmp_path / "missing.txt")


def test_render_text_and_image():
    env = GridWorld(render_mode="ansi")
    env.reset()
    text = env.render()
    assert text.splitlines()[2].split()[2] == "A" and "*" in text
    image = GridWorld(render_mode="rgb_array").render()
    assert image.ndim == 3 and image.shape[2] == 3 and image.dtype == np.uint8
    values = np.zeros((5, 8))
    values[2, 2] = 0.5
    policy = np.full((5, 8), RIGHT)
    assert "0.5→" in format_grid(env, values=values, policy=policy)
    env.set_overlay(values=values, policy=policy)
    assert "0.5→" in env.render()
    with pytest.raises(ConfigError, match="shape"):
        env.set_overlay(values=np.zeros(3))


def test_walk_step_terminates_past_either_edge():
    assert walk_step(5, -10, 1000) == (0, -1.0, True)
    assert walk_step(995, 10, 1000) == (1001, 1.0, True)
    assert walk_step(500, 37, 1000) == (537, 0.0, False)


def test_true_values_match_the_exact_reference():
    v = true_values()
    reference = {1: -0.92196, 50: -0.85037, 100: -0.75418, 500: -0.00094, 800: 0.56507, 950: 0.84868}
    for state, value in reference.items():
        assert v[state - 1] == pytest.approx(value, abs=1e-5)
    assert np.allclose(v, -v[::-1], atol=1e-12)  # antisymmetric
    assert np.all(np.diff(v) > 0)


def test_on_policy_distribution_and_episode_length():
    P, _ = transition_matrix()
    start = np.zeros(1000)
    start[499] = 1.0
    visits = np.linalg.solve(np.eye(1000) - P.T, start)
    assert visits.sum() == pytest.approx(83.15, abs=0.01)  # expected episode length
    assert on_policy_distribution()[499] == pytest.approx(0.0137, abs=1e-4)


def test_random_walk_env_matches_its_exact_episode_length():
    env = RandomWalk(n_states=50, max_jump=5)
    P, _ = transition_matrix(50, 5)
    start = np.zeros(50)
    start[24] = 1.0
    expected = np.linalg.solve(np.eye(50) - P.T, start).sum()
    env.reset(seed=0)
    lengths, rewards = [], []
    for _ in range(400):
        env.reset()
        steps, terminated = 0, False
        while not terminated:
            _, reward, terminated, _, _ = env.step(0)
            steps += 1
        lengths.append(steps)
        rewards.append(reward)
    assert np.mean(lengths) == pytest.approx(expected, rel=0.1)
    assert set(rewards) == {-1.0, 1.0}


def test_mountain_car_matches_gymnasium_dynamics():
    ours = MountainCar()
    ours.reset(seed=3)
    theirs = gymnasium.make("MountainCar-v0").unwrapped
    theirs.reset(seed=0)
    theirs.state = ours._state.copy()
    rng = np.random.default_rng(0)
    for _ in range(400):
        action = int(rng.integers(3))
        obs, reward, terminated, _, _ = ours.step(action)
        expected, their_reward, their_terminated, _, _ = theirs.step(action)
        assert np.allclose(obs, expected, atol=1e-6)
        assert reward == their_reward and terminated == their_terminated
        if terminated:
            break
