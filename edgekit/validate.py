"""Reference vs artifact on the same held-out inputs.

Every artifact, quantized ones included (unlike Optimum, which skips quantized exports), is run
through its real runtime on held-out samples and compared with the source model: top-1 agreement,
cosine similarity, max absolute error, and accuracy where labels exist. NaN or inf outputs always
fail (some converter paths produce them silently).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edgekit.artifact import Fidelity
from edgekit.precisions import thresholds as default_thresholds
from edgekit.runtimes import runtime_for_format
from edgekit.steps.base import to_layout


@dataclass
class Reference:
    """Held-out inputs (in the source's layout), the source model's outputs on them, and labels."""

    x: np.ndarray
    y_ref: np.ndarray
    labels: np.ndarray | None
    layout: str
    inputs_name: str  # where the inputs came from: "mnist-test", "random", ...


def run_artifact(path: Path, fmt: str, x: np.ndarray, layout_from: str, layout_to: str) -> np.ndarray:
    """First output of the artifact on every sample of X (float in, dequantized float out)."""
    runtime = runtime_for_format(fmt)()
    runtime.load(path)
    try:
        spec = runtime.inputs[0]
        xs = to_layout(x, layout_from, layout_to).astype(np.float32)
        batch = spec.shape[0] if spec.shape and spec.shape[0] > 0 else 64
        outs = []
        for i in range(0, len(xs), batch):
            chunk = xs[i:i + batch]
            n = len(chunk)
            if n < batch and spec.shape and spec.shape[0] > 0:  # static batch: pad the last chunk
                chunk = np.concatenate([chunk, np.repeat(chunk[-1:], batch - n, axis=0)])
            y = runtime.run_float({spec.name: chunk})[runtime.outputs[0].name]
            outs.append(np.asarray(y, dtype=np.float32)[:n])
        y_all = np.concatenate(outs)
    finally:
        runtime.close()
    if y_all.ndim == 4 and layout_from != layout_to:  # image-shaped outputs come back in the artifact's layout
        y_all = to_layout(y_all, layout_to, layout_from)
    return y_all


def compare(ref: Reference, y: np.ndarray, precision: str, thresholds: dict[str, float] | None = None) -> Fidelity:
    """Fidelity of outputs Y against the reference, judged by the precision's thresholds."""
    th = default_thresholds(precision)
    th.update(thresholds or {})
    failures: list[str] = []
    n = len(ref.x)
    if y.shape != ref.y_ref.shape:
        failures.append(f"output shape {list(y.shape)} differs from the source's {list(ref.y_ref.shape)}")
        return Fidelity(samples=n, top1_agreement=None, cosine=float("nan"), max_abs_error=float("nan"),
                        passed=False, thresholds=th, failures=failures, inputs=ref.inputs_name)
    finite = bool(np.isfinite(y).all())
    a = ref.y_ref.reshape(n, -1).astype(np.float64)
    b = np.nan_to_num(y.reshape(n, -1).astype(np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    denom = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    cos = np.where(denom > 0, (a * b).sum(axis=1) / np.where(denom > 0, denom, 1), 1.0)
    cosine = float(cos.mean())
    max_abs = float(np.abs(a - b).max()) if finite else float("inf")
    top1 = acc = ref_acc = None
    classifier = ref.y_ref.ndim == 2 and ref.y_ref.shape[1] > 1
    if classifier:
        p_ref, p = ref.y_ref.argmax(1), b.argmax(1)
        top1 = float((p_ref == p).mean())
        if ref.labels is not None:
            acc = float((p == ref.labels).mean())
            ref_acc = float((p_ref == ref.labels).mean())
    if not finite:
        failures.append("outputs contain NaN or inf")
    if top1 is not None and top1 < th["top1_agreement"]:
        failures.append(f"top-1 agreement {top1:.2%} < {th['top1_agreement']:.2%}")
    if cosine < th["cosine"]:
        failures.append(f"cosine similarity {cosine:.5f} < {th['cosine']}")
    if acc is not None and ref_acc is not None and "accuracy_drop" in th and ref_acc - acc > th["accuracy_drop"]:
        failures.append(f"accuracy {acc:.2%} is {100 * (ref_acc - acc):.2f} points below the source's {ref_acc:.2%}")
    return Fidelity(samples=n, top1_agreement=top1, cosine=cosine, max_abs_error=max_abs, accuracy=acc,
                    reference_accuracy=ref_acc, passed=not failures, thresholds=th, failures=failures,
                    inputs=ref.inputs_name)


def validate(path: Path, fmt: str, layout: str, precision: str, ref: Reference,
             thresholds: dict[str, float] | None = None) -> Fidelity:
    """Run the artifact on the reference inputs and judge it."""
    y = run_artifact(path, fmt, ref.x, ref.layout, layout)
    return compare(ref, y, precision, thresholds)
