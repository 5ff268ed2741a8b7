"""How a torch classifier row of the zoo is prepared: BatchNorm statistics from real digits, a 10-class head fitted
by ridge regression, the `.pt2` export.

Why a module of its own: two builders use it in two interpreters. The transformers builder (bench/zoo.py) runs in
edgekit's environment; the timm builder (bench/zoo_timm.py) runs in the Python the user names, which has timm and
no edgekit. So this imports numpy only at the top and torch inside the functions, and nothing of edgekit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def fit_head(feats: np.ndarray, y: np.ndarray, classes: int = 10) -> tuple[np.ndarray, np.ndarray, float]:
    """Ridge regression of one-hot labels on features: (W (F, classes), b (classes,), train accuracy).

    Features are standardised and the ridge strength is picked on a held-out fifth; the
    standardisation is folded back into W and b so the head is one plain linear layer.
    """
    f = feats.reshape(len(feats), -1).astype(np.float64)
    mu, sd = f.mean(0), f.std(0) + 1e-6
    z = (f - mu) / sd
    t = np.eye(classes)[y] * 4.0 - 2.0  # +-2 targets: logits with a usable spread

    def solve(zz: np.ndarray, tt: np.ndarray, lam: float) -> np.ndarray:
        za = np.hstack([zz, np.ones((len(zz), 1))])
        reg = lam * np.eye(za.shape[1])
        reg[-1, -1] = 0.0
        return np.linalg.solve(za.T @ za + reg, za.T @ tt)

    cut = len(z) * 4 // 5
    best = max((10.0 ** p for p in range(-1, 5)),
               key=lambda lam: np.mean((np.hstack([z[cut:], np.ones((len(z) - cut, 1))])
                                        @ solve(z[:cut], t[:cut], lam)).argmax(1) == y[cut:]))
    wa = solve(z, t, best)
    w = wa[:-1] / sd[:, None]
    b = wa[-1] - mu @ w
    acc = float(np.mean((f @ w + b).argmax(1) == y))
    return w.astype(np.float32), b.astype(np.float32), acc


def set_bn_stats(model: Any, forward: Callable[[Any], Any], xt: Any, n: int) -> int:
    """Set every BatchNorm's running mean and variance to the batch statistics of the first N images of XT (a random
    init's 0/1 gives degenerate activations); FORWARD(x) runs the model. The number of BatchNorm layers."""
    import torch

    bns = [mod for mod in model.modules() if isinstance(mod, torch.nn.modules.batchnorm._BatchNorm)]
    if bns:
        for bn in bns:
            bn.reset_running_stats()
            bn.momentum = None  # cumulative average over the batches below
        model.train()
        with torch.no_grad():
            for i in range(0, n, 32):
                forward(xt[i:min(i + 32, n)])
    model.eval()
    return len(bns)


def export_pt2(module: Any, size: int, path: Any) -> str:
    """torch.export MODULE (NCHW images of SIZE x SIZE in) to PATH with a dynamic batch, as the bundled model has, or a
    static batch of 1 where the model specialises on it; which one, in words."""
    import torch

    try:
        ep = torch.export.export(module, (torch.zeros(2, 3, size, size),),
                                 dynamic_shapes=({0: torch.export.Dim("batch", max=1024)},))
        batch = "dynamic"
    except Exception as exc:  # noqa: BLE001 - any export failure: record it and fall back
        ep = torch.export.export(module, (torch.zeros(1, 3, size, size),))
        batch = f"static 1 (dynamic export failed: {type(exc).__name__})"
    torch.export.save(ep, path)
    return batch
