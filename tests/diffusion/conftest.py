"""A tiny UNet (two levels, 8 channels) keeps every diffusion test to seconds."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from resonance_os.diffusion.pretrain import PretrainConfig, build_pretrained
from resonance_os.diffusion.unet import ConditionalUNet, UNetConfig

TINY = {"base_channels": 8, "channel_mults": [1, 2], "image_size": 8}


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


@pytest.fixture
def tiny_unet() -> ConditionalUNet:
    torch.manual_seed(0)
    return ConditionalUNet(UNetConfig(**TINY))


@pytest.fixture(scope="session")
def tiny_cache(tmp_path_factory) -> Path:
    """A cache holding a briefly pretrained tiny DDPM (8x8) and classifier, as `ddpo pretrain` writes it."""
    cache = tmp_path_factory.mktemp("cache")
    build_pretrained(cache, PretrainConfig(steps=30, classifier_epochs=1), UNetConfig(**TINY))
    return cache
