import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from resonance_os.core.errors import ValidationError
from resonance_os.evolution.hr_rl_trainer import ENV_ID, HRWritingEnv, evaluate_writing_policy


@pytest.fixture(scope="module")
def env():
    return HRWritingEnv(hrv_dim=8, max_episode_steps=4)


def test_spec_attributes_and_env_checker(env):
    assert env.hrv_dim == 8
    assert env.observation_space.shape == (8,)
    assert env.action_space.shape == (8,)
    assert env.max_episode_steps == 4
    check_env(HRWritingEnv(max_episode_steps=3), skip_render_check=True)


def test_registered_id_makes_the_env():
    made = gym.make(ENV_ID, max_episode_steps=2)
    obs, _ = made.reset(seed=1)
    assert made.observation_space.contains(obs)


def test_step_writes_real_text_and_rewards_it_with_the_writing_reward(env):
    obs, info = env.reset(seed=3)
    assert env.observation_space.contains(obs)
    assert info["text"].count(".") + info["text"].count("?") + info["text"].count("!") >= 2
    np.testing.assert_allclose(obs, info["measured_hrv"], atol=1e-6)
    _, reward, terminated, truncated, info = env.step(np.zeros(8, dtype=np.float32))
    assert 0.0 <= reward <= 1.0
    expected = env.writing_reward.score(info["text"], info["target_hrv"], prompt=info["prompt"])
    assert reward == pytest.approx(expected.reward) == pytest.approx(info["reward"])
    assert info["resonance"] == pytest.approx(expected.resonance)
    for term in ("fluency", "coherence", "topic", "repetition"):
        assert info[term] == pytest.approx(getattr(expected, term))
    assert not terminated and not truncated
    assert info["controls"] == pytest.approx(info["target_hrv"])


def test_episode_terminates_when_the_revision_budget_is_spent(env):
    env.reset(seed=0)
    steps = [env.step(env.action_space.sample()) for _ in range(4)]
    assert [s[2] for s in steps] == [False, False, False, True]
    assert not any(s[3] for s in steps)


def test_same_seed_same_drafts(env):
    first = [env.reset(seed=11)[1]["text"]] + [env.step(np.full(8, 0.3))[4]["text"] for _ in range(2)]
    again = [env.reset(seed=11)[1]["text"]] + [env.step(np.full(8, 0.3))[4]["text"] for _ in range(2)]
    assert first == again


def test_the_writer_is_miscalibrated_so_corrections_pay(env):
    """Cancelling the knob offsets measurably beats a zero adjustment: there is something to learn."""
    correction = -env.knob_offsets / env.action_scale
    zero = np.mean([env.step(np.zeros(8))[1] for _ in range(20)])
    corrected = np.mean([env.step(correction)[1] for _ in range(20)])
    assert corrected > zero + 0.05


def test_targets_set_appends_the_target_to_the_observation():
    env = HRWritingEnv(targets=["builtin/creative", "builtin/technical"], max_episode_steps=2)
    obs, info = env.reset(seed=0)
    assert obs.shape == (16,)
    np.testing.assert_allclose(obs[8:], info["target_hrv"], atol=1e-6)


def test_reward_model_is_blended_into_the_reward():
    class Constant:
        def predict(self, text, target_hrv):
            return 1.0

    env = HRWritingEnv(reward_model=Constant(), reward_model_weight=0.5, max_episode_steps=2)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(np.zeros(8))
    assert reward == pytest.approx(0.5 * info["reward"] + 0.5)


def test_render_ansi_shows_the_draft_and_table():
    env = HRWritingEnv(render_mode="ansi", max_episode_steps=2)
    _, info = env.reset(seed=0)
    shown = env.render()
    assert info["text"] in shown and "active_voice_ratio" in shown


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"hrv_dim": 5}, "hrv_dim must be 8"),
        ({"max_episode_steps": 0}, "max_episode_steps"),
        ({"action_scale": 0}, "action_scale"),
        ({"target_hrv": [0.5] * 7}, "8 values"),
        ({"prompts": ["  "]}, "prompt"),
        ({"render_mode": "human"}, "render_mode"),
        ({"reward_model": object()}, "predict"),
    ],
)
def test_bad_arguments_name_the_problem(kwargs, fragment):
    with pytest.raises(ValidationError, match=fragment):
        HRWritingEnv(**kwargs)


def test_baseline_policies_are_evaluated_per_step(env):
    random = evaluate_writing_policy(env, "random", episodes=2, seed=0)
    zero = evaluate_writing_policy(env, "zero", episodes=2, seed=0)
    assert 0.0 < random["mean"] < zero["mean"] < 1.0


def test_first_drafts_come_from_a_pool_once_it_is_full():
    env = HRWritingEnv(prompts=["city gardens"], draft_pool_size=2)
    first = {env.reset(seed=s)[1]["text"] for s in range(2)}
    later = {env.reset(seed=s)[1]["text"] for s in range(2, 8)}
    assert len(first) == 2
    assert later <= first
    fresh = HRWritingEnv(prompts=["city gardens"], draft_pool_size=0)
    assert len({fresh.reset(seed=s)[1]["text"] for s in range(4)}) == 4
