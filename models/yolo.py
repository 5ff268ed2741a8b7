"""A pure-torch re-implementation of the Ultralytics YOLOv8 detection model (no ultralytics import).

Why re-implement it: edgekit must convert real YOLOv8 detectors, and their inference decode (DFL,
anchors, dist2bbox, the final Concat of boxes and sigmoid scores) is exactly the part of the graph
that breaks converters (onnx2tf fails at that final Concat on a real YOLOv8n). Bundling the same
graph lets the tests exercise it offline, without the ultralytics package or hub weights.

The modules, their names and their parameter layout follow ultralytics/nn/modules (Conv, Bottleneck,
C2f, SPPF, DFL, Detect) and yolov8.yaml, so `yolov8n()` has the real 3,157,200 parameters and its
state_dict keys mirror Ultralytics' (model.N.* there, backbone/neck attribute names here).

Inference output: (N, 4 + C, A) float32: centre-x, centre-y, width, height in input pixels, then the
C class probabilities (sigmoid); A = sum of H*W over the strides 8, 16, 32 (2100 at 320x320, 336 at
128x128). In training mode the model returns the three raw level maps (N, 4*16 + C, H, W).
Anchors are made from the feature maps' actual shapes on every call (no cached state), so an export
at a fixed input size holds them as constants: a static graph.
"""

from __future__ import annotations

import math

import torch
from torch import nn

REG_MAX = 16  # DFL bins per box side
STRIDES = (8, 16, 32)  # P3, P4, P5


def autopad(k: int, p: int | None = None) -> int:
    """'same' padding for an odd kernel."""
    return k // 2 if p is None else p


def make_divisible(x: float, divisor: int = 8) -> int:
    """Ultralytics' channel rounding: up to the next multiple of DIVISOR."""
    return int(math.ceil(x / divisor) * divisor)


class Conv(nn.Module):
    """Conv2d (no bias) + BatchNorm2d + SiLU: Ultralytics' basic block."""

    def __init__(self, c1: int, c2: int, k: int = 1, s: int = 1, p: int | None = None, g: int = 1) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, autopad(k, p), groups=g, bias=False)
        self.bn = nn.BatchNorm2d(c2, eps=1e-3, momentum=0.03)  # Ultralytics' BN settings
        self.act = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    """Two 3x3 Convs with an optional residual (only when the channel counts match)."""

    def __init__(self, c1: int, c2: int, shortcut: bool = True, e: float = 0.5) -> None:
        super().__init__()
        c_ = int(c2 * e)
        self.cv1 = Conv(c1, c_, 3, 1)
        self.cv2 = Conv(c_, c2, 3, 1)
        self.add = shortcut and c1 == c2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C2f(nn.Module):
    """CSP bottleneck with 2 convolutions: split, N chained Bottlenecks, concat every partial output."""

    def __init__(self, c1: int, c2: int, n: int = 1, shortcut: bool = False, e: float = 0.5) -> None:
        super().__init__()
        self.c = int(c2 * e)
        self.cv1 = Conv(c1, 2 * self.c, 1, 1)
        self.cv2 = Conv((2 + n) * self.c, c2, 1)
        self.m = nn.ModuleList(Bottleneck(self.c, self.c, shortcut, e=1.0) for _ in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = list(self.cv1(x).chunk(2, 1))
        y.extend(m(y[-1]) for m in self.m)
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    """Spatial pyramid pooling, fast: three chained 5x5 max-pools, concatenated."""

    def __init__(self, c1: int, c2: int, k: int = 5) -> None:
        super().__init__()
        c_ = c1 // 2
        self.cv1 = Conv(c1, c_, 1, 1)
        self.cv2 = Conv(c_ * 4, c2, 1, 1)
        self.m = nn.MaxPool2d(kernel_size=k, stride=1, padding=k // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = [self.cv1(x)]
        y.extend(self.m(y[-1]) for _ in range(3))
        return self.cv2(torch.cat(y, 1))


class DFL(nn.Module):
    """Distribution focal loss integral: softmax over the bins, then a fixed 1x1 conv with weights 0..c1-1
    (the expected bin), exactly as Ultralytics builds it (a frozen conv, which converters see)."""

    def __init__(self, c1: int = REG_MAX) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c1, 1, 1, bias=False).requires_grad_(False)
        self.conv.weight.data[:] = torch.arange(c1, dtype=torch.float).view(1, c1, 1, 1)
        self.c1 = c1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, _, a = x.shape
        return self.conv(x.view(b, 4, self.c1, a).transpose(2, 1).softmax(1)).view(b, 4, a)


def make_anchors(feats: list[torch.Tensor], strides: torch.Tensor | tuple[int, ...],
                 grid_cell_offset: float = 0.5) -> tuple[torch.Tensor, torch.Tensor]:
    """Anchor points (A, 2) as grid-cell centres (x, y) in feature-map units, and their strides (A, 1)."""
    anchor_points, stride_tensor = [], []
    dtype, device = feats[0].dtype, feats[0].device
    for i, stride in enumerate(strides):
        _, _, h, w = feats[i].shape
        sx = torch.arange(end=w, device=device, dtype=dtype) + grid_cell_offset
        sy = torch.arange(end=h, device=device, dtype=dtype) + grid_cell_offset
        sy, sx = torch.meshgrid(sy, sx, indexing="ij")
        anchor_points.append(torch.stack((sx, sy), -1).view(-1, 2))
        stride_tensor.append(torch.full((h * w, 1), float(stride), dtype=dtype, device=device))
    return torch.cat(anchor_points), torch.cat(stride_tensor)


def dist2bbox(distance: torch.Tensor, anchor_points: torch.Tensor, xywh: bool = True, dim: int = -1) -> torch.Tensor:
    """(left, top, right, bottom) distances from the anchors -> boxes (xywh or xyxy)."""
    lt, rb = distance.chunk(2, dim)
    x1y1 = anchor_points - lt
    x2y2 = anchor_points + rb
    if xywh:
        return torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), dim)
    return torch.cat((x1y1, x2y2), dim)


