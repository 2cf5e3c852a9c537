"""LQR on the linearisation at the equilibrium."""

import gymnasium
import numpy as np
import pytest

import resonance_os.rl.envs  # noqa: F401
from resonance_os.rl.algorithms.lqr import LQR, linearize
from resonance_os.rl.envs.ode import MGMEnv, rollout
from resonance_os.rl.errors import ConfigError


def test_mgm_gain_and_closed_loop_poles_match_the_reference():
    lqr = LQR(MGMEnv())
    np.testing.assert_allclose(lqr.a, [[0.0, -1.0], [1.0, 0.0]], atol=1e-6)
    np.testing.assert_allclose(lqr.b, [[0.0], [1.0]], atol=1e-6)
    np.testing.assert_allclose(lqr.gain, [[-0.41421, 1.35219]], atol=1e-4)
    poles = np.sort_complex(np.linalg.eigvals(lqr.a - lqr.b @ lqr.gain))
    np.testing.assert_allclose(poles, [-0.6761 - 0.9783j, -0.6761 + 0.9783j], atol=1e-3)


@pytest.mark.parametrize("start", [(1.0, 1.0), (0.5, 0.0), (-0.5, 0.0), (0.1, 0.0)])
def test_lqr_stabilises_mgm_better_than_no_control(start):
    env = MGMEnv()
    lqr = LQR(env)
    controlled = rollout(env, lambda obs: lqr.predict(obs)[0], state=np.array(start), steps=400)
    free = rollout(env, None, state=np.array(start), steps=400)
    assert np.linalg.norm(controlled.states[-1]) < 1e-2
    assert controlled.mean_cost < 0.7 * free.mean_cost


def test_lorenz_lqr_targets_the_chosen_fixed_point():
    env = gymnasium.make("resonance_os/Lorenz-v0")
    lqr = LQR(env, q=100.0)
    traj = rollout(env, lambda obs: lqr.predict(obs)[0], seed=0)
    np.testing.assert_allclose(traj.states[-1], env.unwrapped.equilibrium, atol=0.05)


def test_lqr_refuses_a_system_it_cannot_stabilise():
    with pytest.raises(ConfigError, match="not stabilisable"):
        LQR(gymnasium.make("resonance_os/MeanField-v0"))
    with pytest.raises(ConfigError, match="q"):
        LQR(MGMEnv(), q=0.0)


def test_linearize_matches_a_known_jacobian():
    a, b = linearize(
        lambda t, x, u: np.array([x[0] ** 2 + 3 * x[1], np.sin(x[0]) + 2 * u]), np.array([1.0, 0.0])
    )
    np.testing.assert_allclose(a, [[2.0, 3.0], [np.cos(1.0), 0.0]], atol=1e-6)
    np.testing.assert_allclose(b, [[0.0], [2.0]], atol=1e-6)
