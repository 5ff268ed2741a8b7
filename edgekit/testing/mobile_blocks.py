"""Small torch models with the structure of the mobile backbones of 2024-26 (issue 41), for tests and bench scripts.

timm does not import beside the CPU torch edgekit installs (it imports torchvision), so the patterns those
backbones put in front of a converter are written here in small, with timm's layer order:
- `mobileone`: MobileOne's block as it leaves training, before re-parameterization: four conv-BN branches, a 1x1
  conv-BN scale branch and an identity BatchNorm, summed, then ReLU; depthwise 3x3 and pointwise 1x1 blocks in
  turn. `reparameterize()` folds each block into one conv with a bias (MobileOne's, RepVGG's deploy form); `GAIN`
  sets every BatchNorm's weight, so that activations grow block by block as an untrained one's do.
- `efficientvit`: EfficientViT's ReLU linear attention (timm's LiteMLA): a 1x1 qkv conv, ReLU on q and k, v padded
  with a column of ones, (q @ (k^T @ v)) and the normalizer `out[..., :-1] / (out[..., -1:] + eps)`: a division by
  a tensor that is eps wherever q's ReLU is all zero.
- `mobilevitv2`: MobileViTv2's block (timm's MobileVitV2Block) on a 7 x 7 map, which 2 x 2 patches do not tile:
  resized to 8 x 8 and back with `F.interpolate(..., align_corners=True)` around the unfold and fold, and between
  them the separable self-attention: GroupNorm(1) on the patches, a 1x1 conv giving one context score per patch,
  softmax over the patches, the context vector (sum of scores * keys), ReLU(values) times it, a 1x1 out conv; a
  GroupNorm(1) before the feed-forward.
- `efficientformerv2`: EfficientFormerV2's attention block (timm's Attention2d in an EfficientFormerV2Block) on a
  4 x 4 map: q, k, v as 1x1 conv-BN, (q @ k) * scale plus a learned relative-position bias (a constant at
  inference), talking heads (1x1 convs across the heads) around a softmax over the keys, attn @ v, a depthwise
  v_local added, GELU, a 1x1 proj, layer scale; then its MLP (1x1, depthwise 3x3 and 1x1 conv-BN, GELU) with layer
  scale. Two of its products have no constant operand (q @ k, attn @ v), which no Edge TPU op computes.
Each builder seeds torch and returns the model in eval mode; `example(model)` is an input it takes.
"""

from __future__ import annotations

from typing import Any

INPUT = (1, 3, 32, 32)


