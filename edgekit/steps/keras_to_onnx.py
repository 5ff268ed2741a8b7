"""Keras model -> ONNX (fp32) through tf2onnx.convert.from_function.

Why from_function: `tf2onnx.convert.from_keras` breaks on Keras 3 (KeyError 'keras_tensor_N');
Keras 3's own `model.export(format="onnx")` calls from_function too, but discards its result and
tf2onnx converts with continue_on_error=True: an op it cannot convert is left in the graph under
its TensorFlow name and only logged. Calling from_function here lets the step look at the graph
and fail, naming the op, instead of writing a model no runtime can load.

Captured constants: a tf.function over a Keras model captures the eager tensors layers keep outside
their variables (an adapted Normalization layer's mean and variance, as in keras.applications'
EfficientNet and ConvNeXt) as extra placeholders. tf2onnx's from_function lists every non-resource
placeholder of the concrete function as a model input (its from_keras drops captures; from_function does
not), so the ONNX model came out with those constants as required inputs ("Missing input(s)" at
validation). Those inputs, named as the placeholders, are made initializers holding the captured values
after the conversion. (Freezing the function first did the same at the cost of a second frozen copy of
the whole graph alive during tf2onnx's own freeze: Keras ConvNeXtTiny peaked at 3.9 GiB in the step
instead of 3.0 GiB, and took 33 s instead of 22 s: one run each, beside other work.)

Batch: the ONNX model keeps a dynamic batch (dim "batch"): ONNX Runtime needs no static shapes,
validation runs large batches, and the quantizer handles it. The layout stays the source's (NHWC
for Keras); no transposes are added. Outputs are named after the Keras model's outputs.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import re
import types
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from edgekit.core._deps import require
from edgekit.core.border import vendor_errors
from edgekit.core.errors import ConversionError
from edgekit.steps.base import Intermediate, Step, StepContext
from edgekit.steps.keras_to_savedmodel import keyed_outputs, tf_name

# Domains whose ops ONNX Runtime implements; anything else in a tf2onnx graph is an unconverted op.
_KNOWN_DOMAINS = ("", "ai.onnx", "ai.onnx.ml", "com.microsoft")


def _patch_tf2onnx() -> None:
    """tf2onnx 1.17 still uses np.object and other pre-numpy-2 names; Keras ships the fix."""
    try:
        from keras.src.export.tf2onnx_lib import patch_tf2onnx
    except ImportError:  # a Keras without it: numpy 1 or a tf2onnx that no longer needs it
        return
    with warnings.catch_warnings():  # the patch probes np.object, which warns on numpy 2
        warnings.simplefilter("ignore", FutureWarning)
        patch_tf2onnx()


COLLECT_AFTER_BYTES = 256 * 2**20  # growth of resident memory that makes the next graph copy collect first


@contextlib.contextmanager
def collected_optimizer_copies() -> Iterator[None]:
    """While inside, tf2onnx's optimizer collects garbage before each of its graph copies.

    tf2onnx 1.17's optimize_graph deep-copies the whole graph, weights included, before each of its
    ~20 passes (so that a failing pass can be undone), and the copies it drops sit in reference cycles
    that Python's allocation-count-based collector does not reach in time: on Keras ResNet50 (94 MB of
    weights) resident memory went from 2.6 GB to 6.9 GB inside the optimizer. Collecting before each
    copy keeps one spare copy at a time: 3.2 GB peak, and faster (19 s against 26 s for the whole
    conversion). A collection walks every Python object, though, and a graph of many small layers
    (NASNetMobile: 1,163 nodes, 17 MB of weights) paid 5 s for 0.4 GB; so it runs only once resident memory
    has grown by COLLECT_AFTER_BYTES since the last one. The module's `copy` is swapped back on exit.
    """
    try:
        import tf2onnx.optimizer as tf2onnx_optimizer
    except ImportError:
        yield
        return
    from edgekit.measure.machine import current_rss

    original = tf2onnx_optimizer.copy
    last = [current_rss() or 0]

    def deepcopy(obj: Any, memo: Any = None) -> Any:
        now = current_rss()
        if now is None or now - last[0] > COLLECT_AFTER_BYTES:
            gc.collect()
            last[0] = current_rss() or 0
        return original.deepcopy(obj, memo)

    tf2onnx_optimizer.copy = types.SimpleNamespace(deepcopy=deepcopy)
    try:
        yield
    finally:
        tf2onnx_optimizer.copy = original
        gc.collect()


class _NoJitTf:
    """The `tf` module as Keras's TF backend sees it, but `tf.function(jit_compile=True)` only calls through."""

    def __init__(self, tf: Any) -> None:
        self._tf = tf

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tf, name)

    def function(self, func: Any = None, **kwargs: Any) -> Any:
        if kwargs.get("jit_compile"):
            return func if func is not None else (lambda f: f)
        return self._tf.function(func, **kwargs) if func is not None else self._tf.function(**kwargs)


