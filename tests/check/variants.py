"""Models for the check tests, built with torch and exported as .pt2 the way users save theirs.

- `wide_pt2`: the bundled MNIST CNN with its hidden dense layer widened from 128 to 192 units. The new
  units have small random input weights and zero output weights, so the function (and accuracy) is the
  bundled model's and only the size grows: a pure size regression.
- `leaky_pt2`: the tiny CNN of edgekit.testing with a LeakyReLU after its first convolution: an
  activation the Edge TPU does not map, so the pre-flight partitions the graph there.
- `constant_calibration`: an .npz whose calibration samples are all-black images while its held-out
  samples are the first MNIST test digits, labelled: int8 calibrated on it loses accuracy, measured on
  the same digits `--calib mnist` validates on.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def _export(module, path: Path, example) -> Path:  # noqa: ANN001 - torch objects
    import torch

    batch = torch.export.Dim("batch", min=1, max=1024)
    ep = torch.export.export(module.eval(), (example,), dynamic_shapes=({0: batch},))
    torch.export.save(ep, str(path))
    return path


def wide_pt2(repo: Path, out: Path, hidden: int = 192) -> Path:
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location("mnist_cnn", repo / "models" / "mnist_cnn.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    MnistCNN = module.MnistCNN  # noqa: N806 - a class

    base = MnistCNN()
    base.load_state_dict(torch.load(repo / "models" / "mnist_cnn.state_dict.pt", weights_only=True))
    wide = MnistCNN()
    wide.classifier[1] = torch.nn.Linear(1600, hidden)
    wide.classifier[4] = torch.nn.Linear(hidden, 10)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        sd = base.state_dict()
        for name, p in wide.named_parameters():
            if name.startswith("features"):
                p.copy_(sd[name])
        w1, b1 = sd["classifier.1.weight"], sd["classifier.1.bias"]
        wide.classifier[1].weight.copy_(torch.cat([w1, torch.randn(hidden - 128, 1600, generator=g) * 0.01]))
        wide.classifier[1].bias.copy_(torch.cat([b1, torch.zeros(hidden - 128)]))
        w2 = sd["classifier.4.weight"]
        wide.classifier[4].weight.copy_(torch.cat([w2, torch.zeros(10, hidden - 128)], dim=1))
        wide.classifier[4].bias.copy_(sd["classifier.4.bias"])
    return _export(wide, out / "mnist_wide.pt2", torch.rand(2, 1, 28, 28, generator=g))


def leaky_pt2(out: Path) -> Path:
    import torch

    from edgekit.testing import tiny_cnn

    class Leaky(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = tiny_cnn.torch_module()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            m = self.inner
            x = torch.nn.functional.max_pool2d(torch.nn.functional.leaky_relu(m.c1(x), 0.1), 2)
            return m.fc(torch.relu(m.c2(x)).mean(dim=(2, 3)))

    return _export(Leaky(), out / "leaky.pt2", torch.from_numpy(tiny_cnn.sample_inputs(2)))


def constant_calibration(out: Path, n: int = 800, val: int = 200) -> Path:
    """N samples: the held-out ones (calibration.split_for_conversion's rule) are MNIST test digits, the rest black."""
    from edgekit.data.calibration import SPLIT_SEED, mnist_split

    _, _, x_test, y_test = mnist_split()
    n_val = min(val, max(1, round(n / 4)))
    order = np.random.default_rng(SPLIT_SEED).permutation(n)
    held_out = np.sort(order[n - n_val:])
    x = np.zeros((n, 28, 28), np.uint8)
    y = np.zeros(n, np.int64)
    x[held_out], y[held_out] = x_test[:n_val], y_test[:n_val]
    path = out / "constant-calibration.npz"
    np.savez(path, x=x, y=y)
    return path
