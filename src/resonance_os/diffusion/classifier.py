"""A small CNN digit classifier: the learned judge behind the "aesthetic" (prompt-alignment) reward."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class DigitClassifier(nn.Module):
    """Logits over the 10 digits for images (B, 1, H, W) in [-1, 1]; H and W divisible by 4."""

    def __init__(self, image_size: int = 16, num_classes: int = 10) -> None:
        super().__init__()
        self.image_size = image_size
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.head = nn.Linear(32 * (image_size // 4) ** 2, num_classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        h = F.max_pool2d(F.relu(self.conv1(images)), 2)
        h = F.max_pool2d(F.relu(self.conv2(h)), 2)
        return self.head(h.flatten(1))


def train_classifier(
    images: torch.Tensor, labels: torch.Tensor, *, epochs: int = 15, seed: int = 0, holdout: float = 0.2
) -> tuple[DigitClassifier, float]:
    """Train on a shuffled (1 - holdout) share with light noise augmentation; return (model, holdout accuracy)."""
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    order = torch.randperm(images.shape[0], generator=generator)
    cut = int(images.shape[0] * (1 - holdout))
    train_idx, test_idx = order[:cut], order[cut:]
    model = DigitClassifier(images.shape[-1])
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    for _ in range(epochs):
        for batch in torch.randperm(cut, generator=generator).split(64):
            rows = train_idx[batch]
            noisy = images[rows] + 0.1 * torch.randn(images[rows].shape, generator=generator)
            loss = F.cross_entropy(model(noisy), labels[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval()
    with torch.inference_mode():
        accuracy = (model(images[test_idx]).argmax(1) == labels[test_idx]).float().mean().item()
    return model, accuracy
