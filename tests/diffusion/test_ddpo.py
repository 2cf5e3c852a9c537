import json

import numpy as np
import pytest
import torch

from resonance_os.diffusion.ddim import trajectory_log_prob
from resonance_os.diffusion.ddpo import DDPO, DDPOConfig
from resonance_os.diffusion.rewards import make_reward
from resonance_os.diffusion.unet import ConditionalUNet
from resonance_os.rl.errors import ConfigError

SMALL = {"samples_per_epoch": 16, "train_batch_size": 8, "num_steps": 4}


def brightness(images: torch.Tensor, labels: torch.Tensor) -> np.ndarray:
    return images.mean(dim=(1, 2, 3)).double().numpy()


def _all_log_probs(trainer: DDPO, trajectory) -> torch.Tensor:
    steps = trajectory.log_probs.shape[1]
    with torch.no_grad():
        return torch.stack(
            [
                trajectory_log_prob(
                    trainer.unet,
                    trajectory,
                    torch.full((trajectory.labels.shape[0],), s),
                    num_steps=steps,
                    guidance_scale=trainer.config.guidance_scale,
                )
                for s in range(steps)
            ],
            dim=1,
        )


@pytest.mark.parametrize("method", ["is", "sf"])
def test_a_policy_gradient_update_makes_high_reward_chains_more_likely(tiny_unet, method) -> None:
    trainer = DDPO(
        tiny_unet, brightness, DDPOConfig(method=method, learning_rate=1e-6, timestep_fraction=1.0, **SMALL)
    )
    trajectory = trainer.sample(torch.arange(16) % 10, seed=3)
    rewards = brightness(trajectory.images, trajectory.labels)
    stats = trainer.update(trajectory, rewards)
    advantage = (rewards - rewards.mean()) / rewards.std()
    change = (_all_log_probs(trainer, trajectory) - trajectory.log_probs).sum(dim=1).numpy()
    assert float(np.dot(advantage, change)) > 0.0
    assert stats["approx_kl"] >= 0.0 and 0.0 <= stats["clip_fraction"] <= 1.0


def test_is_clips_the_off_policy_minibatch_and_sf_stays_on_policy(tiny_unet) -> None:
    sf = DDPO(tiny_unet, brightness, DDPOConfig(method="sf", **SMALL))
    trajectory = sf.sample(torch.arange(16) % 10, seed=0)
    on_policy = sf.update(trajectory, brightness(trajectory.images, trajectory.labels))
    assert on_policy["approx_kl"] == pytest.approx(0.0, abs=1e-9)  # one step, taken after all log-probs
    torch.manual_seed(0)
    is_trainer = DDPO(ConditionalUNet(tiny_unet.config), brightness, DDPOConfig(method="is", **SMALL))
    trajectory = is_trainer.sample(torch.arange(16) % 10, seed=0)
    stats = is_trainer.update(trajectory, brightness(trajectory.images, trajectory.labels))
    assert stats["clip_fraction"] > 0.0  # the second minibatch sees the weights after the first step


@pytest.mark.parametrize("method", ["is", "sf"])
def test_ddpo_raises_the_reward_above_the_untrained_model_by_a_margin(tiny_unet, method) -> None:
    """Learning test: 10 epochs of 32 chains on brightness, fixed seed, same evaluation noise before and after."""
    config = DDPOConfig(
        method=method, samples_per_epoch=32, train_batch_size=16, num_steps=4, learning_rate=1e-3
    )
    trainer = DDPO(tiny_unet, brightness, config)
    labels = torch.arange(40) % 10
    before = brightness(trainer.sample(labels, seed=7).images, labels)
    trainer.learn(10 * config.samples_per_epoch)  # 10 epochs
    after = brightness(trainer.sample(labels, seed=7).images, labels)
    three_standard_errors = 3 * before.std() / np.sqrt(len(before))
    assert after.mean() - before.mean() > three_standard_errors


def test_only_steps_with_enough_policy_noise_are_trained(tiny_unet) -> None:
    trainer = DDPO(tiny_unet, brightness, DDPOConfig(num_steps=10))
    assert trainer.trainable_steps.tolist() == list(range(8))  # sigma_t 0.015 and 0.007 at the last two
    everything = DDPO(tiny_unet, brightness, DDPOConfig(num_steps=10, min_policy_std=0.0))
    assert everything.trainable_steps.tolist() == list(range(10))
    with pytest.raises(ConfigError, match="leaves no denoising step"):
        DDPO(tiny_unet, brightness, DDPOConfig(min_policy_std=5.0))


