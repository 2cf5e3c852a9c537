import numpy as np
import pytest
import torch

from resonance_os.diffusion.classifier import train_classifier
from resonance_os.diffusion.data import load_digit_images
from resonance_os.diffusion.rewards import jpeg_kilobytes, make_reward
from resonance_os.rl.errors import ConfigError


def test_jpeg_size_orders_flat_below_noise_and_the_two_rewards_are_opposite() -> None:
    flat = torch.zeros((1, 1, 16, 16))
    noise = torch.rand((1, 1, 16, 16), generator=torch.Generator().manual_seed(0)) * 2 - 1
    images = torch.cat([flat, noise])
    sizes = jpeg_kilobytes(images)
    assert sizes[0] < sizes[1] - 0.1
    labels = torch.zeros(2, dtype=torch.long)
    np.testing.assert_allclose(make_reward("compressibility")(images, labels), -sizes)
    np.testing.assert_allclose(make_reward("incompressibility")(images, labels), sizes)


def test_aesthetic_reward_prefers_the_prompted_digit() -> None:
    images, labels = load_digit_images(16)
    classifier, accuracy = train_classifier(images, labels, epochs=3, seed=0)
    assert accuracy > 0.85
    reward = make_reward("aesthetic", classifier)
    right = reward(images[:200], labels[:200])
    wrong = reward(images[:200], (labels[:200] + 1) % 10)
    assert right.mean() > 3.0 > -3.0 > wrong.mean()  # log-odds: p = 0.95 is +2.9
    with torch.no_grad():
        probs = torch.softmax(classifier(images[:5]), dim=1).gather(1, labels[:5, None])[:, 0].double()
    np.testing.assert_allclose(right[:5], torch.log(probs / (1 - probs)).numpy(), rtol=1e-4)


def test_reward_errors_name_the_fix() -> None:
    with pytest.raises(ConfigError, match="unknown reward 'sharpness'"):
        make_reward("sharpness")
    with pytest.raises(ConfigError, match="needs the digit classifier"):
        make_reward("aesthetic")
