"""TensorFlow SavedModel sources: a folder with saved_model.pb, converted through one signature.

A SavedModel can hold several signatures (entry points); `--signature` picks one, by default
`serving_default`, the one `model.export()` and `tf.saved_model.save` write. Loading a SavedModel
runs no Python code from the folder (it is a graph plus variables), so it needs no --trust-model.
The reference `predict` calls that same signature, so every artifact is validated against exactly
the function that was converted.

Layout: TensorFlow models are channels-last, so a 4-D input is taken as NHWC, unless its shape is
plainly channels-first (dim 1 is 1 or 3 and the last dim is not a channel count).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.core._deps import require
from edgekit.core.batching import TF_CHUNK_INPUT_BYTES, rows_per_chunk
from edgekit.core.border import vendor_errors, vendor_message
from edgekit.core.errors import UnsupportedModel, UsageError
from edgekit.core.fsutil import sha256_tree
from edgekit.sources.base import LoadOptions, Source, SourceSpec

PREDICT_BATCH = 256
_LAYOUT_BY_RANK = {2: "NC", 3: "NWC", 4: "NHWC", 5: "NDHWC"}


def is_savedmodel(path: Path) -> bool:
    """True for a folder holding saved_model.pb (or its text form)."""
    return path.is_dir() and ((path / "saved_model.pb").is_file() or (path / "saved_model.pbtxt").is_file())


def _layout(shape: list[int]) -> str:
    if len(shape) == 4 and shape[1] in (1, 3) and shape[3] not in (1, 3, 4):
        return "NCHW"
    return _LAYOUT_BY_RANK.get(len(shape), "N" + "X" * (len(shape) - 1))


def signature_inputs(fn: Any) -> list[tuple[str, Any]]:
    """Every (input key, tf.TensorSpec) of a signature, in the order the TFLite converter feeds them (by key).

    The order is the one a representative dataset must yield its arrays in: TensorFlow flattens a
    signature's keyword inputs sorted by key.
    """
    args, kwargs = fn.structured_input_signature
    specs = dict(kwargs)
    if args or not specs:
        names = [*(f"arg{i}" for i in range(len(args))), *specs]
        raise UnsupportedModel(
            f"The signature takes {len(names)} positional or no named inputs ({', '.join(names) or 'none'}); "
            "edgekit feeds signature inputs by name.",
            hint="Export a signature with named input tensors (e.g. model.export(path) for a Keras model).",
        )
    return sorted(specs.items())


def signature_io(fn: Any) -> tuple[str, Any, list[str]]:
    """(first input key, its tf.TensorSpec, output keys in the order converters flatten them) of a signature."""
    (key, spec), *_ = signature_inputs(fn)
    outputs = fn.structured_outputs
    out_keys = sorted(outputs) if isinstance(outputs, dict) else ["output_0"]
    return key, spec, out_keys


def open_signature(path: Path, name: str) -> tuple[Any, Any]:
    """(loaded object, signature function); the object must stay alive while the function is used."""
    tf = require("tensorflow", purpose="load TensorFlow SavedModels")
    path = Path(path)
    if not is_savedmodel(path):
        raise UnsupportedModel(
            f"{path} is not a TensorFlow SavedModel folder (no saved_model.pb inside).",
            hint="Pass the SavedModel folder itself (the one holding saved_model.pb and variables/).",
        )
    with vendor_errors(  # TF raises many kinds for a damaged folder
        "tensorflow", error=UnsupportedModel, describe=lambda exc: f"{vendor_message(exc, 300)}. The folder is "
        "incomplete or corrupt.", what=f"{path} could not be loaded as a SavedModel",
        hint="Re-export the model (model.export(path) or tf.saved_model.save(obj, path)).",
    ):
        loaded = tf.saved_model.load(str(path))
    sigs = dict(getattr(loaded, "signatures", {}) or {})
    if not sigs:
        raise UnsupportedModel(
            f"{path} has no signatures, so there is no entry point to convert.",
            hint="Re-export it with a serving signature: model.export(path), or tf.saved_model.save(obj, path, "
            "signatures=obj.__call__.get_concrete_function(tf.TensorSpec(shape, tf.float32))).",
        )
    if name not in sigs:
        raise UsageError(
            f"{path} has no signature '{name}'. Its signatures: {', '.join(sorted(sigs))}.",
            hint=f"Pick one with --signature, e.g. --signature {sorted(sigs)[0]}.",
        )
    return loaded, sigs[name]


def make_predict_outputs(loaded: Any, fn: Any, key: str, out_keys: list[str], static_batch: int,
                         dtype: str) -> Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]:
    """Every output of the signature by key on a float batch; a static-batch signature is fed in chunks of its batch."""
    tf = require("tensorflow")
    chunk = static_batch or PREDICT_BATCH

    def predict_outputs(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        _ = loaded  # keep the SavedModel's objects (variables) alive as long as this function
        x = feeds[key] if key in feeds else next(iter(feeds.values()))
        outs: dict[str, list[np.ndarray]] = {}
        step = chunk if static_batch else rows_per_chunk([x], chunk, TF_CHUNK_INPUT_BYTES)
        for i in range(0, len(x), step):
            part = np.ascontiguousarray(x[i:i + step], dtype=dtype)
            n = len(part)
            if static_batch and n < static_batch:  # pad the last chunk up to the signature's batch
                part = np.concatenate([part, np.repeat(part[-1:], static_batch - n, axis=0)])
            y = fn(**{key: tf.constant(part)})
            ys = y if isinstance(y, dict) else {out_keys[0]: y}
            for name in out_keys:
                outs.setdefault(name, []).append(np.asarray(ys[name].numpy(), dtype=np.float32)[:n])
        return {name: np.concatenate(parts) for name, parts in outs.items()}

    return predict_outputs


def make_predict(loaded: Any, fn: Any, key: str, out_key: str, static_batch: int,
                 dtype: str) -> Callable[[np.ndarray], np.ndarray]:
    """Run the signature on a float batch: output OUT_KEY."""
    run = make_predict_outputs(loaded, fn, key, [out_key], static_batch, dtype)
    return lambda x: run({key: x})[out_key]


def load(path: Path | None, opts: LoadOptions, kind: str = "savedmodel") -> Source:
    """Load the SavedModel folder PATH through signature opts.signature."""
    if path is None:
        raise UsageError("A SavedModel source needs the path of its folder.")
    path = Path(path)
    loaded, fn = open_signature(path, opts.signature)
    key, spec, out_keys = signature_io(fn)
    dtype = spec.dtype.name
    shape = [-1 if d is None else int(d) for d in spec.shape.as_list()] if spec.shape.rank is not None else []
    if opts.input_shape:
        given = [int(d) for d in opts.input_shape]
        if shape and not (len(given) == len(shape) and all(m <= 0 or g == m for g, m in zip(given, shape,
                                                                                            strict=True))):
            raise UsageError(f"--input-shape {_fmt(given)} does not fit signature '{opts.signature}', which takes "
                             f"{_fmt(shape)}.", hint="Give N,H,W,C (batch first, channels last for TensorFlow).")
        shape = given
    if not shape or any(d <= 0 for d in shape[1:]):
        raise UsageError(
            f"The input shape of signature '{opts.signature}' in {path} is not fully known "
            f"({_fmt(shape) if shape else 'unknown rank'}).",
            hint="Pass --input-shape N,H,W,C (batch first, channels last), e.g. --input-shape 1,224,224,3.",
        )
    sig_batch = spec.shape.as_list()[0] if spec.shape.rank else None
    if len(signature_inputs(fn)) > 1:
        raise UnsupportedModel(
            f"Signature '{opts.signature}' takes {len(signature_inputs(fn))} inputs; edgekit converts SavedModel "
            "sources with one input (multi-input models: convert their ONNX export).",
            hint="Export a signature with one input tensor, or export the model to ONNX and convert that.",
        )
    predict = make_predict(loaded, fn, key, out_keys[0], int(sig_batch or 0), dtype)
    return Source(
        path=path,
        kind="savedmodel",
        family="savedmodel",
        layout=_layout(shape),
        input_name=key,
        input_shape=shape,
        input_dtype=dtype,
        predict=predict,
        model=path,
        sha256=sha256_tree(path),
        output_names=out_keys,
        predict_outputs=make_predict_outputs(loaded, fn, key, out_keys, int(sig_batch or 0), dtype),
        signature=opts.signature,  # the first Intermediate's: tflite_convert and savedmodel_to_onnx read it there
    )


def _fmt(shape: Any) -> str:
    return "x".join(str(d) if d > 0 else "?" for d in shape)


def sniff(path: Path, head: bytes) -> str | None:
    return "savedmodel" if is_savedmodel(path) else None


SOURCE = SourceSpec(name="savedmodel", family="savedmodel", kinds=("savedmodel",), sniff=sniff, load=load,
                    files="SavedModel folders", dists=("tensorflow",))
