"""Keras model -> SavedModel with a static batch, the form the TFLite converter reads.

Why a static batch: a SavedModel traced with batch None makes the TFLite converter emit SHAPE,
STRIDED_SLICE and PACK ops around every Flatten/Reshape to compute the batch at run time. Those
ops are useless on a device that always runs one batch size, and the Edge TPU compiler cannot map
them. Tracing with a fixed TensorSpec (batch = --batch, default 1) removes them.

Why `model.export` and not `TFLiteConverter.from_keras_model` / `from_concrete_functions`: on
Keras 3 `from_concrete_functions([f], model)` yields a model that outputs NaN (ENVIRONMENT.md),
and going through a SavedModel gives one route for Keras and SavedModel sources alike. The
signature is "serving_default", its input keeps the Keras input's name.
"""

from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from edgekit.core._deps import require
from edgekit.core.border import vendor_errors
from edgekit.core.errors import UsageError
from edgekit.sources.keras2 import is_tf_keras_model
from edgekit.steps.base import Intermediate, Step, StepContext

SIGNATURE = "serving_default"


def tf_name(name: str) -> str:
    """NAME made valid as a TensorFlow tensor/argument name (Keras names usually already are)."""
    clean = re.sub(r"[^A-Za-z0-9_.\-/]", "_", name or "input")
    return clean if re.match(r"[A-Za-z0-9.]", clean) else f"input{clean}"


def static_shape(shape: list[int], batch: int) -> list[int]:
    """SHAPE with its batch set to BATCH; every other dim must already be known."""
    if batch < 1:
        raise UsageError(f"--batch must be at least 1, got {batch}.")
    if any(d <= 0 for d in shape[1:]):
        raise UsageError(f"The input shape {shape} has unknown dimensions; TFLite needs static shapes.",
                         hint="Pass --input-shape N,H,W,C.")
    return [batch, *shape[1:]]


@contextlib.contextmanager
def _removed_on_error(folder: Path) -> Iterator[None]:
    """Remove FOLDER if the block fails: a half-written SavedModel must not be taken for a good one."""
    try:
        yield
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def keyed_outputs(y: Any, names: list[str]) -> dict[str, Any]:
    """A model's outputs Y (a tensor, list or dict) as a dict keyed by NAMES (output_i where they do not fit)."""
    if isinstance(y, dict):
        return dict(y)
    ys = list(y) if isinstance(y, (list, tuple)) else [y]
    keys = names if len(names) == len(ys) else [f"output_{i}" for i in range(len(ys))]
    return dict(zip(keys, ys, strict=True))


def _save_traced(tf: Any, model: Any, spec: Any, out: Path, names: list[str]) -> None:
    """MODEL traced at SPEC and saved with tf.saved_model.save under SIGNATURE (outputs keyed by NAMES)."""

    @tf.function(input_signature=[spec])
    def serve(x: Any) -> dict[str, Any]:
        return keyed_outputs(model(x, training=False), names)

    holder = tf.Module()
    holder.model = model  # tracked: its variables are saved with the signature
    tf.saved_model.save(holder, str(out), signatures={SIGNATURE: serve.get_concrete_function()})


class KerasToSavedModel(Step):
    name: ClassVar[str] = "keras_to_savedmodel"
    consumes: ClassVar[str] = "keras"
    produces: ClassVar[str] = "savedmodel"
    modules: ClassVar[tuple[str, ...]] = ("tensorflow", "keras")

    def run(self, inp: Intermediate, ctx: StepContext) -> Intermediate:
        tf = require("tensorflow", purpose="export Keras models")
        model: Any = inp.obj if inp.obj is not None else ctx.source.model
        src = ctx.source
        shape = static_shape(list(src.input_shape), int(ctx.options.batch or 1))
        spec = tf.TensorSpec(shape, dtype=tf.as_dtype(src.input_dtype), name=tf_name(src.input_name))
        out = ctx.work / f"{ctx.stem}_savedmodel"
        if out.exists():
            shutil.rmtree(out)
        ctx.log(f"keras -> SavedModel (batch {shape[0]}, signature '{SIGNATURE}')")
        with _removed_on_error(out), vendor_errors(
            "keras", step=self.name,
            what=f"keras_to_savedmodel: exporting the Keras model as a SavedModel with input {shape} failed",
            hint="Check that the model runs on a batch of that shape (model(np.zeros(shape))); a model that "
            "only works with a dynamic batch cannot be made static.",
        ):
            if is_tf_keras_model(model):  # a Keras 2 file read with tf_keras: its export() takes no signature
                _save_traced(tf, model, spec, out, list(src.output_names))
            else:
                model.export(str(out), format="tf_saved_model", input_signature=[spec], verbose=False)
        return inp.derive(kind="savedmodel", path=out, layout=inp.layout or src.layout, precision="fp32",
                          signature=SIGNATURE, batch=shape[0], input_name=spec.name)


