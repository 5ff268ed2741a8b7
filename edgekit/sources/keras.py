"""Keras sources: Keras 3 `.keras` archives, legacy `.h5` files, and models built by user code.

Safety: a Keras model file is a config (JSON) plus weights. Most of it is data, but three things
in a config make loading run code the file chooses: Lambda layers (Python bytecode), serialized
Python lambdas, and custom objects (classes from modules the file names). Before Keras sees the
file, its config is read as plain JSON and scanned for those; if any is present, the model is
refused unless the user passed --trust-model. Keras itself is then called with safe_mode=True
(its own check, kept as a second line of defence) and compile=False (losses and metrics are not
needed to convert a model, and their configs are one more place for custom code).

`--model package.module:factory` builds the network in the user's own code (trusted by
definition: the user named it); a model file given beside it supplies only the weights. That is
also the way to convert a model whose archive is refused, without trusting the archive.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.core import jsonsafe
from edgekit.core._deps import require
from edgekit.core.batching import TF_CHUNK_INPUT_BYTES, rows_per_chunk
from edgekit.core.border import all_text, vendor_errors, vendor_message
from edgekit.core.errors import UnsupportedModel, UsageError
from edgekit.core.fsutil import sha256_file
from edgekit.sources import keras2
from edgekit.sources.base import LoadOptions, Source, SourceSpec
from edgekit.sources.detect import HDF5_MAGIC, ZIP_MAGIC, zip_names
from edgekit.sources.factory import load_factory

# Top-level packages whose classes Keras itself deserializes (Keras only imports these).
_KERAS_PACKAGES = {"keras", "builtins", "keras_hub", "keras_cv", "keras_nlp", "tf_keras"}
# Layouts of an input by rank when the model is channels-last (every Keras default).
_LAYOUT_BY_RANK = {2: "NC", 3: "NWC", 4: "NHWC", 5: "NDHWC"}
_TRUST_HINT = keras2.TRUST_HINT
PREDICT_BATCH = 256


# --- reading the config without Keras ---------------------------------------------------------
_CORRUPT_HINT = "Re-save the model (model.save('model.keras')) or re-download the file."


def _corrupt(path: Path, why: str) -> UnsupportedModel:
    return UnsupportedModel(f"{_unreadable(path)}: {why}. The file is truncated, corrupt or not a Keras model.",
                            hint=_CORRUPT_HINT)


def _unreadable(path: Path) -> str:
    return f"{path} could not be read as a Keras model"


def read_config(path: Path, kind: str) -> dict[str, Any] | None:
    """The model config stored in PATH as plain JSON, or None for an .h5 file that holds only weights."""
    try:
        if kind == "keras":
            with zipfile.ZipFile(path) as zf:
                raw: bytes | str | None = zf.read("config.json")
        else:
            h5py = require("h5py", extra="convert", purpose="read .h5 Keras models")
            with h5py.File(path, "r") as f:
                raw = f.attrs.get("model_config")
            if raw is None:
                return None
    except KeyError as exc:
        raise _corrupt(path, "the archive has no config.json") from exc
    except (OSError, zipfile.BadZipFile, EOFError, RuntimeError, ValueError) as exc:
        raise _corrupt(path, vendor_message(exc, 300)) from exc
    try:
        # a Keras config nests a dozen levels deep; a hostile one is refused before the parser recurses
        config = jsonsafe.loads(raw if isinstance(raw, bytes) else str(raw), max_depth=256)
    except (UnicodeDecodeError, json.JSONDecodeError, jsonsafe.TooDeep) as exc:
        raise _corrupt(path, f"its model config is not valid JSON ({exc})") from exc
    if not isinstance(config, dict):
        raise _corrupt(path, "its model config is not a JSON object")
    return config


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


def unsafe_parts(config: dict[str, Any]) -> tuple[list[str], list[str]]:
    """What in CONFIG would run code on load: (human-readable reasons, modules a custom object names)."""
    reasons: list[str] = []
    modules: list[str] = []
    for d in _walk(config):
        cls = d.get("class_name")
        if not isinstance(cls, str):
            continue
        own = d.get("config")
        inner = own if isinstance(own, dict) else {}
        name = inner.get("name", "?")
        if cls == "Lambda":
            reasons.append(f"Lambda layer '{name}' (its Python function is stored in the file and runs on load)")
        elif cls == "TFOpLambda":
            reasons.append(f"TFOpLambda layer '{name}' (calls TensorFlow functions by name)")
        elif cls == "__lambda__":
            reasons.append("a serialized Python lambda (bytecode that runs on load)")
        module = d.get("module")
        if isinstance(module, str) and module.split(".", 1)[0] not in _KERAS_PACKAGES:
            reasons.append(f"custom object '{d.get('registered_name') or cls}' from module '{module}'")
            if module not in modules:
                modules.append(module)
    # Lambda layers carry a nested __lambda__ dict: report each thing once, in order.
    return list(dict.fromkeys(reasons)), modules


def _import_custom_modules(modules: list[str]) -> None:
    """--trust-model: import the modules a config names, so their classes register with Keras."""
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise UnsupportedModel(
                f"The model uses custom objects from the module '{module}', which cannot be imported here ({exc}).",
                hint="Run edgekit from the folder that holds that module (or install its package), or build the "
                "model with --model package.module:factory and pass this file for the weights.",
            ) from exc


# --- loading ------------------------------------------------------------------------------------
def _load_file(path: Path, kind: str, opts: LoadOptions) -> Any:
    """keras.saving.load_model behind the config scan; every Keras failure becomes UnsupportedModel."""
    config = read_config(path, kind)
    if config is None:
        raise UsageError(
            f"{path} holds only weights (no model config): it cannot be converted without the network.",
            hint="Pass --model package.module:factory naming a function that builds the network for these weights.",
        )
    reasons, modules = unsafe_parts(config)
    if reasons and not opts.trust_model:
        raise UnsupportedModel(
            f"{path} needs code execution to load: it contains {'; '.join(reasons[:5])}"
            f"{' and more' if len(reasons) > 5 else ''}. Loading it would run code chosen by the file, so "
            "edgekit refuses it by default.",
            hint=_TRUST_HINT,
        )
    if reasons:
        _import_custom_modules(modules)
    version = keras2.written_by(path, kind)
    if keras2.is_keras2(version, config, kind):  # Keras 3 misreads Keras 2 files: the Keras that wrote it reads it
        return keras2.load(path, kind, opts.trust_model, version)
    keras = require("keras", purpose="load Keras models")
    who = keras2.describe(version, False)
    try:
        with vendor_errors("keras", error=UnsupportedModel, what=f"{_unreadable(path)} (written by {who})",
                           hint=_CORRUPT_HINT, describe=lambda exc: f"{type(exc).__name__}: {vendor_message(exc)}. "
                           "The file is truncated, corrupt or not a Keras model."):
            return keras.saving.load_model(str(path), compile=False, safe_mode=not opts.trust_model)
    except UnsupportedModel as mapped:  # Keras raises ValueError for all of these: only the text tells them apart
        exc = mapped.__cause__ or mapped
        text = all_text(exc)
        first = vendor_message(exc)
        if "safe_mode" in text or "unsafe" in text.lower():
            raise UnsupportedModel(
                f"{path} (written by {who}) needs code execution to load, and Keras refused it in safe mode: {first}",
                hint=_TRUST_HINT,
            ) from exc
        if "Could not locate" in text or "Unknown layer" in text or "Unknown object" in text:
            raise UnsupportedModel(
                f"{path} (written by {who}) uses a custom class that Keras does not know here: {first}",
                hint="Build the model with --model package.module:factory and pass this file for the weights, or "
                "make the module that registers the class importable and pass --trust-model.",
            ) from exc
        raise


def _from_factory(path: Path | None, opts: LoadOptions) -> Any:
    keras = require("keras", purpose="build Keras models")
    model = load_factory(opts.factory or "")()
    if not isinstance(model, keras.Model) and not keras2.is_tf_keras_model(model):
        raise UsageError(f"--model {opts.factory} returned a {type(model).__name__}, not a keras.Model.",
                         hint="The factory must return the Keras model (keras.Model or keras.Sequential).")
    if path is not None:
        with vendor_errors(  # shape mismatch, wrong file kind, truncated file
            "keras", error=UsageError, what=f"The weights in {path} do not fit the model built by {opts.factory}",
            describe=lambda exc: vendor_message(exc, 300),
            hint="Check that --model names the architecture these weights were saved from "
            "(Keras weights files end in .weights.h5, .keras or .h5).",
        ):
            model.load_weights(str(path))
    return model


def _layers(model: Any) -> Iterator[Any]:
    for layer in getattr(model, "layers", []) or []:
        yield layer
        yield from _layers(layer)


def _layout(model: Any, rank: int) -> str:
    if rank == 4 and any(getattr(layer, "data_format", None) == "channels_first" for layer in _layers(model)):
        return "NCHW"
    return _LAYOUT_BY_RANK.get(rank, "N" + "X" * (rank - 1))


def _forward(model: Any, dtype: str, shape: list[int]) -> Callable[[np.ndarray], Any]:
    """model(x, training=False) as one graph traced for a free batch (Keras on TensorFlow), else eager calls.

    Why a graph: called eagerly, Keras runs op by op and TensorFlow's CPU allocator keeps the memory of a
    whole batch's activations after the call (MobileNetV2 at 160x160: 1.3 GB held after chunks of 27
    samples, 50 MB a sample; the zoo's Keras rows reached 12-13 GB at 256-sample batches). The traced graph
    frees each tensor when its last consumer has run: 0.3 GB held, and twice as fast. The input signature
    has no batch, so chunks of any size share one trace. It is traced at once, with the depthwise
    convolutions Keras writes as grouped ones computed by TensorFlow's depthwise kernel instead of XLA's
    (edgekit.sources.keras_depthwise: Keras ConvNeXtTiny's reference took 32 s of its conversion).
    """
    keras = require("keras")
    if keras.backend.backend() != "tensorflow" and not keras2.is_tf_keras_model(model):
        return lambda x: model(np.ascontiguousarray(x, dtype=dtype), training=False)
    tf = require("tensorflow")
    from edgekit.sources.keras_depthwise import grouped_convs_as_depthwise

    spec = tf.TensorSpec([None, *shape[1:]], dtype=tf.as_dtype(dtype))
    call = tf.function(lambda x: model(x, training=False), input_signature=[spec])
    with grouped_convs_as_depthwise():
        call.get_concrete_function()  # the one trace every chunk reuses (the signature has no batch)

    def forward(x: np.ndarray) -> Any:
        return call(np.ascontiguousarray(x, dtype=dtype))

    return forward


def make_predict_outputs(model: Any, dtype: str, names: list[str], shape: list[int],
                         max_batch: int = PREDICT_BATCH) -> Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]:
    """Every output by name (NAMES, or a dict output's keys) on the one input's batch, in batches (issue 15)."""
    keras = require("keras")
    forward = _forward(model, dtype, shape)

    def predict_outputs(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        x = next(iter(feeds.values()))
        outs: dict[str, list[np.ndarray]] = {}
        step = rows_per_chunk([x], max_batch, TF_CHUNK_INPUT_BYTES)
        for i in range(0, len(x), step):
            y = forward(x[i:i + step])
            if not isinstance(y, dict):
                ys = list(y) if isinstance(y, (list, tuple)) else [y]
                y = dict(zip(names if len(names) == len(ys) else [f"output_{j}" for j in range(len(ys))], ys,
                             strict=True))
            for name, t in y.items():
                outs.setdefault(str(name), []).append(np.asarray(keras.ops.convert_to_numpy(t), dtype=np.float32))
        return {name: np.concatenate(parts) for name, parts in outs.items()}

    return predict_outputs


def output_names(model: Any) -> list[str]:
    """Names of the model's outputs: Keras's output_names, else the layers that produce them (Sequential)."""
    try:
        return [str(n) for n in model.output_names]
    except (AttributeError, ValueError, TypeError):
        pass
    names: list[str] = []
    for t in getattr(model, "outputs", None) or []:
        op = getattr(getattr(t, "_keras_history", None), "operation", None)
        names.append(str(getattr(op, "name", None) or getattr(t, "name", f"output_{len(names)}")))
    return names


def source_from_model(model: Any, path: Path | None, kind: str, opts: LoadOptions) -> Source:
    """A Source for a loaded keras.Model: its one input's name/shape/dtype, layout, reference predict."""
    label = path or opts.factory
    try:
        inputs = list(model.inputs or [])
    except (AttributeError, ValueError):  # a subclassed model that was never built
        inputs = []
    if len(inputs) > 1:
        raise UnsupportedModel(
            f"{label} takes {len(inputs)} inputs ({', '.join(t.name for t in inputs)}); edgekit converts and "
            "validates single-input models.",
            hint="Wrap the model so that it takes one input tensor.",
        )
    if inputs:
        name = inputs[0].name
        shape = [-1 if d is None else int(d) for d in inputs[0].shape]
        dtype = str(getattr(inputs[0].dtype, "name", inputs[0].dtype))
    else:
        name, shape, dtype = "input", [], "float32"
    if opts.input_shape:
        given = [int(d) for d in opts.input_shape]
        if shape and not (len(given) == len(shape) and all(m <= 0 or g == m for g, m in zip(given, shape,
                                                                                            strict=True))):
            raise UsageError(f"--input-shape {_fmt(given)} does not fit the model, which takes {_fmt(shape)}.",
                             hint="Keras models are channels-last: give N,H,W,C (batch first), e.g. 1,96,96,3.")
        shape = given
    if not shape or any(d <= 0 for d in shape[1:]):
        raise UsageError(
            f"The input shape of {label} is not fully known ({_fmt(shape) if shape else 'not recorded'}).",
            hint="Pass --input-shape N,H,W,C (batch first, channels last for Keras), e.g. --input-shape 1,96,96,3.",
        )
    names = output_names(model)
    predict_outputs = make_predict_outputs(model, dtype, names, shape)  # every output validated

    def predict(x: np.ndarray) -> np.ndarray:  # the reference: the first output as float32
        return next(iter(predict_outputs({name: x}).values()))

    probe = np.zeros([1, *shape[1:]], dtype=np.float32)
    with vendor_errors("keras", error=UsageError, describe=lambda exc: vendor_message(exc, 300, last=True),
                       what=f"The model does not accept an input of shape {_fmt(probe.shape)}",
                       hint="Pass the shape the model was built for with --input-shape N,H,W,C."):
        predict(probe)  # the model rejects the shape: say so, not a traceback
    return Source(
        path=path or Path(opts.factory or "factory"),
        kind=kind,
        family="keras",
        layout=_layout(model, len(shape)),
        input_name=name,
        input_shape=shape,
        input_dtype=dtype,
        predict=predict,
        model=model,
        sha256=sha256_file(path) if path and path.is_file() else "",
        output_names=names,
        predict_outputs=predict_outputs,
        extra={"factory": opts.factory} if opts.factory else {},
    )


def load(path: Path | None, opts: LoadOptions, kind: str) -> Source:
    """Load a Keras source: kind "keras" (.keras archive), "h5" (legacy HDF5) or "keras-factory".

    With --model (opts.factory) the network is built by that function and PATH, if given, only
    supplies its weights.
    """
    require("tensorflow", purpose="load Keras models")  # the backend Keras runs on here
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise UsageError(f"No such file: {path}.", hint="Check the path (it is relative to the current folder).")
    if opts.factory or kind == "keras-factory":
        if not opts.factory:
            raise UsageError("A Keras model built in code needs --model package.module:factory.")
        model = _from_factory(path, opts)
        kind = "keras-factory"
    elif kind in ("keras", "h5") and path is not None:
        model = _load_file(path, kind, opts)
    else:
        raise UsageError(f"The Keras loader cannot read a '{kind}' source.",
                         hint="Keras sources are .keras archives, .h5 files, or --model package.module:factory.")
    return source_from_model(model, path, kind, opts)


def _fmt(shape: Any) -> str:
    return "x".join(str(d) if d > 0 else "?" for d in shape)


def sniff(path: Path, head: bytes) -> str | None:
    """keras for a Keras 3 archive (a zip with config.json and model.weights.*), h5 for an HDF5 file."""
    if head.startswith(ZIP_MAGIC):
        names = zip_names(path)
        return "keras" if "config.json" in names and any(n.startswith("model.weights") for n in names) else None
    return "h5" if head.startswith(HDF5_MAGIC) else None


SOURCE = SourceSpec(name="keras", family="keras", kinds=("keras", "h5", "keras-factory"), sniff=sniff, load=load,
                    files=".keras, .h5", dists=("keras", "tensorflow", "h5py"))
