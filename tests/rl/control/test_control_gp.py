"""GP controller (Bayesian optimisation of a linear feedback law)."""

import gymnasium
import numpy as np
import pytest

import resonance_os.rl.envs  # noqa: F401
from resonance_os.rl.algorithms.gp_control import GPControlConfig, GPController, expected_improvement
from resonance_os.rl.envs.ode import rollout
from resonance_os.rl.errors import ConfigError, EnvMismatchError

FAST = {"n_initial": 5, "n_eval_starts": 2, "horizon": 100, "gain_bound": 10.0, "n_candidates": 500}


def mgm():
    return gymnasium.make("resonance_os/MGM-v0")


def test_beats_no_control_on_mgm_in_a_small_budget():
    model = GPController("LinearFeedback", mgm(), seed=0, **FAST).learn(3000)
    assert model.num_timesteps <= 3000 + 2 * 100
    env = mgm()
    learned = np.mean(
        [rollout(env, lambda o: model.predict(o)[0], seed=1000 + i).mean_cost for i in range(4)]
    )
    free = np.mean([rollout(env, None, seed=1000 + i).mean_cost for i in range(4)])
    assert learned < 0.5 * free
    assert model.history_costs.min() == pytest.approx(model.evaluate(model.params)[0])


def test_expected_improvement_prefers_low_mean_and_high_uncertainty():
    ei = expected_improvement(np.array([0.0, 1.0, 1.0]), np.array([0.1, 0.1, 1.0]), best=0.5, xi=0.0)
    assert ei[0] > ei[2] > ei[1] >= 0


def test_config_round_trip_and_errors():
    cfg = GPControlConfig(n_initial=3, bias=True, seed=2)
    assert GPControlConfig.from_json(cfg.to_json()) == cfg
    with pytest.raises(ConfigError, match="gain_bound"):
        GPController("LinearFeedback", mgm(), gain_bound=-1.0)
    with pytest.raises(ConfigError, match="unknown"):
        GPController("LinearFeedback", mgm(), gains=3)
    with pytest.raises(EnvMismatchError, match="scalar Box action"):
        GPController("LinearFeedback", gymnasium.make("CartPole-v1"))
    with pytest.raises(EnvMismatchError, match="rewards <= 0"):
        GPController("LinearFeedback", gymnasium.wrappers.TransformReward(mgm(), lambda r: 1.0), n_initial=1,
                     n_eval_starts=1, horizon=5).learn(1)  # fmt: skip


def test_save_load_round_trip(tmp_path):
    model = GPController("LinearFeedback", mgm(), seed=0, **{**FAST, "bias": True}).learn(600)
    model.save(tmp_path / "gp")
    loaded = GPController.load(tmp_path / "gp")
    obs = np.array([[1.0, -2.0], [0.3, 0.4]], dtype=np.float32)
    np.testing.assert_array_equal(loaded.predict(obs)[0], model.predict(obs)[0])
    np.testing.assert_array_equal(loaded.history_costs, model.history_costs)
    assert loaded.config == model.config