@pytest.mark.parametrize("method", ["rwr", "sparse_rwr"])
def test_rwr_weights_favour_high_rewards(tiny_unet, method) -> None:
    trainer = DDPO(tiny_unet, brightness, DDPOConfig(method=method, **SMALL))
    weights = trainer._rwr_weights(np.arange(8, dtype=float))
    assert weights.mean().item() == pytest.approx(1.0)
    assert torch.all(weights[1:] >= weights[:-1]) and weights[-1] > weights[0]
    if method == "sparse_rwr":
        assert set(weights.tolist()) <= {0.0, 4.0}  # top quarter kept


def test_learn_logs_grids_and_checkpoint_resume_continues_the_run(tiny_unet, tmp_path) -> None:
    trainer = DDPO(
        tiny_unet, make_reward("compressibility"), DDPOConfig(**SMALL), log_dir=tmp_path, grid_every=1
    )
    trainer.learn(2 * SMALL["samples_per_epoch"])  # 2 epochs
    trainer.close()
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["timesteps"] for r in rows] == [16, 32]
    assert {"episode_reward_mean", "episode_reward_std", "approx_kl", "clip_fraction", "fps"} <= set(rows[0])
    assert sorted(p.name for p in (tmp_path / "samples").iterdir()) == [
        "epoch_0000.png",
        "epoch_0001.png",
        "epoch_0002.png",
    ]
    resumed = DDPO.load(tmp_path / "checkpoint", make_reward("compressibility"), log_dir=tmp_path)
    assert resumed.epoch == 2 and resumed.num_timesteps == 32
    for name, tensor in tiny_unet.state_dict().items():
        assert torch.equal(tensor, resumed.unet.state_dict()[name])
    resumed.learn(16, reset_num_timesteps=False)
    resumed.close()
    rows = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert json.loads(rows[-1])["timesteps"] == 48


def test_same_seed_same_run(tiny_unet) -> None:
    state = {k: v.clone() for k, v in tiny_unet.state_dict().items()}
    first = DDPO(tiny_unet, brightness, DDPOConfig(**SMALL)).learn(1)
    copy = ConditionalUNet(tiny_unet.config)
    copy.load_state_dict(state)
    second = DDPO(copy, brightness, DDPOConfig(**SMALL)).learn(1)
    assert first.logger.history[0]["episode_reward_mean"] == second.logger.history[0]["episode_reward_mean"]
    for name, tensor in first.unet.state_dict().items():
        assert torch.equal(tensor, second.unet.state_dict()[name])


def test_config_errors_name_the_setting() -> None:
    with pytest.raises(ConfigError, match="unknown method 'ppo'"):
        DDPOConfig(method="ppo")
    with pytest.raises(ConfigError, match="timestep_fraction"):
        DDPOConfig(timestep_fraction=0.0)
    with pytest.raises(ConfigError, match="min_policy_std"):
        DDPOConfig(min_policy_std=-1.0)
    with pytest.raises(ConfigError, match="DDPO_SF trains on each batch once"):
        DDPOConfig(method="sf", num_inner_epochs=2)
    with pytest.raises(ConfigError, match="unknown DDPO settings"):
        DDPOConfig.from_dict({"lr": 1.0})


def test_a_checkpoint_of_an_older_build_resumes_its_sample_count(tiny_unet, tmp_path) -> None:
    """Before DDPO joined rl/contract.py its checkpoints counted samples as ``samples_seen``."""
    trainer = DDPO(tiny_unet, brightness, DDPOConfig(**SMALL)).learn(16)
    trainer.save(tmp_path / "old")
    metadata = json.loads((tmp_path / "old" / "metadata.json").read_text())
    metadata["samples_seen"] = metadata.pop("num_timesteps")
    del metadata["last_metrics"]
    (tmp_path / "old" / "metadata.json").write_text(json.dumps(metadata))
    resumed = DDPO.load(tmp_path / "old", brightness)
    assert (resumed.epoch, resumed.num_timesteps) == (1, 16)
    assert resumed.learn(16, reset_num_timesteps=False).history[-1]["timesteps"] == 32


def test_learn_follows_the_shared_trainer_surface(tiny_unet) -> None:
    trainer = DDPO(tiny_unet, brightness, DDPOConfig(**SMALL))
    seen: list[float] = []
    trainer.learn(64, callback=lambda model, row: seen.append(row["timesteps"]) or len(seen) < 2)
    assert seen == [16, 32] and trainer.num_timesteps == 32 and trainer.epoch == 2  # False stopped it
    assert [row["timesteps"] for row in trainer.history] == [16, 32]
    trainer.learn(16)  # the count restarts; the sampling seeds go on from epoch 2
    assert trainer.num_timesteps == 16 and trainer.epoch == 3
    with pytest.raises(ConfigError, match="whole number of samples"):
        trainer.learn(0)
