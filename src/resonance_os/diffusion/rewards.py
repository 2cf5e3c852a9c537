"""Rewards on final samples: JPEG (in)compressibility and the classifier "aesthetic" stand-in.

- ``compressibility``: minus the JPEG file size in kB (Pillow, quality 95), as in the DDPO paper.
- ``incompressibility``: plus that size.
- ``aesthetic``: a small digit classifier's log-odds that the sample shows the digit it was
  conditioned on, ``log p(y | x) - log(1 - p(y | x))``. Like LAION's aesthetic predictor in the
  paper it is a learned network scoring images (here trained on the same data as the diffusion
  model), unbounded above; it is prompt-image alignment at our scale. The log-odds rather than the
  probability because the pretrained model's samples already get p = 0.9999 on average.
"""

from __future__ import annotations

import io
from collections.abc import Callable

import numpy as np
import torch
from PIL import Image

from resonance_os.diffusion.classifier import DigitClassifier
from resonance_os.rl.errors import ConfigError

RewardFn = Callable[[torch.Tensor, torch.Tensor], np.ndarray]
"""(images (B, 1, H, W) in [-1, 1], labels (B,)) -> rewards (B,) float64."""

REWARD_NAMES = ("compressibility", "incompressibility", "aesthetic")
JPEG_QUALITY = 95


def to_uint8(images: torch.Tensor) -> np.ndarray:
    """(B, 1, H, W) in [-1, 1] -> (B, H, W) uint8 grey levels."""
    pixels = ((images.detach().clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8)
    return pixels[:, 0].cpu().numpy()


def jpeg_kilobytes(images: torch.Tensor) -> np.ndarray:
    """Size of each image saved as a grey-scale JPEG at quality 95, in kB (1000 bytes)."""
    sizes = []
    for pixels in to_uint8(images):
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, format="JPEG", quality=JPEG_QUALITY)
        sizes.append(buffer.tell() / 1000.0)
    return np.asarray(sizes, dtype=np.float64)


def compressibility(images: torch.Tensor, labels: torch.Tensor) -> np.ndarray:
    return -jpeg_kilobytes(images)


def incompressibility(images: torch.Tensor, labels: torch.Tensor) -> np.ndarray:
    return jpeg_kilobytes(images)


def classifier_log_odds(classifier: DigitClassifier) -> RewardFn:
    """The aesthetic stand-in: log p(label | image) - log(1 - p(label | image)) under ``classifier``."""

    def reward(images: torch.Tensor, labels: torch.Tensor) -> np.ndarray:
        with torch.inference_mode():
            logits = classifier(images.clamp(-1, 1)).double()
        target = logits.gather(1, labels[:, None])[:, 0]
        others = logits.scatter(1, labels[:, None], float("-inf")).logsumexp(dim=1)
        return (target - others).numpy()

    return reward


def make_reward(name: str, classifier: DigitClassifier | None = None) -> RewardFn:
    """The reward called ``name`` (one of ``REWARD_NAMES``); ``aesthetic`` needs the classifier."""
    if name == "compressibility":
        return compressibility
    if name == "incompressibility":
        return incompressibility
    if name == "aesthetic":
        if classifier is None:
            raise ConfigError("the aesthetic reward needs the digit classifier; pass classifier=")
        return classifier_log_odds(classifier)
    raise ConfigError(f"unknown reward {name!r}; choose one of {list(REWARD_NAMES)}")
