"""Sample grids as PNG files (written to a temporary name and renamed)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from resonance_os.diffusion.rewards import to_uint8


def save_grid(images: torch.Tensor, path: str | os.PathLike[str], *, ncol: int = 10, scale: int = 4) -> Path:
    """Tile images (B, 1, H, W) in [-1, 1] into rows of ``ncol``, each pixel ``scale`` x ``scale``."""
    pixels = to_uint8(images)
    count, height, width = pixels.shape
    nrow = -(-count // ncol)
    pad = 2
    canvas = np.full((nrow * (height + pad) + pad, ncol * (width + pad) + pad), 255, dtype=np.uint8)
    for i, tile in enumerate(pixels):
        row, col = divmod(i, ncol)
        top, left = pad + row * (height + pad), pad + col * (width + pad)
        canvas[top : top + height, left : left + width] = tile
    canvas = canvas.repeat(scale, axis=0).repeat(scale, axis=1)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
    Image.fromarray(canvas).save(tmp, format="PNG")
    os.replace(tmp, target)
    return target