def mobileone(depth: int = 6, channels: int = 16, gain: float = 1.0, branches: int = 4) -> Any:
    """A MobileOne-style network: a stem block, DEPTH pairs of (depthwise 3x3, pointwise 1x1) blocks, a linear head."""
    import torch
    from torch import nn

    class ConvBN(nn.Sequential):
        def __init__(self, cin: int, cout: int, k: int, stride: int, groups: int) -> None:
            super().__init__(nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout))

    def fused(conv: Any, bn: Any, k: int, cin_per_group: int) -> tuple[Any, Any]:
        """Kernel (k x k) and bias of BN(conv(x)), or of BN(x) where CONV is None (the identity branch)."""
        if conv is None:
            w = torch.zeros(bn.num_features, cin_per_group, k, k)
            w[torch.arange(bn.num_features), torch.arange(bn.num_features) % cin_per_group, k // 2, k // 2] = 1.0
        else:
            pad = (k - conv.kernel_size[0]) // 2
            w = nn.functional.pad(conv.weight, [pad] * 4)
        std = (bn.running_var + bn.eps).sqrt()
        return w * (bn.weight / std).reshape(-1, 1, 1, 1), bn.bias - bn.running_mean * bn.weight / std

    class MobileOneBlock(nn.Module):
        def __init__(self, cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, n: int = branches) -> None:
            super().__init__()
            self.k, self.groups, self.cin = k, groups, cin
            self.convs = nn.ModuleList(ConvBN(cin, cout, k, stride, groups) for _ in range(n))
            self.scale: Any = ConvBN(cin, cout, 1, stride, groups) if k > 1 else None
            self.skip: Any = nn.BatchNorm2d(cout) if cin == cout and stride == 1 else None
            self.act = nn.ReLU()
            self.reparam: nn.Conv2d | None = None

        def forward(self, x: Any) -> Any:
            if self.reparam is not None:
                return self.act(self.reparam(x))
            y = sum(c(x) for c in self.convs)
            if self.scale is not None:
                y = y + self.scale(x)
            if self.skip is not None:
                y = y + self.skip(x)
            return self.act(y)

        def reparameterize(self) -> None:
            """Fold every branch into one conv with a bias (exact in float, to rounding)."""
            if self.reparam is not None:
                return
            branches: list[Any] = list(self.convs)
            parts = [fused(c[0], c[1], self.k, self.cin // self.groups) for c in branches]
            if self.scale is not None:
                parts.append(fused(self.scale[0], self.scale[1], self.k, self.cin // self.groups))
            if self.skip is not None:
                parts.append(fused(None, self.skip, self.k, self.cin // self.groups))
            first = branches[0][0]
            conv: Any = nn.Conv2d(self.cin, first.out_channels, self.k, first.stride, self.k // 2, groups=self.groups)
            with torch.no_grad():
                conv.weight.copy_(sum(w for w, _ in parts))
                conv.bias.copy_(sum(b for _, b in parts))
            self.reparam = conv
            del self.convs, self.scale, self.skip
            self.convs, self.scale, self.skip = nn.ModuleList(), None, None

    class MobileOneNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = MobileOneBlock(3, channels, 3, 2, n=1)
            blocks: list[nn.Module] = []
            for _ in range(depth):
                blocks += [MobileOneBlock(channels, channels, 3, 1, groups=channels), MobileOneBlock(channels,
                                                                                                     channels, 1)]
            self.blocks = nn.Sequential(*blocks)
            self.head = nn.Linear(channels, 10)

        def forward(self, x: Any) -> Any:
            return self.head(self.blocks(self.stem(x)).mean((2, 3)))

    torch.manual_seed(0)
    net = MobileOneNet()
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.fill_(gain)
    return net.eval()


def efficientvit(channels: int = 24, dim: int = 8, eps: float = 1e-5) -> Any:
    """A stem conv, one EfficientViT ReLU-linear-attention block (LiteMLA) with its residual, a linear head."""
    import torch
    from torch import nn

    class LiteMLA(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.heads = channels // dim
            self.qkv = nn.Conv2d(channels, 3 * channels, 1, bias=False)
            self.proj = nn.Sequential(nn.Conv2d(channels, channels, 1, bias=False), nn.BatchNorm2d(channels))

        def forward(self, x: Any) -> Any:
            b, _, h, w = x.shape
            qkv = self.qkv(x).reshape(b, -1, 3 * dim, h * w).transpose(-1, -2)
            q, k, v = qkv.chunk(3, dim=-1)
            q, k = torch.relu(q), torch.relu(k)
            v = nn.functional.pad(v, (0, 1), mode="constant", value=1.0)
            out = q @ (k.transpose(-1, -2) @ v)
            out = out[..., :-1] / (out[..., -1:] + eps)  # the normalizer: eps wherever relu(q) is all zero
            return self.proj(out.transpose(-1, -2).reshape(b, -1, h, w))

    class Residual(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = LiteMLA()

        def forward(self, x: Any) -> Any:
            return x + self.attn(x)

    torch.manual_seed(0)
    return _classifier(channels, nn.Hardswish(), Residual()).eval()


def mobilevitv2(channels: int = 24, patch: int = 2) -> Any:
    """A stem conv, one MobileViTv2 block (unfold into patches, separable attention, a feed-forward, fold back)."""
    import torch
    from torch import nn

    class SeparableAttention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkv = nn.Conv2d(channels, 1 + 2 * channels, 1)
            self.out = nn.Conv2d(channels, channels, 1)

        def forward(self, x: Any) -> Any:  # x: [B, C, P, N] (P pixels of a patch, N patches)
            q, k, v = self.qkv(x).split([1, channels, channels], dim=1)
            scores = q.softmax(dim=-1)
            context = (k * scores).sum(dim=-1, keepdim=True)
            return self.out(torch.relu(v) * context.expand_as(v))

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.down = nn.Conv2d(channels, channels, 3, 2)
            self.local = nn.Sequential(nn.Conv2d(channels, channels, 3, 1, 1, groups=channels),
                                       nn.BatchNorm2d(channels), nn.SiLU(),
                                       nn.Conv2d(channels, channels, 1, bias=False))
            self.norm1 = nn.GroupNorm(1, channels)
            self.attn = SeparableAttention()
            self.norm2 = nn.GroupNorm(1, channels)
            self.ffn = nn.Sequential(nn.Conv2d(channels, 2 * channels, 1), nn.SiLU(), nn.Conv2d(2 * channels,
                                                                                                channels, 1))
            self.proj = nn.Sequential(nn.Conv2d(channels, channels, 1, bias=False), nn.BatchNorm2d(channels))

        def forward(self, x: Any) -> Any:
            x = self.down(x)  # 16 x 16 -> 7 x 7: a map the patches do not tile, as MobileViTv2's last stage at 224
            b, c, h0, w0 = x.shape
            h, w = -(-h0 // patch) * patch, -(-w0 // patch) * patch
            y = nn.functional.interpolate(self.local(x), size=(h, w), mode="bilinear", align_corners=True)
            # unfold: [B, C, H, W] -> [B, C, P, N]
            y = y.reshape(b, c, h // patch, patch, w // patch, patch).permute(0, 1, 3, 5, 2, 4)
            y = y.reshape(b, c, patch * patch, -1)
            y = y + self.attn(self.norm1(y))
            y = y + self.ffn(self.norm2(y))
            y = y.reshape(b, c, patch, patch, h // patch, w // patch).permute(0, 1, 4, 2, 5, 3).reshape(b, c, h, w)
            return self.proj(nn.functional.interpolate(y, size=(h0, w0), mode="bilinear", align_corners=True))

    torch.manual_seed(0)
    net = _classifier(channels, nn.SiLU(), Block())
    with torch.no_grad():  # norm weights away from their initial ones, as training leaves them
        for m in net.modules():
            if isinstance(m, nn.GroupNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    return net.eval()


def efficientformerv2(channels: int = 32, heads: int = 4, key_dim: int = 8, side: int = 4) -> Any:
    """A stem conv to SIDE x SIDE, one EfficientFormerV2 attention block and its MLP, a linear head."""
    import torch
    from torch import nn

    def conv_bn(cin: int, cout: int, k: int = 1, groups: int = 1) -> Any:
        return nn.Sequential(nn.Conv2d(cin, cout, k, 1, k // 2, groups=groups), nn.BatchNorm2d(cout))

    n, d = side * side, 2 * key_dim  # tokens; value dim per head (attn_ratio 2)

    class Attention2d(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.k = conv_bn(channels, heads * key_dim), conv_bn(channels, heads * key_dim)
            self.v = conv_bn(channels, heads * d)
            self.v_local = conv_bn(heads * d, heads * d, 3, groups=heads * d)
            self.talking_head1, self.talking_head2 = nn.Conv2d(heads, heads, 1), nn.Conv2d(heads, heads, 1)
            self.bias = nn.Parameter(torch.randn(heads, n, n) * 0.1)  # timm gathers it by relative position
            self.act, self.proj = nn.GELU(), conv_bn(heads * d, channels)

        def forward(self, x: Any) -> Any:
            b = x.shape[0]
            q = self.q(x).reshape(b, heads, -1, n).permute(0, 1, 3, 2)
            k = self.k(x).reshape(b, heads, -1, n)
            v = self.v(x)
            v_local = self.v_local(v)
            v = v.reshape(b, heads, -1, n).permute(0, 1, 3, 2)
            attn = self.talking_head1((q @ k) * key_dim ** -0.5 + self.bias)
            attn = self.talking_head2(attn.softmax(dim=-1))
            y = (attn @ v).transpose(2, 3).reshape(b, heads * d, side, side) + v_local
            return self.proj(self.act(y))

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = Attention2d()
            hidden = 2 * channels
            self.mlp = nn.Sequential(conv_bn(channels, hidden), nn.GELU(), conv_bn(hidden, hidden, 3, hidden),
                                     nn.GELU(), conv_bn(hidden, channels))
            self.ls1, self.ls2 = nn.Parameter(torch.full((channels, 1, 1), 0.5)), nn.Parameter(
                torch.full((channels, 1, 1), 0.5))
            self.down = nn.Conv2d(channels, channels, 3, 16 // side, 1)  # the stem's 16 x 16 to SIDE x SIDE

        def forward(self, x: Any) -> Any:
            x = self.down(x)
            x = x + self.ls1 * self.attn(x)
            return x + self.ls2 * self.mlp(x)

    torch.manual_seed(0)
    return _classifier(channels, nn.GELU(), Block()).eval()


def _classifier(channels: int, act: Any, block: Any) -> Any:
    """A stem (3x3 conv stride 2, BatchNorm, ACT), BLOCK, global average pooling and a 10-class linear head."""
    from torch import nn

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, channels, 3, 2, 1), nn.BatchNorm2d(channels), act)
            self.block = block
            self.head = nn.Linear(channels, 10)

        def forward(self, x: Any) -> Any:
            return self.head(self.block(self.stem(x)).mean((2, 3)))

    return Net()


def example(model: Any, batch: int = 1) -> Any:
    """An input MODEL takes (seeded)."""
    import torch

    return torch.randn(batch, *INPUT[1:], generator=torch.Generator().manual_seed(1))


def export(model: Any, path: Any) -> Any:
    """MODEL saved as a torch.export program at PATH (what edgekit converts), at INPUT's shape."""
    import torch

    torch.export.save(torch.export.export(model, (example(model),)), str(path))
    return path


__all__ = ["INPUT", "efficientformerv2", "efficientvit", "example", "export", "mobileone", "mobilevitv2"]
