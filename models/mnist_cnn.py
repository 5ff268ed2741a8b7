"""The classic small MNIST CNN: the reference model edgekit's examples and tests convert.

Small enough to train in seconds on two CPU cores, yet a real convolutional network (conv,
ReLU, max-pool, dense, dropout), so every conversion route and int8 quantization is exercised
on the op mix edge models actually use.

Input: float32 (N, 1, 28, 28), pixels scaled to [0, 1], no mean/std. Output: 10 logits.
"""

from __future__ import annotations

import torch
from torch import nn


class MnistCNN(nn.Module):
    """conv 1->32 3x3, ReLU, maxpool 2; conv 32->64 3x3, ReLU, maxpool 2; dense 1600->128, ReLU,
    dropout; dense 128->10 (logits)."""

    def __init__(self, dropout: float = 0.25) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, kernel_size=3),  # 28 -> 26
            nn.ReLU(),
            nn.MaxPool2d(2),  # 26 -> 13
            nn.Conv2d(32, 64, kernel_size=3),  # 13 -> 11
            nn.ReLU(),
            nn.MaxPool2d(2),  # 11 -> 5
        )
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(64 * 5 * 5, 128),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(128, 10),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


def build() -> MnistCNN:
    """A fresh, untrained MnistCNN in eval mode: the factory for state_dict checkpoints
    (`--model models.mnist_cnn:build`), which hold weights but not the architecture."""
    return MnistCNN().eval()