class Detect(nn.Module):
    """YOLOv8 detection head: per level a box branch (cv2, 4*reg_max DFL logits) and a class branch
    (cv3, C logits); at inference the Ultralytics decode, output (N, 4 + C, A)."""

    def __init__(self, nc: int = 80, ch: tuple[int, ...] = (), strides: tuple[int, ...] = STRIDES) -> None:
        super().__init__()
        self.nc = nc
        self.nl = len(ch)
        self.reg_max = REG_MAX
        self.no = nc + self.reg_max * 4
        self.stride = tuple(strides)  # Python ints, not a tensor: anchors become graph constants on export
        c2, c3 = max((16, ch[0] // 4, self.reg_max * 4)), max(ch[0], min(self.nc, 100))
        self.cv2 = nn.ModuleList(
            nn.Sequential(Conv(x, c2, 3), Conv(c2, c2, 3), nn.Conv2d(c2, 4 * self.reg_max, 1)) for x in ch)
        self.cv3 = nn.ModuleList(
            nn.Sequential(Conv(x, c3, 3), Conv(c3, c3, 3), nn.Conv2d(c3, self.nc, 1)) for x in ch)
        self.dfl = DFL(self.reg_max)

    def forward(self, x: list[torch.Tensor]) -> list[torch.Tensor] | torch.Tensor:
        x = [torch.cat((self.cv2[i](x[i]), self.cv3[i](x[i])), 1) for i in range(self.nl)]
        if self.training:
            return x
        return self._inference(x)

    def _inference(self, x: list[torch.Tensor]) -> torch.Tensor:
        """Ultralytics' decode, step for step: concat levels, split, DFL, dist2bbox, * strides, concat."""
        shape = x[0].shape  # BCHW
        x_cat = torch.cat([xi.view(shape[0], self.no, -1) for xi in x], 2)
        anchors, strides = (t.transpose(0, 1) for t in make_anchors(x, self.stride, 0.5))
        box, cls = x_cat.split((self.reg_max * 4, self.nc), 1)
        dbox = dist2bbox(self.dfl(box), anchors.unsqueeze(0), xywh=True, dim=1) * strides
        return torch.cat((dbox, cls.sigmoid()), 1)

    def bias_init(self, imgsz: int = 640) -> None:
        """Ultralytics' prior: box logits 1.0, class logits for ~5 objects per image at this input size."""
        for a, b, s in zip(self.cv2, self.cv3, self.stride, strict=True):
            a[-1].bias.data[:] = 1.0
            b[-1].bias.data[: self.nc] = math.log(5 / self.nc / (imgsz / s) ** 2)


class YOLOv8(nn.Module):
    """YOLOv8 detection model (yolov8.yaml): backbone to P5 + SPPF, FPN/PAN neck, Detect on P3-P5."""

    def __init__(self, nc: int = 80, width: float = 0.25, depth: float = 0.33, max_channels: int = 1024,
                 in_channels: int = 3) -> None:
        super().__init__()

        def ch(c: int) -> int:
            return make_divisible(min(c, max_channels) * width, 8)

        def n(k: int) -> int:
            return max(round(k * depth), 1) if k > 1 else k

        c64, c128, c256, c512, c1024 = ch(64), ch(128), ch(256), ch(512), ch(1024)
        self.nc = nc
        # backbone (yolov8.yaml layers 0-9)
        self.b0 = Conv(in_channels, c64, 3, 2)  # P1/2
        self.b1 = Conv(c64, c128, 3, 2)  # P2/4
        self.b2 = C2f(c128, c128, n(3), True)
        self.b3 = Conv(c128, c256, 3, 2)  # P3/8
        self.b4 = C2f(c256, c256, n(6), True)
        self.b5 = Conv(c256, c512, 3, 2)  # P4/16
        self.b6 = C2f(c512, c512, n(6), True)
        self.b7 = Conv(c512, c1024, 3, 2)  # P5/32
        self.b8 = C2f(c1024, c1024, n(3), True)
        self.b9 = SPPF(c1024, c1024, 5)
        # head (layers 10-22): top-down FPN, then bottom-up PAN
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.h12 = C2f(c1024 + c512, c512, n(3))
        self.h15 = C2f(c512 + c256, c256, n(3))  # P3/8-small
        self.h16 = Conv(c256, c256, 3, 2)
        self.h18 = C2f(c256 + c512, c512, n(3))  # P4/16-medium
        self.h19 = Conv(c512, c512, 3, 2)
        self.h21 = C2f(c512 + c1024, c1024, n(3))  # P5/32-large
        self.detect = Detect(nc, (c256, c512, c1024))

    def forward(self, x: torch.Tensor) -> list[torch.Tensor] | torch.Tensor:
        p3 = self.b4(self.b3(self.b2(self.b1(self.b0(x)))))
        p4 = self.b6(self.b5(p3))
        p5 = self.b9(self.b8(self.b7(p4)))
        h12 = self.h12(torch.cat([self.up(p5), p4], 1))
        h15 = self.h15(torch.cat([self.up(h12), p3], 1))
        h18 = self.h18(torch.cat([self.h16(h15), h12], 1))
        h21 = self.h21(torch.cat([self.h19(h18), p5], 1))
        return self.detect([h15, h18, h21])


def yolov8n(nc: int = 80) -> YOLOv8:
    """The real YOLOv8n scale (depth 0.33, width 0.25, max 1024 channels): 3,157,200 parameters at 80
    classes, in eval mode. Untrained: for graph-shape tests, not for boxes."""
    return YOLOv8(nc, width=0.25, depth=0.33, max_channels=1024).eval()


def yolov8_tiny(nc: int = 10, in_channels: int = 3) -> YOLOv8:
    """The bundled digits detector's scale (width 0.125, depth 0.33, at most 256 channels, so 8-16-32-32-32
    channels and 349,558 parameters at 10 classes): small enough to train on two CPU
    cores in minutes and to ship under 1.5 MB, in eval mode (the factory for its state_dict)."""
    return YOLOv8(nc, width=0.125, depth=0.33, max_channels=256, in_channels=in_channels).eval()


def build() -> YOLOv8:
    """`--model models.yolo:build`: the untrained digits-detector architecture (10 classes, 3 channels)."""
    return yolov8_tiny()
