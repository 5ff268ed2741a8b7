"""ShuffleNetV2 as torchvision defines it (torchvision.models.shufflenetv2), written out here because torchvision does
not import beside the CPU torch this project uses.

The same modules, in the same order, as torchvision's `ShuffleNetV2` / `InvertedResidual`: a 3x3 stride-2 stem and a
max-pool, three stages of inverted residual units (the first of each stage strided, with two branches; the others
split the channels in two), a 1x1 conv, global average pooling and a linear head. The channel shuffle is
torchvision's own: reshape to (N, groups, C / groups, H, W), transpose the two group axes, reshape back; through the
ONNX and TFLite converters it becomes a 5-D RESHAPE and TRANSPOSE, where Edge TPU mapping stopped (14 of 191 ops)
before edgekit.edgetpu.shuffle rewrote it.

Weights are random (`torch.manual_seed`): the model is an architecture for conversion and Edge TPU mapping checks,
not a trained classifier.
"""

from __future__ import annotations

import torch
from torch import nn

# torchvision's shufflenet_v2_x0_5 / x1_0 settings
STAGES_REPEATS = (4, 8, 4)
WIDTHS = {"x0_5": (24, 48, 96, 192, 1024), "x1_0": (24, 116, 232, 464, 1024)}


def channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    n, c, h, w = x.size()
    x = x.view(n, groups, c // groups, h, w)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(n, c, h, w)


def _depthwise(i: int, o: int, kernel: int, stride: int = 1, padding: int = 0) -> nn.Conv2d:
    return nn.Conv2d(i, o, kernel, stride, padding, bias=False, groups=i)


class InvertedResidual(nn.Module):
    def __init__(self, inp: int, oup: int, stride: int) -> None:
        super().__init__()
        self.stride = stride
        branch = oup // 2
        if stride > 1:
            self.branch1 = nn.Sequential(
                _depthwise(inp, inp, 3, stride, 1), nn.BatchNorm2d(inp),
                nn.Conv2d(inp, branch, 1, 1, 0, bias=False), nn.BatchNorm2d(branch), nn.ReLU(inplace=True))
        else:
            self.branch1 = nn.Sequential()
        self.branch2 = nn.Sequential(
            nn.Conv2d(inp if stride > 1 else branch, branch, 1, 1, 0, bias=False), nn.BatchNorm2d(branch),
            nn.ReLU(inplace=True),
            _depthwise(branch, branch, 3, stride, 1), nn.BatchNorm2d(branch),
            nn.Conv2d(branch, branch, 1, 1, 0, bias=False), nn.BatchNorm2d(branch), nn.ReLU(inplace=True))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
        return channel_shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    def __init__(self, width: str = "x0_5", num_classes: int = 1000,
                 stages_repeats: tuple[int, ...] = STAGES_REPEATS) -> None:
        super().__init__()
        channels = WIDTHS[width]
        inp = channels[0]
        self.conv1 = nn.Sequential(nn.Conv2d(3, inp, 3, 2, 1, bias=False), nn.BatchNorm2d(inp), nn.ReLU(inplace=True))
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        stages = []
        for repeats, oup in zip(stages_repeats, channels[1:4], strict=True):
            units = [InvertedResidual(inp, oup, 2)] + [InvertedResidual(oup, oup, 1) for _ in range(repeats - 1)]
            stages.append(nn.Sequential(*units))
            inp = oup
        self.stage2, self.stage3, self.stage4 = stages
        self.conv5 = nn.Sequential(nn.Conv2d(inp, channels[-1], 1, 1, 0, bias=False), nn.BatchNorm2d(channels[-1]),
                                   nn.ReLU(inplace=True))
        self.fc = nn.Linear(channels[-1], num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.conv1(x))
        x = self.stage4(self.stage3(self.stage2(x)))
        x = self.conv5(x)
        return self.fc(x.mean([2, 3]))


def build(width: str = "x0_5", num_classes: int = 1000, seed: int = 0) -> ShuffleNetV2:
    """An eval-mode ShuffleNetV2 with seeded random weights and BatchNorm statistics that are not the identity
    (so that folding them is exercised)."""
    torch.manual_seed(seed)
    model = ShuffleNetV2(width, num_classes)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.1, 0.1)
    return model.eval()


__all__ = ["ShuffleNetV2", "build", "channel_shuffle"]
