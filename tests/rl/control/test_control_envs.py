"""The ODE control environments: gymnasium API, seeding, start states, divergence, known dynamics."""

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import resonance_os.rl.envs  # noqa: F401
from resonance_os.rl.envs.ode import LorenzEnv, MeanFieldEnv, MGMEnv, VanDerPolEnv, rollout
from resonance_os.rl.errors import ConfigError

ENV_IDS = [
    "resonance_os/MGM-v0",
    "resonance_os/VanDerPol-v0",
    "resonance_os/Lorenz-v0",
    "resonance_os/MeanField-v0",
]


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_passes_gymnasium_env_checker(env_id):
    env = gymnasium.make(env_id)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.spec.max_episode_steps >= 200


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_same_seed_same_episode_and_other_seed_differs(env_id):
    def episode(seed):
        env = gymnasium.make(env_id)
        obs, _ = env.reset(seed=seed)
        states = [obs]
        for _ in range(5):
            obs, *_ = env.step(np.full(1, 0.3, dtype=np.float32))
            states.append(obs)
        return np.array(states)

    np.testing.assert_array_equal(episode(3), episode(3))
    assert not np.allclose(episode(3), episode(4))


def test_mgm_start_states_follow_the_article():
    env = MGMEnv()
    starts = np.array([env.reset(seed=s)[0] for s in range(300)])
    assert np.all(np.abs(starts) >= 2.5) and np.all(np.abs(starts) <= 8.0)
    assert np.all(starts > 0, axis=0).sum() == 0 and np.all(starts < 0, axis=0).sum() == 0  # both signs drawn


@pytest.mark.parametrize("cls", [MGMEnv, VanDerPolEnv, LorenzEnv, MeanFieldEnv])
def test_reset_from_a_given_state(cls):
    env = cls()
    state = np.linspace(0.1, 0.4, len(cls.state_names))
    obs, info = env.reset(seed=0, options={"state": state})
    np.testing.assert_allclose(obs, state, rtol=1e-6)
    np.testing.assert_array_equal(info["state"], state)


def test_bad_start_state_names_the_problem():
    env = MGMEnv()
    with pytest.raises(ConfigError, match="2 finite numbers"):
        env.reset(options={"state": [1.0, 2.0, 3.0]})
    with pytest.raises(ConfigError, match="outside the observation box"):
        env.reset(options={"state": [100.0, 0.0]})
    with pytest.raises(ConfigError, match="reward"):
        MGMEnv(reward="x2")
    with pytest.raises(ConfigError, match="method"):
        VanDerPolEnv(method="Euler")


def test_mgm_dynamics_and_rewards():
    env = MGMEnv()
    np.testing.assert_allclose(env.dynamics(0.0, np.array([1.0, 2.0]), 0.5), [-2 - 1.5 - 0.5, 1.5])
    # states are clipped to +-20 inside the dynamics, as in the article
    np.testing.assert_allclose(
        env.dynamics(0.0, np.array([25.0, 0.0]), 0.0), env.dynamics(0.0, np.array([20.0, 0.0]), 0.0)
    )
    env.reset(options={"state": [1.0, -2.0]})
    _, reward, *_ = env.step(np.zeros(1, np.float32))
    assert reward == pytest.approx(-abs(env.state[0]))
    norm_env = MGMEnv(reward="norm", action_cost=0.1)
    norm_env.reset(options={"state": [1.0, -2.0]})
    _, reward, *_ = norm_env.step(np.full(1, 2.0, np.float32))
    assert reward == pytest.approx(-np.linalg.norm(norm_env.state) - 0.1 * 4.0)


def test_divergence_terminates_with_penalty_and_finite_observation():
    env = MGMEnv(divergence_penalty=-500.0)
    obs, _ = env.reset(options={"state": [0.0, 28.0]})
    for _ in range(200):
        obs, reward, terminated, truncated, info = env.step(np.full(1, 10.0, np.float32))
        assert np.all(np.isfinite(obs)) and env.observation_space.contains(obs)
        if terminated:
            break
    assert terminated and info["diverged"] and reward == -500.0


def test_nan_action_never_reaches_the_state():
    env = VanDerPolEnv()
    env.reset(seed=0)
    obs, reward, *_ = env.step(np.array([np.nan], np.float32))
    assert np.all(np.isfinite(obs)) and np.isfinite(reward)


def test_integration_tolerances_are_exposed_and_used():
    coarse, fine = LorenzEnv(rtol=1e-2, atol=1e-2), LorenzEnv(rtol=1e-9, atol=1e-9)
    a = rollout(coarse, None, state=np.array([1.0, 1.0, 20.0]), steps=100).states[-1]
    b = rollout(fine, None, state=np.array([1.0, 1.0, 20.0]), steps=100).states[-1]
    assert not np.allclose(a, b, atol=1e-3)  # chaos amplifies the looser tolerance


def test_vanderpol_limit_cycle_amplitude():
    traj = rollout(VanDerPolEnv(), None, state=np.array([0.5, 0.0]), steps=800)  # 40 time units
    assert np.abs(traj.states[-200:, 0]).max() == pytest.approx(2.0086, abs=0.01)


def test_lorenz_fixed_point_is_an_equilibrium():
    env = LorenzEnv()
    np.testing.assert_allclose(env.equilibrium, [np.sqrt(72), np.sqrt(72), 27.0])
    np.testing.assert_allclose(env.dynamics(0.0, env.equilibrium, 0.0), 0.0, atol=1e-12)


def test_meanfield_unforced_cost_is_a_tenth_and_resonant_forcing_quenches_it():
    env = gymnasium.make("resonance_os/MeanField-v0")
    uncontrolled = rollout(env, None, seed=0)
    assert uncontrolled.mean_cost == pytest.approx(0.1, rel=1e-3)
    system = env.unwrapped
    forced = rollout(env, lambda obs: np.array([np.cos(10.0 * system.time)]), seed=0)
    assert forced.mean_cost < 0.2 * uncontrolled.mean_cost