@contextlib.contextmanager
def grouped_convs_without_xla() -> Iterator[None]:
    """While tracing for tf2onnx: Keras's grouped convolutions as plain Conv2D ops, not XLA-compiled calls.

    Keras 3's TF backend runs a convolution with groups (ConvNeXt's depthwise 7x7 is Conv2D(groups=C)) inside a
    `tf.function(jit_compile=True)`, because TF's CPU kernel cannot run it. The trace then holds one
    StatefulPartitionedCall per such layer, which freezing does not inline and tf2onnx cannot convert (Keras
    ConvNeXtTiny: 18 of them). tf2onnx never runs the graph, and it writes a grouped Conv2D as an ONNX Conv with
    its `group`: here the backend's `tf` is swapped for one whose jit-compiled functions call straight through.
    """
    try:
        from keras.src.backend.tensorflow import nn as keras_tf_nn
    except ImportError:  # another Keras layout: nothing to swap
        yield
        return
    original = keras_tf_nn.tf
    keras_tf_nn.tf = _NoJitTf(original)
    try:
        yield
    finally:
        keras_tf_nn.tf = original


def _erfc(ctx: Any, node: Any, name: str, args: Any) -> None:
    """tf2onnx handler: TensorFlow's Erfc (Keras 3's exact GELU is 0.5 x erfc(-x / sqrt 2)) as 1 - Erf(x)."""
    import numpy as np
    from tf2onnx import utils

    dtype = utils.map_onnx_to_numpy_type(ctx.get_dtype(node.input[0]))
    erf = ctx.make_node("Erf", [node.input[0]], op_name_scope=node.name)
    one = ctx.make_const(utils.make_name(f"{node.name}_one"), np.array(1, dtype=dtype))
    node.type = "Sub"
    node.domain = ""
    ctx.replace_inputs(node, [one.output[0], erf.output[0]])


def unconverted_ops(model: Any) -> dict[str, list[str]]:
    """op type -> node names of nodes that are not ONNX ops (tf2onnx left the TensorFlow op in place)."""
    onnx = require("onnx")
    bad: dict[str, list[str]] = {}

    def visit(graph: Any) -> None:
        for node in graph.node:
            known = node.domain in _KNOWN_DOMAINS and (
                node.domain not in ("", "ai.onnx") or onnx.defs.has(node.op_type)
            )
            if not known:
                bad.setdefault(node.op_type, []).append(node.name)
            for attr in node.attribute:  # If / Loop / Scan bodies
                if attr.g is not None and attr.g.node:
                    visit(attr.g)
                for g in attr.graphs:
                    visit(g)

    visit(model.graph)
    return bad


def _name_batch_dim(model: Any) -> None:
    """tf2onnx names a None dim 'unk__N'; call the batch dim of every input and output 'batch'."""
    for value in [*model.graph.input, *model.graph.output]:
        dims = value.type.tensor_type.shape.dim
        if dims and not dims[0].HasField("dim_value"):
            dims[0].dim_param = "batch"


def captured_constants(fn: Any, spec: Any) -> dict[str, Any]:
    """The non-variable tensors FN's trace for SPEC captures, by the name of the placeholder that stands for each
    inside the graph (the name tf2onnx gives the model input it makes of it), as numpy arrays."""
    tf = require("tensorflow")
    graph = fn.get_concrete_function(spec).graph
    return {inner.name: outer.numpy() for outer, inner in graph.captures if outer.dtype != tf.resource}


def captures_as_initializers(model: Any, captured: dict[str, Any]) -> None:
    """MODEL's graph inputs that are CAPTURED constants made initializers holding their values."""
    from onnx import numpy_helper

    inits = {i.name for i in model.graph.initializer}
    for value in list(model.graph.input):
        if value.name in captured and value.name not in inits:
            model.graph.initializer.append(numpy_helper.from_array(captured[value.name], value.name))
            model.graph.input.remove(value)


