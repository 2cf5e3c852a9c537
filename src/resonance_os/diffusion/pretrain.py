"""Pretrain the class-conditional DDPM and the digit classifier, and cache them on disk.

``denoising_loss`` is the DDPM objective (Ho et al. 2020): ``|| eps - eps_theta(sqrt(a_t) x0 +
sqrt(1 - a_t) eps, t, y) ||^2`` with the label replaced by the null label 10% of the time, which
teaches the unconditional branch that classifier-free guidance needs. RWR fine-tunes on the same loss.

The cache lives at ``~/.cache/resonance_os/diffusion/`` (or ``$RESONANCE_CACHE_DIR/diffusion``):
one checkpoint folder for the UNet and one for the classifier. ``load_pretrained`` builds both on
first use (a few minutes on one core) and reads them afterwards.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.nn import functional as F

from resonance_os.diffusion.classifier import DigitClassifier, train_classifier
from resonance_os.diffusion.data import load_digit_images
from resonance_os.diffusion.ddim import linear_alphas_cumprod
from resonance_os.diffusion.unet import ConditionalUNet, UNetConfig
from resonance_os.rl.checkpoint import load_checkpoint, save_checkpoint
from resonance_os.rl.config import JsonConfig

CACHE_VERSION = "v1"
LABEL_DROPOUT = 0.1


@dataclass
class PretrainConfig(JsonConfig):
    """DDPM pretraining settings. Defaults: 3,000 AdamW steps of 64 images, lr 2e-3 with cosine decay."""

    config_name = "pretrain"

    steps: int = 3000
    batch_size: int = 64
    learning_rate: float = 2e-3
    classifier_epochs: int = 15
    seed: int = 0


def default_cache_dir() -> Path:
    """``$RESONANCE_CACHE_DIR/diffusion`` if set, else ``~/.cache/resonance_os/diffusion``."""
    root = os.environ.get("RESONANCE_CACHE_DIR")
    base = Path(root) if root else Path.home() / ".cache" / "resonance_os"
    return base / "diffusion"


def denoising_loss(
    unet: ConditionalUNet,
    images: torch.Tensor,
    labels: torch.Tensor,
    *,
    generator: torch.Generator | None = None,
    alphas_cumprod: torch.Tensor | None = None,
    label_dropout: float = LABEL_DROPOUT,
) -> torch.Tensor:
    """Per-sample DDPM noise-prediction loss, shape (B,), at uniformly drawn timesteps."""
    alphas = linear_alphas_cumprod() if alphas_cumprod is None else alphas_cumprod
    batch = images.shape[0]
    t = torch.randint(0, alphas.shape[0], (batch,), generator=generator)
    noise = torch.randn(images.shape, generator=generator)
    a_t = alphas[t].view(-1, 1, 1, 1)
    noisy = a_t.sqrt() * images + (1 - a_t).sqrt() * noise
    drop = torch.rand(batch, generator=generator) < label_dropout
    labels = torch.where(drop, torch.full_like(labels, unet.null_label), labels)
    return F.mse_loss(unet(noisy, t, labels), noise, reduction="none").mean(dim=(1, 2, 3))


def pretrain_unet(
    config: PretrainConfig,
    unet_config: UNetConfig | None = None,
    *,
    on_progress: Callable[[int, float], None] | None = None,
) -> ConditionalUNet:
    """Train a fresh UNet on the digits with the DDPM loss; ``on_progress(step, loss)`` every 500 steps."""
    torch.manual_seed(config.seed)
    generator = torch.Generator().manual_seed(config.seed)
    unet_config = unet_config or UNetConfig()
    images, labels = load_digit_images(unet_config.image_size)
    unet = ConditionalUNet(unet_config)
    optimizer = torch.optim.AdamW(unet.parameters(), lr=config.learning_rate, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=max(config.steps, 1))
    alphas = linear_alphas_cumprod()
    running = 0.0
    for step in range(1, config.steps + 1):
        rows = torch.randint(0, images.shape[0], (config.batch_size,), generator=generator)
        loss = denoising_loss(
            unet, images[rows], labels[rows], generator=generator, alphas_cumprod=alphas
        ).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        running = 0.98 * running + 0.02 * loss.item() if step > 1 else loss.item()
        if on_progress is not None and (step % 500 == 0 or step == config.steps):
            on_progress(step, running)
    unet.eval()
    return unet


@dataclass
class PretrainedModels:
    """The pretrained DDPM and the classifier behind the aesthetic reward."""

    unet: ConditionalUNet
    classifier: DigitClassifier
    classifier_accuracy: float


def build_pretrained(
    cache_dir: str | os.PathLike[str] | None = None,
    config: PretrainConfig | None = None,
    unet_config: UNetConfig | None = None,
    *,
    on_progress: Callable[[str], None] | None = None,
) -> PretrainedModels:
    """Pretrain both models and write them (atomically) under ``cache_dir``."""
    config = config or PretrainConfig()
    unet_config = unet_config or UNetConfig()
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    say = on_progress or (lambda message: None)
    images, labels = load_digit_images(unet_config.image_size)
    classifier, accuracy = train_classifier(images, labels, epochs=config.classifier_epochs, seed=config.seed)
    say(f"classifier: held-out accuracy {accuracy:.3f}")
    unet = pretrain_unet(
        config,
        unet_config,
        on_progress=lambda step, loss: say(f"ddpm step {step}/{config.steps}: loss {loss:.4f}"),
    )
    save_checkpoint(
        root / f"classifier-{CACHE_VERSION}",
        weights={"classifier": classifier.state_dict()},
        config={"image_size": unet_config.image_size},
        metadata={"algorithm": "DigitClassifier", "holdout_accuracy": accuracy},
    )
    save_checkpoint(
        root / f"unet-{CACHE_VERSION}",
        weights={"unet": unet.state_dict()},
        config={"unet": unet_config.to_dict(), "pretrain": config.to_dict()},
        metadata={"algorithm": "DDPM"},
    )
    return PretrainedModels(unet, classifier, accuracy)


def load_pretrained(
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    on_progress: Callable[[str], None] | None = None,
) -> PretrainedModels:
    """Read the cached models, pretraining them first (with default settings) when absent."""
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    unet_dir, classifier_dir = root / f"unet-{CACHE_VERSION}", root / f"classifier-{CACHE_VERSION}"
    if not (unet_dir.is_dir() and classifier_dir.is_dir()):
        if on_progress is not None:
            on_progress(f"no pretrained diffusion model in {root}; pretraining it now (a few minutes, once)")
        return build_pretrained(root, on_progress=on_progress)
    saved = load_checkpoint(unet_dir, expected_algorithm="DDPM")
    unet = ConditionalUNet(UNetConfig.from_dict(saved.config["unet"]))
    unet.load_state_dict(saved.weights["unet"])
    unet.eval()
    judged = load_checkpoint(classifier_dir, expected_algorithm="DigitClassifier")
    classifier = DigitClassifier(int(judged.config["image_size"]))
    classifier.load_state_dict(judged.weights["classifier"])
    classifier.eval()
    return PretrainedModels(unet, classifier, float(judged.metadata["holdout_accuracy"]))
