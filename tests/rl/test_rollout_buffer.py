"""GAE against a hand-computed example, packing, per-minibatch advantage normalisation, running statistics."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from resonance_os.rl.algorithms.ppo import normalize_per_minibatch
from resonance_os.rl.buffers import RolloutBuffer
from resonance_os.rl.normalization import Normalizer, RunningMeanStd


def test_gae_matches_a_hand_computed_example_with_an_episode_end():
    gamma, lam = 0.9, 0.8
    buf = RolloutBuffer(n_steps=3, n_envs=1, obs_dim=1, action_dim=1)
    # step 1 ends an episode (done); if it was a time-limit cut, the caller already added
    # gamma * V(final obs) = 0.9 * 2.0 to its reward: 0.5 + 1.8 = 2.3
    for reward, done, value in [(1.0, 0.0, 0.5), (2.3, 1.0, 1.0), (-1.0, 0.0, 0.2)]:
        buf.add(np.zeros((1, 1)), np.zeros((1, 1)), np.array([reward]), np.array([done]), np.array([value]))
    buf.compute_returns_and_advantage(last_values=np.array([0.4]), gamma=gamma, gae_lambda=lam)
    # by hand, backwards:
    d2 = -1.0 + 0.9 * 0.4 - 0.2  # -0.84
    a2 = d2
    d1 = 2.3 + 0.0 - 1.0  # the done step does not look past the episode end: 1.3
    a1 = d1
    d0 = 1.0 + 0.9 * 1.0 - 0.5  # 1.4
    a0 = d0 + gamma * lam * a1  # 1.4 + 0.72 * 1.3 = 2.336
    assert buf.advantages[:, 0] == pytest.approx([a0, a1, a2], abs=1e-6)
    assert buf.returns[:, 0] == pytest.approx([a0 + 0.5, a1 + 1.0, a2 + 0.2], abs=1e-6)


def test_gae_with_lambda_one_is_the_discounted_return_minus_value():
    buf = RolloutBuffer(n_steps=4, n_envs=2, obs_dim=1, action_dim=1)
    rewards = np.array([[1, 0], [2, 1], [3, 1], [4, 1]], dtype=np.float32)
    for t in range(4):
        buf.add(np.zeros((2, 1)), np.zeros((2, 1)), rewards[t], np.zeros(2), np.full(2, 0.5))
    buf.compute_returns_and_advantage(last_values=np.array([10.0, 0.0]), gamma=0.5, gae_lambda=1.0)
    expected0 = 1 + 0.5 * 2 + 0.25 * 3 + 0.125 * 4 + 0.0625 * 10
    assert buf.returns[0, 0] == pytest.approx(expected0)
    assert buf.advantages[0, 0] == pytest.approx(expected0 - 0.5)


def test_packed_columns_follow_the_documented_layout():
    buf = RolloutBuffer(n_steps=2, n_envs=2, obs_dim=3, action_dim=2)
    for t in range(2):
        buf.add(np.full((2, 3), t), np.full((2, 2), 10 + t), np.ones(2), np.zeros(2), np.full(2, 5.0))
        buf.log_probs[t] = -t
    buf.compute_returns_and_advantage(np.zeros(2), 0.99, 0.95)
    data = buf.packed()
    assert data.shape == (4, 3 + 2 + 4)
    assert data[2, :3].tolist() == [1, 1, 1] and data[2, 3:5].tolist() == [11, 11]
    assert data[2, 5] == -1 and data[:, 8].tolist() == [5.0] * 4
    assert torch.allclose(data[:, 7], torch.from_numpy(buf.returns.reshape(-1)))


def test_per_minibatch_normalisation_matches_normalising_each_block():
    adv = torch.randn(10, generator=torch.Generator().manual_seed(0)) * 3 + 1
    out = normalize_per_minibatch(adv, 4)
    for block in (slice(0, 4), slice(4, 8), slice(8, 10)):
        expected = (adv[block] - adv[block].mean()) / (adv[block].std() + 1e-8)
        assert torch.allclose(out[block], expected, atol=1e-6)
    single = normalize_per_minibatch(adv[:9], 4)
    assert single[8] == adv[8]  # a block of one is left as is (its std is undefined)


def test_running_mean_std_matches_numpy_over_batches():
    rng = np.random.default_rng(0)
    data = rng.normal(3.0, 2.0, size=(1000, 2))
    rms = RunningMeanStd((2,))
    for chunk in np.split(data, 10):
        rms.update(chunk)
    assert rms.mean == pytest.approx(data.mean(0), rel=1e-4)
    assert rms.var == pytest.approx(data.var(0), rel=1e-3)


def test_reward_scaling_divides_by_the_return_spread_and_keeps_the_sign():
    norm = Normalizer((1,), 1, normalize_obs=False, normalize_reward=True, gamma=0.9)
    for _ in range(200):
        scaled = norm.reward(np.array([10.0]), np.array([False]))
    assert 0 < scaled[0] < 10.0
    assert norm.reward(np.array([-10.0]), np.array([True]))[0] < 0
    assert norm.returns[0] == 0.0  # reset at the episode end
    obs_norm = Normalizer((2,), 1, normalize_obs=True, normalize_reward=False, gamma=0.9, clip_obs=5.0)
    for _ in range(50):
        obs_norm.obs(np.array([[100.0, -3.0]]), update=True)
    assert np.allclose(obs_norm.obs(np.array([[100.0, -3.0]])), 0.0, atol=1e-2)
