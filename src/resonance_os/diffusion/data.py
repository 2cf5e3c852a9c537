"""The pretraining images: scikit-learn's 8x8 handwritten digits, upscaled to 16x16 in [-1, 1].

The 1,797 digits (UCI optical recognition of handwritten digits, shipped inside scikit-learn) are
the only image set on this machine that needs no download; the class label is the "prompt".
"""

from __future__ import annotations

import torch
from torch.nn import functional as F


def load_digit_images(image_size: int = 16) -> tuple[torch.Tensor, torch.Tensor]:
    """Return ``(images, labels)``: images (1797, 1, image_size, image_size) in [-1, 1], labels (1797,)."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    pixels = torch.as_tensor(digits.images, dtype=torch.float32)[:, None] / 16.0
    if image_size != pixels.shape[-1]:
        pixels = F.interpolate(pixels, size=(image_size, image_size), mode="bilinear", align_corners=False)
    return pixels.clamp(0.0, 1.0) * 2.0 - 1.0, torch.as_tensor(digits.target, dtype=torch.long)
