"""A compact class-conditional UNet that predicts the noise ``eps`` of a DDPM.

Plain PyTorch (no ``diffusers``): at 16x16 grey-scale the whole network is a few hundred thousand
weights, and owning its forward pass lets sampling and training share one batched call.

Conditioning: a sinusoidal timestep embedding plus a learned class embedding, added inside every
residual block. Class index ``num_classes`` is the "null" label used for classifier-free guidance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.nn import functional as F

from resonance_os.rl.config import JsonConfig
from resonance_os.rl.errors import ConfigError


@dataclass
class UNetConfig(JsonConfig):
    """Shape of the UNet. Defaults: 16x16x1 images, 10 classes, channels 16/32/32 (about 0.2 M weights)."""

    config_name = "UNet"

    image_size: int = 16
    in_channels: int = 1
    num_classes: int = 10
    base_channels: int = 16
    channel_mults: list[int] = field(default_factory=lambda: [1, 2, 2])
    groups: int = 4

    def __post_init__(self) -> None:
        levels = len(self.channel_mults)
        if levels < 1 or self.image_size % (2 ** (levels - 1)):
            raise ConfigError(
                f"image_size {self.image_size} must be divisible by 2**(len(channel_mults)-1) = "
                f"{2 ** (levels - 1)}; change image_size or channel_mults"
            )
        if any((self.base_channels * m) % self.groups for m in self.channel_mults):
            raise ConfigError(
                f"every level's channels (base_channels * mult) must be divisible by groups={self.groups}"
            )


def timestep_embedding(timesteps: torch.Tensor, dim: int) -> torch.Tensor:
    """Sinusoidal embedding of integer timesteps, shape (B,) -> (B, dim)."""
    half = dim // 2
    freqs = torch.exp(-math.log(10_000.0) * torch.arange(half, dtype=torch.float32) / half)
    angles = timesteps.float()[:, None] * freqs[None, :]
    return torch.cat([angles.sin(), angles.cos()], dim=1)


class ResBlock(nn.Module):
    """GroupNorm-SiLU-conv twice, with the condition embedding added between the convolutions."""

    def __init__(self, in_ch: int, out_ch: int, emb_dim: int, groups: int) -> None:
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, in_ch)
        self.conv1 = nn.Conv2d(in_ch, out_ch, 3, padding=1)
        self.emb = nn.Linear(emb_dim, out_ch)
        self.norm2 = nn.GroupNorm(groups, out_ch)
        self.conv2 = nn.Conv2d(out_ch, out_ch, 3, padding=1)
        self.skip = nn.Conv2d(in_ch, out_ch, 1) if in_ch != out_ch else nn.Identity()

    def forward(self, x: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.emb(emb)[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return h + self.skip(x)


class ConditionalUNet(nn.Module):
    """``eps = unet(x_t, t, label)``: x_t (B, C, H, W), t (B,) ints, label (B,) ints in [0, num_classes]."""

    def __init__(self, config: UNetConfig | None = None) -> None:
        super().__init__()
        self.config = config or UNetConfig()
        cfg = self.config
        widths = [cfg.base_channels * m for m in cfg.channel_mults]
        emb_dim = 4 * cfg.base_channels
        self.emb_dim = emb_dim
        self.time_mlp = nn.Sequential(nn.Linear(emb_dim, emb_dim), nn.SiLU(), nn.Linear(emb_dim, emb_dim))
        self.label_emb = nn.Embedding(cfg.num_classes + 1, emb_dim)
        self.conv_in = nn.Conv2d(cfg.in_channels, widths[0], 3, padding=1)
        self.down = nn.ModuleList()
        self.downsample = nn.ModuleList()
        prev = widths[0]
        for i, width in enumerate(widths):
            self.down.append(ResBlock(prev, width, emb_dim, cfg.groups))
            last = i == len(widths) - 1
            self.downsample.append(nn.Identity() if last else nn.Conv2d(width, width, 3, stride=2, padding=1))
            prev = width
        self.mid = ResBlock(prev, prev, emb_dim, cfg.groups)
        self.up = nn.ModuleList()
        self.upsample = nn.ModuleList()
        for i, width in reversed(list(enumerate(widths))):
            self.up.append(ResBlock(prev + width, width, emb_dim, cfg.groups))
            self.upsample.append(nn.Identity() if i == 0 else nn.Conv2d(width, widths[i - 1], 3, padding=1))
            prev = width if i == 0 else widths[i - 1]
        self.norm_out = nn.GroupNorm(cfg.groups, widths[0])
        self.conv_out = nn.Conv2d(widths[0], cfg.in_channels, 3, padding=1)

    @property
    def null_label(self) -> int:
        """The label index that means "no class" (classifier-free guidance's unconditional branch)."""
        return self.config.num_classes

    def forward(self, x: torch.Tensor, timesteps: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        emb = self.time_mlp(timestep_embedding(timesteps, self.emb_dim)) + self.label_emb(labels)
        h = self.conv_in(x)
        skips = []
        for block, down in zip(self.down, self.downsample):
            h = block(h, emb)
            skips.append(h)
            h = down(h)
        h = self.mid(h, emb)
        for block, up in zip(self.up, self.upsample):
            h = block(torch.cat([h, skips.pop()], dim=1), emb)
            if not isinstance(up, nn.Identity):
                h = up(F.interpolate(h, scale_factor=2.0, mode="nearest"))
        return self.conv_out(F.silu(self.norm_out(h)))
