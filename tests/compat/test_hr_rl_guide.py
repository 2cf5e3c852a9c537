"""The original evolution guide's HR-RL snippet, rewritten: train_hr_ppo, then predict on env.reset()."""

import numpy as np
import pytest

from resonance_os.core.errors import ValidationError
from resonance_os.evolution.hr_rl_trainer import HRWritingEnv, train_hr_ppo
from resonance_os.rl.errors import EnvMismatchError

SMALL = {"n_steps": 32, "batch_size": 16, "n_epochs": 1}


def test_predict_on_the_reset_pair_fails_at_once_saying_to_pass_obs():
    env = HRWritingEnv(hrv_dim=8, seed=0)
    model = train_hr_ppo(env, timesteps=32, config=SMALL, seed=0, progress_bar=False)
    with pytest.raises(EnvMismatchError, match=r"obs, info = env\.reset\(\)"):
        model.predict(env.reset())
    obs, info = env.reset()
    action, state = model.predict(obs)
    assert action.shape == (8,) and state is None
    assert np.all((action >= -1.0) & (action <= 1.0))
    # the guide's 8-value "current state" has the observation's shape: it is read as the gap to the target
    assert model.predict([0.5] * 8)[0].shape == (8,)
    with pytest.raises(EnvMismatchError, match="does not fit"):
        model.predict([0.5] * 17)  # the opt-in full observation's shape is not this env's


class OldGymStepEnv(HRWritingEnv):
    """The guide's CustomHRWritingEnv pattern: step() returns the old gym API's 4 values."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated, info


def test_an_old_gym_api_env_is_refused_before_training():
    with pytest.raises(EnvMismatchError, match="step\\(\\) returned 4 values"):
        train_hr_ppo(OldGymStepEnv(hrv_dim=8), timesteps=32, config=SMALL, progress_bar=False)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"hrv_dim": 16}, "hrv_dim must be 8"),
        ({"seed": "x"}, "seed must be a non-negative integer"),
        ({"split": "bogus"}, "split must be one of"),
        ({"max_edits": 9}, "max_edits"),
    ],
)
def test_env_arguments_are_checked_at_construction(kwargs, message):
    with pytest.raises(ValidationError, match=message):
        HRWritingEnv(**kwargs)


def test_sac_predict_names_the_reset_pair_too():
    import gymnasium as gym

    from resonance_os.rl.algorithms.sac import SAC

    env = gym.make("Pendulum-v1")
    model = SAC("MlpPolicy", env, seed=0)
    with pytest.raises(EnvMismatchError, match=r"obs, info = env\.reset\(\)"):
        model.predict(env.reset(seed=0))
    obs, _ = env.reset(seed=0)
    assert model.predict(obs)[0].shape == (1,)