def ensure_static_batch(path: Path, signature: str, batch: int, out: Path,
                        inner: list[int] | None = None) -> Path:
    """PATH itself when its SIGNATURE already has a static input shape, else a copy traced at a fixed one.

    For SavedModel sources (converted to TFLite without a Keras model to re-export): the signature
    is wrapped in a tf.function whose TensorSpec has batch BATCH (and INNER, the non-batch dims in
    the SavedModel's own layout, where the signature leaves them unknown), and saved at OUT under
    the same signature name. The TFLite converter then sees static shapes and folds away the
    SHAPE/STRIDED_SLICE/PACK ops a dynamic batch brings in. OUT is reused when it already exists
    (one export serves every precision of a run).
    """
    from edgekit.sources.savedmodel import open_signature, signature_inputs, signature_io

    tf: Any = require("tensorflow", purpose="convert SavedModels")  # untyped: tf.Module is a base class below
    loaded, fn = open_signature(path, signature)
    key, spec, _ = signature_io(fn)
    several = signature_inputs(fn)
    if len(several) > 1:  # several inputs (onnx2tf of a pinned ONNX): every dim must be static already
        loose = [k for k, s in several if s.shape.rank is None or None in s.shape.as_list()]
        if not loose:
            return path
        raise UsageError(f"SavedModel signature '{signature}' has inputs with unknown dimensions: {loose}; TFLite "
                         "needs every dimension known.", hint="Pin each input: --input-shape name:N,C,H,W per input.")
    if spec.shape.rank is None:
        raise UsageError(f"The input of SavedModel signature '{signature}' has an unknown rank.",
                         hint="Re-export it with a shaped input (tf.TensorSpec([1, H, W, C])).")
    dims = spec.shape.as_list()
    if all(d is not None for d in dims):
        return path
    if (out / "saved_model.pb").is_file():
        return out
    known = list(inner) if inner is not None and len(inner) == len(dims) - 1 else [None] * (len(dims) - 1)
    filled = [d if d is not None else known[i] for i, d in enumerate(dims[1:])]
    known_dims = [d for d in filled if d is not None and d > 0]
    if len(known_dims) != len(filled):
        raise UsageError(f"SavedModel signature '{signature}' takes {dims}; TFLite needs every dimension known.",
                         hint="Pass --input-shape with every dimension, batch first, in the source model's own "
                         "layout (N,C,H,W for PyTorch and most ONNX, N,H,W,C for Keras and TensorFlow).")
    fixed = static_shape([batch, *known_dims], batch)
    fixed_spec = tf.TensorSpec(fixed, dtype=spec.dtype, name=tf_name(key))

    class _Static(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = loaded  # tracked, so the variables are saved with the new signature

        @tf.function(input_signature=[fixed_spec])
        def serve(self, x: Any) -> Any:
            y = fn(**{key: x})
            return dict(y) if isinstance(y, dict) else {"output_0": y}

    module = _Static()
    with _removed_on_error(out), vendor_errors(  # a signature that cannot be traced at that shape
        "tensorflow", step="tflite_convert",
        what=f"Fixing the batch of SavedModel signature '{signature}' to {fixed} failed",
        hint="Re-export the SavedModel with a static input shape (tf.TensorSpec([1, H, W, C])).",
    ):
        tf.saved_model.save(module, str(out), signatures={signature: module.serve.get_concrete_function()})
    return out
