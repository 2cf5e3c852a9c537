"""SAC: config round trip, errors, seeding, learning on an easy task, save/load."""

import json

import gymnasium
import numpy as np
import pytest
import torch

import resonance_os.rl.envs  # noqa: F401
from resonance_os.rl.algorithms.sac import SAC, SACConfig, squashed_sample
from resonance_os.rl.envs.ode import rollout
from resonance_os.rl.errors import CheckpointError, ConfigError, EnvMismatchError
from resonance_os.rl.logger import read_metrics

SMALL = {"net_arch": [32, 32], "batch_size": 32, "learning_starts": 50}


def easy_env():
    return gymnasium.make("resonance_os/VanDerPol-v0", max_episode_steps=50)


def test_defaults_are_sb3s_and_config_round_trips_through_json():
    cfg = SACConfig()
    assert (cfg.learning_rate, cfg.buffer_size, cfg.batch_size, cfg.tau, cfg.gamma, cfg.learning_starts) == (
        3e-4,
        1_000_000,
        256,
        0.005,
        0.99,
        100,
    )
    assert cfg.net_arch == [256, 256] and cfg.n_critics == 2 and cfg.ent_coef == "auto"
    custom = SACConfig(net_arch=[64], ent_coef="auto_0.1", seed=3, precision="bfloat16")
    assert SACConfig.from_json(custom.to_json()) == custom


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"tau": 0.0}, "tau"), ({"ent_coef": "manual"}, "ent_coef"), ({"batch_size": 0}, "batch_size"),
     ({"precision": "fp8"}, "precision"), ({"learning_rat": 1e-3}, "learning_rat")],
)  # fmt: skip
def test_bad_config_names_the_field(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        SAC("MlpPolicy", easy_env(), **kwargs)


def test_env_without_box_actions_is_refused():
    with pytest.raises(EnvMismatchError, match="Box action"):
        SAC("MlpPolicy", gymnasium.make("CartPole-v1"))


def test_squashed_log_prob_matches_change_of_variables():
    mean, log_std = torch.tensor([[0.3, -0.2]]), torch.tensor([[-0.5, 0.1]])
    action, log_prob = squashed_sample(mean, log_std, torch.Generator().manual_seed(0))
    u = torch.atanh(action)
    normal = torch.distributions.Normal(mean, log_std.exp())
    expected = (normal.log_prob(u) - torch.log(1 - action.square() + 1e-6)).sum(-1, keepdim=True)
    torch.testing.assert_close(log_prob, expected, rtol=1e-4, atol=1e-4)


def test_batched_twin_critics_are_independent_networks():
    model = SAC("MlpPolicy", easy_env(), seed=0, **SMALL)
    q = model.critic(torch.zeros(5, 2), torch.zeros(5, 1))
    assert q.shape == (2, 5, 1) and not torch.allclose(q[0], q[1])


def test_same_seed_same_training():
    def weights():
        model = SAC("MlpPolicy", easy_env(), seed=7, **SMALL)
        model.learn(120)
        return torch.cat([p.flatten() for p in model.actor.parameters()])

    torch.testing.assert_close(weights(), weights(), rtol=0, atol=0)


def test_learns_to_beat_random_actions_on_a_small_budget(tmp_path):
    torch.manual_seed(0)
    model = SAC("MlpPolicy", easy_env(), seed=0, net_arch=[64, 64], batch_size=64, learning_rate=1e-3,
                log_dir=tmp_path)  # fmt: skip
    model.learn(1500)
    env, rng = easy_env(), np.random.default_rng(0)
    learned = np.mean([rollout(env, lambda o: model.predict(o)[0], seed=100 + i).mean_cost for i in range(5)])
    random = np.mean(
        [rollout(env, lambda o: rng.uniform(-5, 5, 1), seed=100 + i).mean_cost for i in range(5)]
    )
    assert learned < 0.8 * random
    rows = read_metrics(tmp_path)
    assert rows and {"episode_reward_mean", "policy_loss", "value_loss", "fps"} <= set(rows[-1])


def test_save_load_round_trip(tmp_path):
    model = SAC("MlpPolicy", easy_env(), seed=1, **SMALL)
    model.learn(80)
    model.save(tmp_path / "sac")
    obs = np.array([[0.5, -1.0], [2.0, 0.3]], dtype=np.float32)
    loaded = SAC.load(tmp_path / "sac")  # no env: inference only
    np.testing.assert_array_equal(loaded.predict(obs)[0], model.predict(obs)[0])
    assert loaded.config == model.config and loaded.num_timesteps == 80
    assert np.all(np.abs(loaded.predict(obs[0])[0]) <= 5.0)
    resumed = SAC.load(tmp_path / "sac", env=easy_env())
    resumed.learn(20, reset_num_timesteps=False)
    assert resumed.num_timesteps == 100
    with pytest.raises(ConfigError, match="no env"):
        loaded.learn(10)
    with pytest.raises(CheckpointError):
        SAC.load(tmp_path / "missing")


@pytest.mark.parametrize("ent_coef", ["auto", 0.2])
def test_fast_update_matches_autograd_reference(ent_coef):
    """The hand-written float32 update equals plain autograd through the modules, step for step."""

    def model_after(step_name):
        model = SAC("MlpPolicy", gymnasium.make("Pendulum-v1"), seed=3, batch_size=64, ent_coef=ent_coef)
        rng = np.random.default_rng(0)
        for _ in range(200):
            obs, action = rng.normal(size=3).astype(np.float32), rng.uniform(-1, 1, 1).astype(np.float32)
            model.replay_buffer.add(obs, action, rng.normal(), rng.normal(size=3), rng.random() < 0.1)
        losses, grads = [], []
        for _ in range(3):
            if step_name == "fast":
                with torch.no_grad():
                    losses.append(model._train_step_fast())
            else:
                losses.append(model._train_step_autograd())
            grads.append(torch.cat([model._actor_flat.param.grad, model._critic_flat.param.grad]).clone())
        flat = [model._actor_flat.param, model._critic_flat.param, model.log_ent_coef]
        return [t.detach().clone() for t in flat], torch.stack(losses), torch.stack(grads)

    (fast_params, fast_losses, fast_grads) = model_after("fast")
    (ref_params, ref_losses, ref_grads) = model_after("autograd")
    for fast, ref in zip(fast_params, ref_params):
        torch.testing.assert_close(fast, ref, rtol=0, atol=1e-5)
    torch.testing.assert_close(fast_losses, ref_losses, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(fast_grads, ref_grads, rtol=1e-4, atol=1e-6)  # Adam hides gradient scale
    assert not torch.equal(fast_params[0], SAC("MlpPolicy", "Pendulum-v1", seed=3)._actor_flat.param)


def test_checkpoint_of_an_older_format_is_refused_clearly(tmp_path):
    model = SAC("MlpPolicy", easy_env(), seed=1, **SMALL)
    model.save(tmp_path / "sac")
    meta_file = tmp_path / "sac" / "metadata.json"
    meta = json.loads(meta_file.read_text())
    meta.pop("sac_format")  # as written before optimizer states became one flat tensor per network
    meta_file.write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="SAC format 1"):
        SAC.load(tmp_path / "sac")
