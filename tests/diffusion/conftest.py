"""A tiny UNet (two levels, 8 channels) keeps every diffusion test to seconds."""

from __future__ import annotations

import pytest
import torch

from resonance_os.diffusion.unet import ConditionalUNet, UNetConfig

TINY = {"base_channels": 8, "channel_mults": [1, 2], "image_size": 8}


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


@pytest.fixture
def tiny_unet() -> ConditionalUNet:
    torch.manual_seed(0)
    return ConditionalUNet(UNetConfig(**TINY))
