import math

import numpy as np
import pytest
import torch
from scipy.stats import norm

from resonance_os.diffusion.ddim import (
    ddim_step_with_logprob,
    ddim_timesteps,
    linear_alphas_cumprod,
    sample_with_logprob,
    trajectory_log_prob,
)
from resonance_os.diffusion.unet import UNetConfig
from resonance_os.rl.errors import ConfigError


def test_stored_trajectory_rescored_under_unchanged_weights_gives_the_same_log_probs(tiny_unet) -> None:
    labels = torch.arange(12) % 10
    trajectory = sample_with_logprob(
        tiny_unet, labels, num_steps=5, guidance_scale=3.0, generator=torch.Generator().manual_seed(0)
    )
    assert trajectory.latents.shape == (12, 6, 1, 8, 8) and trajectory.log_probs.shape == (12, 5)
    for step in range(5):
        steps = torch.full((12,), step)
        again = trajectory_log_prob(tiny_unet, trajectory, steps, num_steps=5, guidance_scale=3.0)
        torch.testing.assert_close(again, trajectory.log_probs[:, step], rtol=0, atol=1e-5)
    # a minibatch in shuffled order, each chain at its own step, as DDPO trains
    rows = torch.tensor([7, 2, 11, 0])
    steps = torch.tensor([4, 0, 2, 3])
    again = trajectory_log_prob(tiny_unet, trajectory, steps, num_steps=5, guidance_scale=3.0, index=rows)
    torch.testing.assert_close(again, trajectory.log_probs[rows, steps], rtol=0, atol=1e-5)


def test_log_prob_is_the_gaussian_density_averaged_over_pixels() -> None:
    alphas = linear_alphas_cumprod()
    generator = torch.Generator().manual_seed(1)
    x_t = torch.randn((3, 1, 4, 4), generator=generator)
    eps = torch.randn((3, 1, 4, 4), generator=generator)
    t = torch.tensor([501, 101, 1])
    x_prev, log_prob = ddim_step_with_logprob(eps, t, x_t, alphas, 10, generator=generator)
    for i in range(3):
        a_t = alphas[t[i]].double()
        a_prev = alphas[max(int(t[i]) - 100, 0)].double()  # the last step's previous timestep clamps at 0
        x0 = ((x_t[i].double() - (1 - a_t).sqrt() * eps[i].double()) / a_t.sqrt()).clamp(-1, 1)
        std = math.sqrt((1 - a_prev) / (1 - a_t) * (1 - a_t / a_prev))
        mean = a_prev.sqrt() * x0 + math.sqrt(1 - a_prev - std**2) * eps[i].double()
        expected = norm.logpdf(x_prev[i].double().numpy(), loc=mean.numpy(), scale=std).mean()
        assert log_prob[i].item() == pytest.approx(expected, rel=1e-4)


def test_timesteps_are_descending_and_the_chain_ends_at_timestep_one() -> None:
    assert ddim_timesteps(10).tolist() == [901, 801, 701, 601, 501, 401, 301, 201, 101, 1]


def test_sampling_is_seeded(tiny_unet) -> None:
    labels = torch.tensor([1, 2, 3])
    first = sample_with_logprob(tiny_unet, labels, num_steps=3, generator=torch.Generator().manual_seed(5))
    second = sample_with_logprob(tiny_unet, labels, num_steps=3, generator=torch.Generator().manual_seed(5))
    assert torch.equal(first.latents, second.latents)
    assert np.isfinite(first.log_probs.numpy()).all()


def test_unet_config_names_an_impossible_shape() -> None:
    with pytest.raises(ConfigError, match="image_size 10 must be divisible"):
        UNetConfig(image_size=10, channel_mults=[1, 2, 2])
