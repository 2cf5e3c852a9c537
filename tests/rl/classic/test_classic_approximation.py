"""Gradient MC, n-step semi-gradient TD and semi-gradient Sarsa with linear features."""

import numpy as np
import pytest

from resonance_os.rl.algorithms.approximation import (
    ErrorTrace,
    gradient_monte_carlo,
    semi_gradient_sarsa,
    semi_gradient_td,
)
from resonance_os.rl.envs.gridworld import GridWorld
from resonance_os.rl.envs.mountain_car import MountainCar
from resonance_os.rl.envs.random_walk import RandomWalk, on_policy_distribution, true_values
from resonance_os.rl.errors import ConfigError
from resonance_os.rl.features import Fourier, StateAggregation, TileCoding


def _mc_fixed_point(n_states, max_jump, n_groups):
    """The mu-weighted group means of v: where gradient MC with state aggregation converges."""
    v, mu = true_values(n_states, max_jump), on_policy_distribution(n_states, max_jump)
    groups = np.arange(n_states) * n_groups // n_states
    return np.array(
        [np.sum(mu[groups == g] * v[groups == g]) / mu[groups == g].sum() for g in range(n_groups)]
    )


def test_gradient_mc_converges_to_its_fixed_point_fig_9_1():
    w = gradient_monte_carlo(RandomWalk(), StateAggregation(1000, 10), 2e-5, 100_000, seed=0)
    assert np.max(np.abs(w - _mc_fixed_point(1000, 100, 10))) < 0.04
    assert np.all(np.diff(w) > 0)  # a staircase


def test_td0_is_flatter_than_mc_fig_9_2_left():
    mc = gradient_monte_carlo(RandomWalk(), StateAggregation(1000, 10), 2e-5, 100_000, seed=1)
    td = semi_gradient_td(RandomWalk(), StateAggregation(1000, 10), 2e-4, 100_000, seed=1)
    assert 0.65 < -td[0] < 0.76 and 0.65 < td[-1] < 0.76
    assert -mc[0] > -td[0] + 0.05 and mc[-1] > td[-1] + 0.05


@pytest.mark.parametrize("n", [None, 1, 3])
def test_kernel_reproduces_the_gymnasium_env_exactly(n):
    """The numba kernel draws from the env's own generator: same seed, same weights and errors."""
    env = RandomWalk(30, 5)
    features = StateAggregation(30, 5)

    def learn(fast):
        trace = ErrorTrace.random_walk(env, every=50)
        if n is None:
            w = gradient_monte_carlo(env, features, 0.01, 300, seed=4, trace=trace, fast=fast)
        else:
            w = semi_gradient_td(env, features, 0.01, 300, n=n, seed=4, trace=trace, fast=fast)
        return w, trace.rms

    (w_kernel, rms_kernel), (w_env, rms_env) = learn(True), learn(False)
    assert np.allclose(w_kernel, w_env, atol=1e-12) and np.allclose(rms_kernel, rms_env, atol=1e-12)
    assert np.any(w_kernel != 0)


def test_nstep_td_with_n_beyond_the_episode_is_monte_carlo():
    features = StateAggregation(1000, 20)
    mc = gradient_monte_carlo(RandomWalk(), features, 1e-3, 200, seed=3)
    assert np.allclose(semi_gradient_td(RandomWalk(), features, 1e-3, 200, n=100_000, seed=3), mc)
    assert not np.allclose(semi_gradient_td(RandomWalk(), features, 1e-3, 200, n=4, seed=3), mc)


def test_same_seed_same_weights():
    features = Fourier(5, 0, 1000)
    a = gradient_monte_carlo(RandomWalk(), features, 5e-5, 100, seed=9)
    assert np.array_equal(a, gradient_monte_carlo(RandomWalk(), features, 5e-5, 100, seed=9))
    assert not np.array_equal(a, gradient_monte_carlo(RandomWalk(), features, 5e-5, 100, seed=10))


def test_error_trace_records_rms_and_on_policy_ve():
    env = RandomWalk()
    trace = ErrorTrace.random_walk(env, every=100)
    gradient_monte_carlo(env, Fourier(5, 0, 1000), 5e-5, 2000, seed=0, trace=trace)
    assert trace.episodes.tolist() == list(range(100, 2001, 100))
    assert trace.rms.shape == trace.root_ve.shape == (20,)
    assert trace.root_ve[0] > 0.25 and trace.root_ve[-1] < 0.12  # learning, measured as the book does
    plain = ErrorTrace(np.arange(1, 1001), true_values(), every=2000)
    gradient_monte_carlo(env, Fourier(5, 0, 1000), 5e-5, 2000, seed=0, trace=plain)
    assert plain.rms[-1] == pytest.approx(trace.rms[-1]) and np.isnan(plain.root_ve[-1])


def test_prediction_on_another_env_with_a_policy():
    """Evaluate 'always right' on a one-row grid: every state's value is gamma^(distance - 1)."""
    env = GridWorld([[0, 0, 0, 0, 1]], start=(0, 0))
    features = StateAggregation(5, 5, first_state=0)
    w = semi_gradient_td(env, features, 0.5, 200, gamma=0.9, seed=0, policy=lambda obs, rng: 1)
    assert np.allclose(w[:4], [0.9**3, 0.9**2, 0.9, 1.0], atol=1e-3)


def _car_coder():
    return TileCoding([-1.2, -0.07], [0.5, 0.07], n_tilings=8, tiles_per_dim=8, iht_size=4096, n_ints=1)


def test_sarsa_learns_mountain_car_fig_10_2():
    runs = [semi_gradient_sarsa(MountainCar(), _car_coder(), 0.5 / 8, 150, seed=s)[1] for s in range(5)]
    steps = np.mean(runs, axis=0)
    assert steps[0] > 700 and steps[-20:].mean() < 200
    coder = _car_coder()
    w, _ = semi_gradient_sarsa(MountainCar(), coder, 0.5 / 8, 50, seed=0)
    assert coder.table.count <= 4096 and np.count_nonzero(w) > 100


def test_sarsa_kernel_reproduces_the_stepped_env_exactly():
    w_env, steps_env = semi_gradient_sarsa(MountainCar(), _car_coder(), 0.5 / 8, 30, seed=1, fast=False)
    w_kernel, steps_kernel = semi_gradient_sarsa(MountainCar(), _car_coder(), 0.5 / 8, 30, seed=1)
    assert steps_env.tolist() == steps_kernel.tolist()
    assert np.allclose(w_env, w_kernel, atol=1e-12)
    assert steps_env[-5:].mean() < 0.5 * steps_env[:3].mean()


def test_sarsa_caps_episode_length():
    _, steps = semi_gradient_sarsa(MountainCar(), _car_coder(), 0.5 / 8, 3, max_steps=50, seed=0)
    assert steps.tolist() == [50, 50, 50]


def test_errors_name_the_problem():
    with pytest.raises(ConfigError, match="alpha"):
        gradient_monte_carlo(RandomWalk(), StateAggregation(1000, 10), 0.0, 10)
    with pytest.raises(ConfigError, match="n=0"):
        semi_gradient_td(RandomWalk(), StateAggregation(1000, 10), 0.1, 10, n=0)
    with pytest.raises(ConfigError, match="active"):
        semi_gradient_sarsa(MountainCar(), Fourier(3, [-1.2, -0.07], [0.5, 0.07]), 0.1, 10)
