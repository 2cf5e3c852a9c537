"""PPO: learning, persistence, resume, config, schedules, vector envs and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from resonance_os.rl import PPO, PPOConfig
from resonance_os.rl.errors import CheckpointError, ConfigError, EnvMismatchError, LogDirError
from resonance_os.rl.policies import HRV_POLICY_KWARGS


class TargetEnv(gym.Env):
    """Observation x ~ U[-1, 1]^d; reward -mean((a - x)^2); 8 steps an episode (time-limit truncation).

    A random policy scores about -0.67 a step, always-zero -0.33, the optimum 0.
    """

    def __init__(self, dim: int = 1, horizon: int = 8) -> None:
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (dim,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (dim,), np.float32)
        self.horizon = horizon

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self.x = self.np_random.uniform(-1, 1, self.observation_space.shape).astype(np.float32)
        return self.x, {}

    def step(self, action):
        reward = -float(np.mean((np.asarray(action) - self.x) ** 2))
        self.t += 1
        self.x = self.np_random.uniform(-1, 1, self.observation_space.shape).astype(np.float32)
        return self.x, reward, False, self.t >= self.horizon, {}


class NaNRewardEnv(TargetEnv):
    def step(self, action):
        obs, _, terminated, truncated, info = super().step(action)
        return obs, float("nan"), terminated, truncated, info


def mean_step_reward(model: PPO, env: gym.Env, steps: int = 400, seed: int = 123) -> float:
    obs, _ = env.reset(seed=seed)
    total = 0.0
    for _ in range(steps):
        obs, reward, terminated, truncated, _ = env.step(model.predict(obs)[0])
        total += reward
        if terminated or truncated:
            obs, _ = env.reset()
    return total / steps


def cartpole_return(model: PPO | None, episodes: int = 5) -> float:
    env = gym.make("CartPole-v1")
    rng = np.random.default_rng(0)
    returns = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=1000 + episode)
        done, total = False, 0.0
        while not done:
            action = model.predict(obs)[0] if model is not None else int(rng.integers(2))
            obs, reward, terminated, truncated, _ = env.step(action)
            total += reward
            done = terminated or truncated
        returns.append(total)
    return float(np.mean(returns))


def small(**overrides) -> dict:
    return {"n_steps": 64, "batch_size": 32, "n_epochs": 4, "seed": 0, **overrides}


# ----------------------------------------------------------------------------------------------- learning


def test_cartpole_learns_to_beat_random_by_a_wide_margin():
    model = PPO("MlpPolicy", "CartPole-v1", n_steps=256, ent_coef=0.0, seed=0)
    model.learn(12_000, progress_bar=False)
    learned, random = cartpole_return(model), cartpole_return(None)
    assert random < 30
    assert learned > 4 * random, (learned, random)


def test_box_policy_learns_the_target_task():
    env = TargetEnv(dim=2)
    model = PPO("MlpPolicy", env, n_steps=256, batch_size=64, learning_rate=1e-3, ent_coef=0.0, seed=1)
    before = mean_step_reward(model, TargetEnv(dim=2))
    model.learn(10_000, progress_bar=False)
    after = mean_step_reward(model, TargetEnv(dim=2))
    assert before < -0.25
    assert after > -0.08, (before, after)  # always-zero scores -0.33, random -0.67


def test_hrv_network_configuration_learns_an_8d_box_task():
    model = PPO(
        "MlpPolicy",
        TargetEnv(dim=8),
        policy_kwargs=HRV_POLICY_KWARGS,
        n_steps=256,
        learning_rate=1e-3,
        ent_coef=0.0,
        seed=0,
    )
    model.learn(8_000, progress_bar=False)
    assert mean_step_reward(model, TargetEnv(dim=8)) > -0.25  # always-zero scores -0.33, random -0.67


def test_same_seed_gives_the_same_model_and_another_seed_does_not():
    def train(seed: int) -> torch.Tensor:
        model = PPO("MlpPolicy", TargetEnv(), **small(seed=seed))
        model.learn(256, progress_bar=False)
        return model.policy.flat.param.detach().clone()

    assert torch.equal(train(3), train(3))
    assert not torch.equal(train(3), train(4))


# ----------------------------------------------------------------------------------------------- metrics


def test_metrics_per_update_use_the_spec_names(tmp_path: Path):
    model = PPO("MlpPolicy", TargetEnv(), log_dir=tmp_path, **small())
    model.learn(256, progress_bar=False)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["timesteps"] for r in rows] == [64, 128, 192, 256]
    names = {
        "episode_reward_mean",
        "episode_reward_std",
        "loss",
        "policy_loss",
        "value_loss",
        "entropy_loss",
        "explained_variance",
        "learning_rate",
        "fps",
        "approx_kl",
        "clip_fraction",
        "timesteps",
    }
    assert names <= set(rows[-1])
    assert rows[-1]["episode_reward_mean"] < 0 and rows[-1]["fps"] > 0
    assert rows[-1]["clip_fraction"] >= 0 and rows[-1]["learning_rate"] == pytest.approx(3e-4)


def test_linear_and_callable_learning_rate_schedules():
    model = PPO("MlpPolicy", TargetEnv(), lr_schedule="linear", **small())
    model.learn(256, progress_bar=False)
    rates = [row["learning_rate"] for row in model.history]
    assert rates == pytest.approx([3e-4 * f for f in (0.75, 0.5, 0.25, 0.0)])
    model = PPO("MlpPolicy", TargetEnv(), learning_rate=lambda p: 1e-3 * p**2, **small())
    model.learn(128, progress_bar=False)
    assert [row["learning_rate"] for row in model.history] == pytest.approx([1e-3 * 0.25, 0.0])


def test_target_kl_stops_the_epochs_early():
    model = PPO("MlpPolicy", TargetEnv(), target_kl=1e-9, learning_rate=1e-2, **small(n_epochs=10))
    model.learn(64, progress_bar=False)
    steps = int(model.optimizer.state[model.policy.flat.param]["step"])
    assert 1 <= steps < 10 * 2  # a full update would take 10 epochs x 2 minibatches


def test_callback_returning_false_stops_training():
    model = PPO("MlpPolicy", TargetEnv(), **small())
    model.learn(10_000, callback=lambda m, row: row["timesteps"] < 128, progress_bar=False)
    assert model.num_timesteps == 128


def test_observation_and_reward_normalisation_are_learned_and_saved(tmp_path: Path):
    model = PPO("MlpPolicy", TargetEnv(), normalize_obs=True, normalize_reward=True, **small())
    model.learn(256, progress_bar=False)
    assert model.normalizer.obs_rms.count > 256
    assert model.normalizer.ret_rms.var > 0
    model.save(tmp_path / "m")
    loaded = PPO.load(tmp_path / "m")
    assert np.allclose(loaded.normalizer.obs_rms.mean, model.normalizer.obs_rms.mean)
    obs = np.linspace(-1, 1, 10, dtype=np.float32).reshape(10, 1)
    assert np.array_equal(loaded.predict(obs)[0], model.predict(obs)[0])


# ----------------------------------------------------------------------------------------------- persistence


def test_save_load_round_trip_gives_identical_predictions(tmp_path: Path):
    model = PPO("MlpPolicy", "CartPole-v1", **small())
    model.learn(128, progress_bar=False)
    model.save(tmp_path / "ckpt")
    loaded = PPO.load(tmp_path / "ckpt")
    obs = np.random.default_rng(0).normal(size=(32, 4)).astype(np.float32)
    assert np.array_equal(loaded.predict(obs)[0], model.predict(obs)[0])
    assert loaded.config == model.config
    assert loaded.num_timesteps == 128
    single, state = loaded.predict(obs[0])
    assert state is None and single.shape == () and single in (0, 1)


def test_resume_continues_timesteps_and_optimizer_state(tmp_path: Path):
    model = PPO("MlpPolicy", TargetEnv(), log_dir=tmp_path / "run", **small())
    model.learn(128, progress_bar=False)
    model.save(tmp_path / "ckpt")
    resumed = PPO.load(tmp_path / "ckpt", env=TargetEnv(), log_dir=tmp_path / "run")
    state = resumed.optimizer.state[resumed.policy.flat.param]
    assert int(state["step"]) == int(model.optimizer.state[model.policy.flat.param]["step"]) > 0
    resumed.learn(128, reset_num_timesteps=False, progress_bar=False)
    assert resumed.num_timesteps == 256
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["timesteps"] for r in rows] == [64, 128, 192, 256]


def test_config_json_round_trip_and_spec_defaults():
    config = PPOConfig()
    assert (config.learning_rate, config.batch_size, config.n_steps, config.gamma, config.gae_lambda) == (
        3e-4,
        64,
        2048,
        0.99,
        0.95,
    )
    assert (config.clip_range, config.ent_coef, config.vf_coef, config.max_grad_norm, config.n_epochs) == (
        0.2,
        0.01,
        0.5,
        0.5,
        10,
    )
    custom = PPOConfig(target_kl=0.02, clip_range_vf=0.3, policy_kwargs=dict(HRV_POLICY_KWARGS), n_envs=4)
    assert PPOConfig.from_json(custom.to_json()) == custom
    assert PPOConfig.from_json(config.to_json()) == config


def test_fast_preset_keeps_the_rollout_and_enlarges_minibatches():
    fast = PPOConfig(n_steps=1024, n_envs=4, learning_rate=1e-3).fast()
    assert (fast.n_steps, fast.n_envs, fast.batch_size, fast.learning_rate) == (1024, 4, 256, 1e-3)
    assert PPOConfig(n_steps=32, batch_size=64).fast().batch_size == 32


# ----------------------------------------------------------------------------------------------- envs


def test_accepts_vector_envs_and_builds_n_envs_from_an_id():
    model = PPO("MlpPolicy", "Pendulum-v1", n_envs=3, **small())
    assert model.env.num_envs == 3
    model.learn(192, progress_bar=False)
    assert model.num_timesteps == 192
    vec = gym.vector.SyncVectorEnv(
        [lambda: TargetEnv(), lambda: TargetEnv()], autoreset_mode=gym.vector.AutoresetMode.SAME_STEP
    )
    model = PPO("MlpPolicy", vec, **small())
    model.learn(128, progress_bar=False)
    assert model.num_timesteps == 128


class CounterEnv(gym.Env):
    """Observation t / horizon, reward 1 each step; the episode ends at t = horizon, cut or terminal."""

    def __init__(self, horizon: int = 4, terminal: bool = False) -> None:
        self.observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.horizon, self.terminal = horizon, terminal

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        end = self.t >= self.horizon
        obs = np.array([self.t / self.horizon], np.float32)
        return obs, 1.0, end and self.terminal, end and not self.terminal, {}


@pytest.mark.parametrize("terminal", [False, True])
def test_time_limit_truncation_is_bootstrapped_and_termination_is_not(terminal: bool):
    model = PPO("MlpPolicy", CounterEnv(terminal=terminal), gamma=0.9, **small(n_steps=8))
    model._last_obs = model._observe(model.env.reset(seed=0)[0], update=True)
    model._collect_rollout()
    rewards, dones = model.buffer.rewards[:, 0], model.buffer.dones[:, 0]
    assert dones.tolist() == [0, 0, 0, 1, 0, 0, 0, 1]
    with torch.inference_mode():
        final_value = float(model.policy.value(torch.tensor([[1.0]]))[0])
    expected_end = 1.0 if terminal else np.float32(1.0) + np.float32(0.9) * np.float32(final_value)
    assert rewards[[0, 1, 2, 4, 5, 6]].tolist() == [1.0] * 6
    assert rewards[3] == pytest.approx(expected_end, rel=1e-6)
    assert rewards[7] == pytest.approx(expected_end, rel=1e-6)
    assert abs(final_value) > 1e-4  # the bootstrap is visible


# ----------------------------------------------------------------------------------------------- bad input


def test_bad_inputs_raise_clear_errors(tmp_path: Path):
    with pytest.raises(ConfigError, match="MlpPolicy"):
        PPO("CnnPolicy", TargetEnv())
    with pytest.raises(ConfigError, match="batch_size"):
        PPO("MlpPolicy", TargetEnv(), batch_size=0)
    with pytest.raises(ConfigError, match="unknown PPO settings"):
        PPO("MlpPolicy", TargetEnv(), n_step=64)
    with pytest.raises(ConfigError, match="n_envs"):
        PPO("MlpPolicy", TargetEnv(), n_envs=2)
    with pytest.raises(ConfigError, match="SAME_STEP"):
        PPO("MlpPolicy", gym.vector.SyncVectorEnv([lambda: TargetEnv()]))
    with pytest.raises(ConfigError, match="unknown environment id"):
        PPO("MlpPolicy", "NoSuchEnv-v9")


def test_nan_reward_from_a_user_env_is_reported():
    model = PPO("MlpPolicy", NaNRewardEnv(), **small())
    with pytest.raises(EnvMismatchError, match="non-finite reward"):
        model.learn(64, progress_bar=False)


def test_loading_with_an_env_of_other_spaces_is_refused(tmp_path: Path):
    model = PPO("MlpPolicy", TargetEnv(dim=2), **small())
    model.save(tmp_path / "m")
    with pytest.raises(EnvMismatchError, match="observation space"):
        PPO.load(tmp_path / "m", env=TargetEnv(dim=3))
    with pytest.raises(EnvMismatchError):
        PPO.load(tmp_path / "m", env="CartPole-v1")


def test_corrupt_and_foreign_version_checkpoints_are_refused(tmp_path: Path):
    model = PPO("MlpPolicy", TargetEnv(), **small())
    model.save(tmp_path / "m")
    meta = json.loads((tmp_path / "m" / "metadata.json").read_text())
    meta["format_version"] = 99
    (tmp_path / "m" / "metadata.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="format version"):
        PPO.load(tmp_path / "m")
    model.save(tmp_path / "m")
    (tmp_path / "m" / "weights" / "policy.safetensors").write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="corrupt"):
        PPO.load(tmp_path / "m")
    with pytest.raises(CheckpointError, match="no checkpoint"):
        PPO.load(tmp_path / "missing")


def test_failed_save_leaves_no_half_written_checkpoint(tmp_path: Path, monkeypatch):
    model = PPO("MlpPolicy", TargetEnv(), **small())
    model.save(tmp_path / "m")
    before = (tmp_path / "m" / "weights" / "policy.safetensors").read_bytes()
    model.learn(64, progress_bar=False)

    def broken_save(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(CheckpointError, match="disk full"):
        model.save(tmp_path / "m")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]  # no temporary folders left
    assert (tmp_path / "m" / "weights" / "policy.safetensors").read_bytes() == before


def test_unwritable_log_dir_is_reported(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    model = PPO("MlpPolicy", TargetEnv(), log_dir=blocker / "run", **small())
    with pytest.raises(LogDirError, match="writable"):
        model.learn(64, progress_bar=False)


def test_discrete_observations_are_one_hot_encoded():
    model = PPO("MlpPolicy", "FrozenLake-v1", **small(n_steps=32))
    model.learn(64, progress_bar=False)
    assert model.obs_dim == 16
    action, _ = model.predict(3)
    assert action.shape == () and 0 <= int(action) < 4
    assert model.predict(np.array([0, 5, 15]))[0].shape == (3,)


def test_importing_the_engine_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, resonance_os.rl as rl; assert 'torch' not in sys.modules; rl.PPO; assert 'torch' in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
