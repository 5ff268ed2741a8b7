"""Reference vs artifact on the same held-out inputs.

`check_artifact` is what conversion calls: it reads the artifact's I/O and runs it in ONE child
process (edgekit.isolate), so a runtime that aborts natively on a freshly written model fails that
artifact, not edgekit; where a runtime has several CPU kernel paths (LiteRT: XNNPACK, then its
builtin kernels) the next is tried when one fails, and the record says which one validated it.

Every artifact, quantized ones included (unlike Optimum, which skips quantized exports), is run
through its real runtime on held-out samples and compared with the source model: top-1 agreement,
cosine similarity, max absolute error, and accuracy where labels exist. NaN or inf outputs always
fail (some converter paths produce them silently).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.artifact import Fidelity, TensorSpec
from edgekit.errors import RuntimeFailure
from edgekit.precisions import thresholds as default_thresholds
from edgekit.runtimes import Runtime, runtime_for_format
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
        return _outputs(runtime, x, layout_from, layout_to)
    finally:
        runtime.close()


def _outputs(runtime: Runtime, x: np.ndarray, layout_from: str, layout_to: str) -> np.ndarray:
    """First output of a loaded RUNTIME on every sample of X, in X's layout where it is image-shaped."""
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


@dataclass
class ArtifactCheck:
    """What checking an artifact found: its I/O as its runtime reads them, its fidelity, the kernels that ran it."""

    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    fidelity: Fidelity
    kernels: str | None = None  # LiteRT on the CPU: "xnnpack" or "builtin"; None for other runtimes
    notes: list[str] = field(default_factory=list)  # e.g. why the builtin kernels validated it, not XNNPACK


def check_artifact(path: Path, fmt: str, layout: str, precision: str, ref: Reference, *, isolate: bool = True,
                   thresholds: dict[str, float] | None = None) -> ArtifactCheck:
    """Read PATH's I/O specs and validate it against REF, in one child process unless ISOLATE is False.

    A runtime that crashes (a signal) or fails on the artifact raises RuntimeFailure naming the runtime,
    the file and what it said: a clean error the caller records as this artifact's failure. Where the
    runtime has more than one CPU kernel path (`kernel_paths`: LiteRT's XNNPACK, then its builtin kernels)
    a path that fails is noted and the next one tried, each in its own child.
    EDGEKIT_NO_ISOLATION=1 runs it in this process, as isolate=False does.
    """
    from edgekit.isolate import isolation_enabled, run_isolated

    cls = runtime_for_format(fmt)
    paths: tuple[str | None, ...] = getattr(cls, "kernel_paths", None) or (None,)
    isolate = isolate and isolation_enabled()
    # the child finds the runtime by "module:Class" (one registered at run time is not in its own tables)
    request = {"path": str(path), "runtime": f"{cls.__module__}:{cls.__qualname__}", "layout_from": ref.layout,
               "layout_to": layout}
    notes: list[str] = []
    for i, kernels in enumerate(paths):
        req = {**request, "options": {"kernels": kernels} if kernels else {}}
        on = f" with {_kernel_words(kernels)}" if kernels else ""
        try:
            if isolate:
                answer, arrays = run_isolated("edgekit.validate:_check_in_child", req, {"x": ref.x}, who=cls.label(),
                                              doing=f"validating {path.name}{on}", hint=cls.load_hint)
            else:
                answer, arrays = _check_in_child(req, {"x": ref.x})
        except RuntimeFailure as exc:
            if i + 1 == len(paths):
                if notes:
                    exc.hint = "\n".join([*notes, exc.hint or ""]).strip()
                raise
            notes.append(f"{cls.label()} could not run {path.name}{on}: {exc.message}")
            continue
        if notes:
            notes.append(f"validated with {_kernel_words(kernels)}")
        return ArtifactCheck(inputs=[TensorSpec.from_dict(d) for d in answer["inputs"]],
                             outputs=[TensorSpec.from_dict(d) for d in answer["outputs"]],
                             fidelity=compare(ref, arrays["y"], precision, thresholds),
                             kernels=answer.get("kernels"), notes=notes)
    raise AssertionError("unreachable: the last kernel path returns or raises")  # pragma: no cover


def _kernel_words(kernels: str | None) -> str:
    return {"xnnpack": "XNNPACK", "builtin": "its builtin kernels (no delegate)"}.get(kernels or "", str(kernels))


def _check_in_child(request: dict[str, Any], arrays: dict[str, np.ndarray]) -> tuple[dict[str, Any],
                                                                                      dict[str, np.ndarray]]:
    """In the child (edgekit.isolate): load the artifact, read its I/O, run it on arrays["x"]."""
    from edgekit.registry import resolve

    cls: type[Runtime] = resolve({"runtime": request["runtime"]}, "runtime", "runtime")
    runtime = cls()
    runtime.load(Path(request["path"]), **request["options"])
    try:
        y = _outputs(runtime, arrays["x"], request["layout_from"], request["layout_to"])
        answer = {"inputs": [s.to_dict() for s in runtime.inputs], "outputs": [s.to_dict() for s in runtime.outputs],
                  "kernels": runtime.info().get("kernels")}
    finally:
        runtime.close()
    return answer, {"y": y}
