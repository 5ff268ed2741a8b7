"""Three tiny models, each the shape of a family in the model zoo (bench/zoo.py), with random weights.

The zoo converts full-size architectures in minutes each, so it stays out of `make test`; these carry the
same structures at a size that converts in seconds:
- `resnet_pt2`: a ResNet-style torch net (conv-BatchNorm-ReLU, basic blocks with residual Adds, a strided
  block with a 1x1 projection), exported to `.pt2` with a dynamic batch as the zoo exports transformers'
  ResNet: torch -> ONNX -> onnx2tf -> TFLite.
- `mobilenetv3_keras`: a MobileNetV3-style Keras model (hard-swish, depthwise convs, squeeze-and-excite with
  a hard sigmoid, an inverted residual): Keras -> ONNX and Keras -> SavedModel -> TFLite; hard-swish is the
  op the Edge TPU pre-flight stops at in the zoo's MobileNetV3Small.
- `efficientnet_keras`: a Keras model that starts, as keras.applications' EfficientNet does, with a
  Rescaling(1/255) and an adapted Normalization layer (whose statistics became extra ONNX graph inputs,
  issue 8), then swish MBConv blocks; it reads 0-255 pixels (`--mean 0 --std 1/255`, as the zoo feeds it).

BatchNorm statistics and gains are random but sane (as a trained net's are), so activations keep a usable
range; the calibration/validation set is real: MNIST test digits, resized and replicated to 3 channels.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np

SIZE = 32  # input height and width
CLASSES = 10


def digits_npz(path: Path, layout: str, n: int = 128) -> Path:
    """N real MNIST test digits at SIZE x SIZE x 3, uint8, in LAYOUT ("NCHW" or "NHWC"), with their labels."""
    from PIL import Image

    from edgekit.data.calibration import mnist_split

    _, _, x_test, y_test = mnist_split()
    x = np.stack([np.asarray(Image.fromarray(d).resize((SIZE, SIZE), Image.Resampling.BILINEAR)) for d in x_test[:n]])
    x = np.repeat(x[..., None], 3, axis=3)
    if layout == "NCHW":
        x = x.transpose(0, 3, 1, 2)
    np.savez(path, x=np.ascontiguousarray(x), y=np.asarray(y_test[:n], np.int64))
    return path


def resnet_pt2(path: Path) -> Path:
    """A ResNet-style net (3x32x32 -> 10 logits) as a torch .pt2 with a dynamic batch."""
    import torch

    torch.manual_seed(0)

    def cbr(cin: int, cout: int, stride: int = 1, relu: bool = True) -> torch.nn.Sequential:
        layers = [torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False), torch.nn.BatchNorm2d(cout)]
        return torch.nn.Sequential(*layers, *([torch.nn.ReLU()] if relu else []))

    class Block(torch.nn.Module):
        """ResNet's basic block: two 3x3 conv-BN, a residual Add (a 1x1 strided projection where the shape changes)."""

        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.a, self.b = cbr(cin, cout, stride), cbr(cout, cout, relu=False)
            self.skip = (torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 1, stride, bias=False),
                                             torch.nn.BatchNorm2d(cout)) if stride != 1 or cin != cout
                         else torch.nn.Identity())

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.b(self.a(x)) + self.skip(x))

    class TinyResNet(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = cbr(3, 8, 2)
            self.blocks = torch.nn.Sequential(Block(8, 8, 1), Block(8, 16, 2))
            self.fc = torch.nn.Linear(16, CLASSES)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(self.blocks(self.stem(x)).mean(dim=(2, 3)))

    model = TinyResNet().eval()
    with torch.no_grad():
        model.fc.weight.mul_(4.0)  # logits with a usable spread: top-1 is not decided by rounding noise
        for bn in (m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)):
            bn.running_mean.uniform_(-0.2, 0.2)
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.2, 0.2)
    ep = torch.export.export(model, (torch.rand(2, 3, SIZE, SIZE),),
                             dynamic_shapes=({0: torch.export.Dim("batch", max=1024)},))
    torch.export.save(ep, path)
    return path


