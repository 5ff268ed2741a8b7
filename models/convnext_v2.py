"""ConvNeXt-V2 as transformers' ConvNextV2ForImageClassification defines it, written out so that the Edge TPU fix of
its global response norm (GRN) can be measured where transformers is not installed.

Module for module as transformers.models.convnextv2.modeling_convnextv2: a 4x4 stride-4 patch conv and a
channels-first LayerNorm; per stage a LayerNorm + 2x2 stride-2 conv downsampling (not in the first stage), then blocks
of a 7x7 depthwise conv, a permute to channels-last, LayerNorm, Linear 4x, GELU, GRN, Linear, a permute back and the
residual; the mean over H and W, a LayerNorm and the classifier. GRN is transformers' own:
`g = vector_norm(x, ord=2, dim=(1, 2)); x * weight * g / (mean_c(g) + 1e-6) + bias + x`: the SQRT in that norm is
where Edge TPU mapping stopped (33 of 378 ops on the atto config).

Weights are random (seeded); GRN's weight and bias, zero at transformers' init (GRN would be the identity), are drawn
non-zero so that validation sees what the norm does.
"""

from __future__ import annotations

import torch
from torch import nn

ATTO = {"depths": (2, 2, 6, 2), "hidden_sizes": (40, 80, 160, 320)}


class LayerNormChannelsFirst(nn.LayerNorm):
    """transformers' ConvNextV2LayerNorm(data_format="channels_first"): a permute, nn.LayerNorm, a permute back."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class GRN(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(1, 1, 1, dim))
        self.bias = nn.Parameter(torch.zeros(1, 1, 1, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = torch.linalg.vector_norm(x, ord=2, dim=(1, 2), keepdim=True)
        n = g / (g.mean(dim=-1, keepdim=True) + 1e-6)
        return self.weight * (x * n) + self.bias + x


class Block(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.layernorm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.grn = GRN(4 * dim)
        self.pwconv2 = nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.pwconv2(self.grn(self.act(self.pwconv1(self.layernorm(y)))))
        return x + y.permute(0, 3, 1, 2)


class ConvNextV2(nn.Module):
    def __init__(self, depths: tuple[int, ...] = ATTO["depths"], hidden_sizes: tuple[int, ...] = ATTO["hidden_sizes"],
                 num_classes: int = 1000) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, hidden_sizes[0], kernel_size=4, stride=4)
        self.patch_norm = LayerNormChannelsFirst(hidden_sizes[0], eps=1e-6)
        stages, prev = [], hidden_sizes[0]
        for k, (depth, dim) in enumerate(zip(depths, hidden_sizes, strict=True)):
            down = [LayerNormChannelsFirst(prev, eps=1e-6), nn.Conv2d(prev, dim, 2, 2)] if k else []
            stages.append(nn.Sequential(*down, *(Block(dim) for _ in range(depth))))
            prev = dim
        self.stages = nn.Sequential(*stages)
        self.layernorm = nn.LayerNorm(prev, eps=1e-12)  # ConvNextV2Config.layer_norm_eps
        self.classifier = nn.Linear(prev, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stages(self.patch_norm(self.patch(x)))
        return self.classifier(self.layernorm(x.mean([-2, -1])))


def build(num_classes: int = 1000, seed: int = 0, **config: tuple[int, ...]) -> ConvNextV2:
    """An eval-mode ConvNeXt-V2 (atto unless CONFIG says otherwise) with seeded random weights, GRN's included."""
    torch.manual_seed(seed)
    model = ConvNextV2(num_classes=num_classes, **{**ATTO, **config})
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, GRN):
                m.weight.uniform_(-0.5, 0.5)
                m.bias.uniform_(-0.1, 0.1)
    return model.eval()


__all__ = ["GRN", "ConvNextV2", "build"]