def tf_function_to_onnx(fn: Any, spec: Any, opset: int, out: Path, step: str) -> Path:
    """Convert the tf.function FN (one input, SPEC) to the ONNX file OUT; ConversionError on any failure."""
    tf2onnx = require("tf2onnx", purpose="convert TensorFlow models to ONNX")
    onnx = require("onnx")
    _patch_tf2onnx()
    with vendor_errors("tf2onnx", step=step, what=f"{step}: tf2onnx failed",
                       hint="Try another --opset, or convert to TFLite only (--target tflite)."), \
            grouped_convs_without_xla():
        captured = captured_constants(fn, spec)
        # tf2onnx numbers the nodes it inserts from a process-wide counter: without a reset, a second conversion
        # in one process (the Python API, a notebook) wrote other node names, so other bytes, than the first
        tf2onnx_utils: Any = importlib.import_module("tf2onnx.utils")  # untyped: no attribute is known to mypy
        tf2onnx_utils.INTERNAL_NAME = 1
        with collected_optimizer_copies():
            model, _ = tf2onnx.convert.from_function(fn, input_signature=[spec], opset=opset,
                                                     custom_op_handlers={"Erfc": (_erfc, [])})
    captures_as_initializers(model, captured)
    # ... and names the graph after the traced function, whose name TensorFlow numbers per process too
    model.graph.doc_string = re.sub(r"(__inference_\w+?)_\d+\b", r"\1", model.graph.doc_string)
    inits = {i.name for i in model.graph.initializer}
    extra = [i.name for i in model.graph.input if i.name not in inits][1:]
    if extra:  # an input that is not a capture: the model would demand inputs no caller can give
        raise ConversionError(
            f"{step}: the ONNX model tf2onnx wrote takes {len(extra)} input(s) besides the model's own: "
            f"{', '.join(extra[:4])}{' ...' if len(extra) > 4 else ''} (graph inputs that are neither the model's "
            "nor a captured constant).",
            hint="Re-save the model after building it (model.save('model.keras')), or convert to TFLite only "
            "(--target tflite).",
        )
    bad = unconverted_ops(model)
    if bad:
        listed = "; ".join(f"{op} ({len(nodes)}x, e.g. {nodes[0]})" for op, nodes in sorted(bad.items()))
        raise ConversionError(
            f"{step}: tf2onnx cannot express these TensorFlow ops in ONNX opset {opset}: {listed}. "
            "The ONNX model would not load in any runtime, so none was written.",
            hint="Replace the layers that use them with standard ones, try another --opset, or convert to "
            "TFLite only (--target tflite).",
        )
    _name_batch_dim(model)
    with vendor_errors("onnx", step=step, what=f"{step}: the ONNX model tf2onnx wrote is invalid"):
        onnx.checker.check_model(model)
    out.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(out))
    return out


class KerasToOnnx(Step):
    name: ClassVar[str] = "keras_to_onnx"
    consumes: ClassVar[str] = "keras"
    produces: ClassVar[str] = "onnx"
    modules: ClassVar[tuple[str, ...]] = ("tensorflow", "keras", "tf2onnx", "onnx")

    def run(self, inp: Intermediate, ctx: StepContext) -> Intermediate:
        tf = require("tensorflow", purpose="convert Keras models to ONNX")
        model: Any = inp.obj if inp.obj is not None else ctx.source.model
        src = ctx.source
        shape = [None, *src.input_shape[1:]]
        spec = tf.TensorSpec(shape, dtype=tf.as_dtype(src.input_dtype), name=tf_name(src.input_name))
        names = list(src.output_names) or ["output_0"]

        @tf.function(input_signature=[spec])
        def forward(x: Any) -> dict[str, Any]:
            return keyed_outputs(model(x, training=False), names)

        out = ctx.work / f"{ctx.stem}.fp32.onnx"
        opset = int(ctx.options.opset)
        ctx.log(f"keras -> ONNX (opset {opset}, dynamic batch, layout {src.layout})")
        tf_function_to_onnx(forward, spec, opset, out, self.name)
        return inp.derive(kind="onnx", path=out, layout=inp.layout or src.layout, precision="fp32", opset=opset,
                          batch="dynamic")