def _keras_trained_look(model: object) -> None:
    """Random but sane BatchNorm statistics and gains (as a trained net has), seeded, and a head whose logits have
    a usable spread (top-1 is not decided by rounding noise)."""
    import keras

    rng = np.random.default_rng(0)
    for la in model.layers:  # type: ignore[attr-defined]
        if isinstance(la, keras.layers.BatchNormalization):
            c = la.gamma.shape[0]
            la.set_weights([rng.uniform(0.5, 1.5, c), rng.uniform(-0.2, 0.2, c), rng.uniform(-0.2, 0.2, c),
                            rng.uniform(0.5, 2.0, c)])
    head = model.layers[-1]  # type: ignore[attr-defined]
    head.set_weights([w * 4.0 for w in head.get_weights()])


def mobilenetv3_keras(path: Path) -> Path:
    """A MobileNetV3-style Keras model (32x32x3 in [0, 1] -> 10 logits) saved as .keras."""
    import keras
    from keras import layers

    keras.utils.set_random_seed(0)

    def hswish(x: object) -> object:
        return layers.Activation("hard_swish")(x)

    inp = keras.Input((SIZE, SIZE, 3))
    x = hswish(layers.BatchNormalization()(layers.Conv2D(8, 3, 2, padding="same", use_bias=False)(inp)))
    # an inverted residual: 1x1 expand, 3x3 depthwise, squeeze-and-excite, 1x1 project, Add
    y = hswish(layers.BatchNormalization()(layers.Conv2D(24, 1, use_bias=False)(x)))
    y = hswish(layers.BatchNormalization()(layers.DepthwiseConv2D(3, padding="same", use_bias=False)(y)))
    s = layers.GlobalAveragePooling2D(keepdims=True)(y)
    s = layers.Conv2D(8, 1, activation="relu")(s)
    s = layers.Conv2D(24, 1, activation="hard_sigmoid")(s)
    y = layers.Multiply()([y, s])
    y = layers.BatchNormalization()(layers.Conv2D(8, 1, use_bias=False)(y))
    x = layers.Add()([x, y])
    x = hswish(layers.BatchNormalization()(layers.DepthwiseConv2D(3, 2, padding="same", use_bias=False)(x)))
    x = layers.GlobalAveragePooling2D()(x)
    model = keras.Model(inp, layers.Dense(CLASSES)(x), name="tiny_mobilenetv3")
    _keras_trained_look(model)
    model.save(path)
    return path


def efficientnet_keras(path: Path, calib: np.ndarray) -> Path:
    """A Keras model that takes 0-255 pixels through Rescaling(1/255) and a Normalization adapted on CALIB (NHWC
    uint8), as keras.applications' EfficientNet does, then swish MBConv blocks -> 10 logits; saved as .keras."""
    import keras
    from keras import layers

    keras.utils.set_random_seed(0)
    norm = layers.Normalization(axis=-1)
    norm.adapt(calib.astype(np.float32) / 255.0)
    inp = keras.Input((SIZE, SIZE, 3))
    x = norm(layers.Rescaling(1.0 / 255.0)(inp))
    x = layers.Activation("swish")(layers.BatchNormalization()(layers.Conv2D(8, 3, 2, padding="same",
                                                                             use_bias=False)(x)))
    y = layers.Activation("swish")(layers.BatchNormalization()(layers.DepthwiseConv2D(3, padding="same",
                                                                                      use_bias=False)(x)))
    s = layers.GlobalAveragePooling2D(keepdims=True)(y)
    s = layers.Conv2D(4, 1, activation="swish")(s)
    s = layers.Conv2D(8, 1, activation="sigmoid")(s)
    y = layers.BatchNormalization()(layers.Conv2D(8, 1, use_bias=False)(layers.Multiply()([y, s])))
    x = layers.Add()([x, y])
    x = layers.Activation("swish")(layers.BatchNormalization()(layers.Conv2D(16, 1, use_bias=False)(x)))
    x = layers.GlobalAveragePooling2D()(x)
    model = keras.Model(inp, layers.Dense(CLASSES)(x), name="tiny_efficientnet")
    _keras_trained_look(model)
    with contextlib.redirect_stdout(io.StringIO()):
        model.save(path)
    return path
