"""Workarounds for onnx2tf 1.28.8 (the pinned version) bugs that make a wrong but valid TensorFlow model.

Applied in the process that runs onnx2tf.convert (edgekit.steps.onnx_to_savedmodel's child), before the
conversion; each one names the onnx2tf code it corrects. They change which candidate onnx2tf picks where its
own checks cannot tell two candidates apart, never what a candidate computes.

- MatMul's layout search (onnx2tf/ops/MatMul.py) tries every transposition of both inputs, builds each
  product, and keeps the one closest to ONNX's output by `onnx_tf_tensor_validation`, which matches a TF
  tensor against ONNX under its best transposition. A candidate whose product comes out in another order is
  then transposed to ONNX's shape by taking, for each ONNX dimension, the first unused TF dimension of that
  size. Where two dimensions have the same size (attention scores: queries x keys, 25 x 25 in LeViT-128S at
  160 x 160) that mapping can be the transposition the check did not test, and the check's float noise picked
  such a candidate: the scores came out transposed and the Softmax after them normalized over the queries
  (LeViT's fp32 TFLite agreed with its source on 58% of samples, cosine 0.82). The check MatMul's search uses
  is replaced by one that compares each candidate as the converted graph will use it: transposed by that same
  first-unused mapping, element by element.
- Every op's output is marked "still in the NCHW->NHWC transposed layout, or not" by comparing its TF shape
  with ONNX's (the `inverted_operation_enable_disable` decorator in onnx2tf/utils/common_functions.py). Where
  every dimension after the batch has the same size the shapes cannot tell, and onnx2tf marks the output
  transposed for every op but MatMul. A ConvNeXt block at 160 x 160 (ConvNeXt-V2 atto: 40 channels on a
  40 x 40 map) permutes the conv's NHWC output to channels-last itself: onnx2tf's Transpose leaves that in
  ONNX's order, the mark said transposed, and the LayerNormalization after it normalized over a spatial axis
  (fp32 TFLite: 11% agreement, cosine 0.60); the Conv after the permutation back skips its own
  channels-last fix in such a tie and read NCHW data as NHWC. In a tie, a Transpose's output is now moved to
  what the mark says (channels-last, onnx2tf's convention for every other op in a tie), and an elementwise op
  or normalization takes its input's mark (a MatMul's output in a tie is in ONNX's order, marked so).
- The same decorator compares shapes after writing the batch size over ONNX's first dimension, even where that
  dimension is not the batch: MobileViT's unfolded patches are (4 pixels of a patch, 100 patches, 144
  channels) with a batch of 1, so (1, 100, 144) != (4, 100, 144) marked them transposed and the
  LayerNormalization over the 144 channels took axis 1 ("144 elements, but got shape (100,)": no TFLite at
  all). An output whose static ONNX shape is TF's exactly, with a first dimension other than the batch size,
  is marked in ONNX's order.
- A Constant node of rank 3 to 5 is written channels-last whatever its consumers' layout (onnx2tf/ops/Constant.py,
  `_make_tf_constant`), with no layout mark, where an initializer is laid out for each consumer by that
  consumer's inputs (`get_constant_or_variable`). onnxsim, which onnx2tf runs first, writes what it folds as
  Constant nodes: YOLOv8's anchor grid (make_anchors, [1, 2, A]) became one. The Sub taking it from the DFL
  distances, which are in ONNX's order, then transposed those to fit it, the box branch stayed channels-last
  ([1, A, 4]) beside the scores in ONNX's order ([1, C, A]), and the head's last Concat failed (issue 27:
  "Dimension 0 in both shapes must be equal, but are 4 and 2100 ... [1,2100,4], [1,14,2100]": onnx2tf's Concat
  reconciles its inputs' layouts only where a Conv's `nhwc` flag says so). Worse, TensorFlow's TFLite converter
  (2.21) writes Sub(constant, Transpose(x)) with its operands swapped (transpose sinking): with the Concat
  made to accept the two layouts the fp32 TFLite's boxes came out as lt - anchor (cosine 0.65). The graph
  onnx2tf imports (after its onnxsim runs) now has such float Constant nodes as initializers, which is what torch's
  dynamo exporter writes anyway: the decode stays in ONNX's order, with no TRANSPOSE in it. The values are the
  same tensors; each conversion's notes name the constants moved (`repairs`).
- onnx2tf runs onnxsim (0.8.1 here) on its input; onnxsim's default `fuse_attention` pass writes a
  transformer's Q/K/V projections, Softmax and output projection as one `Attention` op (a com.microsoft
  contrib op, left without its domain, in an opset-18 model): a model onnx.checker rejects, which
  onnxruntime cannot run for onnx2tf's own checks and onnx2tf has no converter for ("Attention OP is not yet
  implemented": MobileViT-S's 9 attention blocks). onnx2tf's onnxsim calls get `--skip-optimization
  fuse_attention`; every other simplification stays. (The pass is onnxsim/onnxsim#692, default-on since
  August 2026; onnx2tf's all-equal-dimensions rule is onnx2tf#125, and #317 reports the accuracy losses it
  causes in such ties.)
- Resize (onnx2tf/ops/Resize.py) takes its align_corners, asymmetric and half_pixel branches only where the
  model's opset is 17 or lower; at opset 18, which edgekit's exports use, every mode falls through to
  `tf.image.resize`, which samples at half-pixel centres. MobileViTv2 resizes its 7 x 7 map to 8 x 8 and back
  with `F.interpolate(..., align_corners=True)` (exported as coordinate_transformation_mode align_corners): its
  fp32 TFLite missed its own bar (relative error 2%, top-1 96%; found by comparing the ONNX and TFLite tensors op
  by op: the first to differ was that Resize, 3% of its range). A Resize whose mode has an exact TF form
  (align_corners or asymmetric, linear, or nearest flooring as torch writes it), with nothing opset 18 added
  (no antialias, stretched), is converted as at opset 17: RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR with the
  corner flags the mode means.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgekit.steps.onnxsim_runs import OnnxsimRuns, is_onnxsim

_UNMATCHED_ERR = 1e9  # what onnx2tf's own check reports where no comparison could be made (its ONNX_INF_INDEX_VALUE)


def first_unused_perm(tf_shape: tuple[int, ...], onnx_shape: tuple[int, ...]) -> list[int] | None:
    """The transposition onnx2tf's MatMul applies to a product of TF_SHAPE to give ONNX_SHAPE (for each ONNX
    dimension, the first TF dimension of that size not yet taken); None where the sizes do not pair up."""
    free = list(tf_shape)
    perm = []
    for dim in onnx_shape:
        if dim not in free:
            return None
        i = free.index(dim)
        perm.append(i)
        free[i] = -999
    return perm


def as_converted_validation(*, output_pairs: dict[tuple[str, str], tuple[Any, Any]], rtol: float = 1e-05,
                            atol: float = 1e-05) -> dict[Any, list[Any]]:
    """onnx2tf's `onnx_tf_tensor_validation` result format ({name pair: [onnx tensor, matched flag (0/1/2), max
    abs error, note]}), each TF tensor compared as MatMul will leave it rather than under its best transposition."""
    out: dict[Any, list[Any]] = {}
    for names, (onnx_t, tf_t) in output_pairs.items():
        onnx_a, tf_a = np.asarray(onnx_t), np.asarray(tf_t)
        if onnx_a.ndim <= 1:
            out[names] = [onnx_t, 2, 0.0, ""]
            continue
        perm = (list(range(tf_a.ndim)) if tf_a.shape == onnx_a.shape
                else first_unused_perm(tuple(tf_a.shape), tuple(onnx_a.shape)))
        if perm is None or tf_a.dtype == bool:
            out[names] = [onnx_t, 2, _UNMATCHED_ERR, f"onnx.shape:{onnx_a.shape}/tf.shape:{tf_a.shape}"]
            continue
        moved = tf_a.transpose(perm)
        err = float(np.max(np.abs(onnx_a.astype(np.float64) - moved.astype(np.float64)))) if moved.size else 0.0
        matched = bool(np.allclose(onnx_a, moved, rtol=rtol, atol=atol, equal_nan=True))
        out[names] = [onnx_t, 1 if matched else 0, 0.0 if matched else err, ""]
    return out


def _same_size_tie(tf_shape: Any, onnx_shape: Any) -> bool:
    """Whether onnx2tf's layout mark for an output of these shapes comes from its all-equal-dimensions rule."""
    try:
        dims = [None if d is None else int(d) for d in tf_shape]
    except (TypeError, ValueError):
        return False
    if len(dims) < 3 or onnx_shape is None or len(onnx_shape) != len(dims):
        return False
    rest = dims[1:]
    onnx_rest = [d if isinstance(d, int) else None for d in onnx_shape][1:]
    return None not in rest and len(set(rest)) == 1 and onnx_rest == rest


# ops whose output has the layout of their (first) input in TensorFlow, whatever onnx2tf's mark says
_LAYOUT_KEEPING = frozenset({
    "Abs", "Add", "BatchNormalization", "Cast", "Clip", "Div", "Dropout", "Elu", "Erf", "Exp", "Gelu",
    "HardSigmoid", "HardSwish", "Identity", "InstanceNormalization", "LayerNormalization", "LeakyRelu", "Log",
    "Mish", "Mul", "Neg", "Pow", "PRelu", "Reciprocal", "Relu", "Selu", "Sigmoid", "Softplus", "Sqrt", "Sub",
    "Tanh",
})


def channels_last(rank: int) -> list[int]:
    """onnx2tf's NCHW -> NHWC transposition for a tensor of RANK (0, 2, 3, ..., 1)."""
    return [0, *range(2, rank), 1]


def _input_mark(inputs: list[Any], layers: dict[str, Any]) -> bool | None:
    for inp in inputs:
        known = layers.get(getattr(inp, "name", None) or "", {})
        if "before_op_output_shape_trans" in known and not isinstance(known.get("tf_node"), np.ndarray):
            return bool(known["before_op_output_shape_trans"])
    return None


def _fix_tie(node: Any, layers: dict[str, Any]) -> None:
    """NODE's outputs whose shapes tie, made to agree with their mark (see the module docstring)."""
    entries = [layers.get(out.name, {}) for out in node.outputs]
    if not any(_same_size_tie(getattr(e.get("tf_node"), "shape", None) or (), out.shape)
               for e, out in zip(entries, node.outputs, strict=True)):
        return
    if node.op == "Transpose":
        entry = entries[0]
        if entry.get("nwc_nhwc_ndhwc_keep") or not hasattr(entry.get("tf_node"), "shape"):
            return
        import tensorflow as tf

        # onnx2tf's Transpose leaves ONNX's order; the mark (True in a tie) says channels-last: move it there
        entry["tf_node"] = tf.transpose(entry["tf_node"], perm=channels_last(len(entry["tf_node"].shape)))
        entry["before_op_output_shape_trans"] = True
    elif node.op in _LAYOUT_KEEPING:
        mark = _input_mark(list(node.inputs), layers)
        if mark is not None:
            for entry in entries:
                entry["before_op_output_shape_trans"] = mark


def _static(shape: Any) -> list[int] | None:
    try:
        dims = [int(d) for d in shape]
    except (TypeError, ValueError):
        return None
    return dims


def _fix_batch_override(node: Any, layers: dict[str, Any], batch_size: Any) -> None:
    """Outputs whose first dimension is not the batch: marked in ONNX's order where TF's shape is ONNX's."""
    if batch_size is None or not node.outputs:
        return
    for out in node.outputs:
        entry = layers.get(out.name, {})
        onnx_dims = _static(out.shape) if out.shape is not None else None
        tf_dims = _static(getattr(entry.get("tf_node"), "shape", None) or ())
        if (not onnx_dims or onnx_dims != tf_dims or onnx_dims[0] == batch_size
                or _same_size_tie(tf_dims, onnx_dims)):
            return
    for out in node.outputs:
        layers[out.name]["before_op_output_shape_trans"] = False


def _tie_aware(original: Any) -> Any:
    from functools import wraps

    def decorate(func: Any) -> Any:
        inner = original(func)

        @wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = inner(*args, **kwargs)
            node, layers = kwargs.get("graph_node"), kwargs.get("tf_layers_dict")
            if node is not None and layers is not None:
                _fix_batch_override(node, layers, kwargs.get("batch_size"))
                _fix_tie(node, layers)
            return result

        return wrapper

    decorate.edgekit_tie_aware = True  # type: ignore[attr-defined]  # a marker apply() reads; a Callable types none
    return decorate


_REPAIRS: list[str] = []  # what the workarounds changed in this conversion (apply() starts a new list)


def repairs() -> list[str]:
    """Sentences naming what a workaround changed in the graph since the last apply(), for the step's notes."""
    return list(_REPAIRS)


_CHANNELS_LAST_CONSTANT_RANKS = (3, 4, 5)  # the ranks onnx2tf's Constant converter transposes
_FLOAT_TYPES = (1, 10, 11, 16)  # TensorProto FLOAT, FLOAT16, DOUBLE, BFLOAT16


def constant_nodes_to_initializers(model: Any) -> list[str]:
    """MODEL's top-level floating-point Constant nodes of rank 3 to 5 (a `value` tensor) made initializers of the
    same name and value, in place; the tensor names moved.

    Graph outputs stay Constant nodes (an output needs a producer). Integer constants (a ScatterND's or
    Gather's indices) stay too: the bug is data meeting a feature map, and onnx2tf's index handling is left as
    it was.
    """
    graph = model.graph
    outputs = {o.name for o in graph.output}
    kept, moved = [], []
    for node in graph.node:
        attrs = list(node.attribute)
        if (node.op_type == "Constant" and node.domain in ("", "ai.onnx") and len(attrs) == 1
                and attrs[0].name == "value" and len(attrs[0].t.dims) in _CHANNELS_LAST_CONSTANT_RANKS
                and attrs[0].t.data_type in _FLOAT_TYPES and node.output[0] not in outputs):
            tensor = graph.initializer.add()
            tensor.CopyFrom(attrs[0].t)
            tensor.name = node.output[0]
            moved.append(node.output[0])
        else:
            kept.append(node)
    if moved:
        del graph.node[:]
        graph.node.extend(kept)
    return moved


class _InitializerImport:
    """Stands in for `onnx_graphsurgeon` inside onnx2tf.onnx2tf: the graphs it imports (after its onnxsim runs)
    have their rank 3-5 Constant nodes as initializers (see the module docstring). The ModelProto onnx2tf holds
    is left as it is: the change is made on a copy."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def import_onnx(self, model: Any, *args: Any, **kwargs: Any) -> Any:
        if any(n.op_type == "Constant" for n in model.graph.node):
            copy = type(model)()
            copy.CopyFrom(model)
            moved = constant_nodes_to_initializers(copy)
            if moved:
                model = copy
                note = (f"{len(moved)} float Constant node(s) of rank 3-5 read as initializers (first '{moved[0]}'): "
                        "onnx2tf writes a Constant node channels-last whatever its consumers' layout")
                if note not in _REPAIRS:
                    _REPAIRS.append(note)
        return self._real.import_onnx(model, *args, **kwargs)


ONNXSIM_SKIP = ("--skip-optimization", "fuse_attention")


class _OnnxsimCommands:
    """Stands in for the `subprocess` module inside onnx2tf.onnx2tf: its onnxsim commands skip ONNXSIM_SKIP, and
    run their passes in one process (edgekit.steps.onnxsim_runs: not a fix, the 2 x 4 s of imports it saves)."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.runs = OnnxsimRuns()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def check_output(self, args: Any, *rest: Any, **kwargs: Any) -> Any:
        args = onnxsim_args(args)
        if is_onnxsim(args):
            return self.runs.check_output(self._real, list(args), *rest, **kwargs)
        return self._real.check_output(args, *rest, **kwargs)


def onnxsim_args(args: Any) -> Any:
    """ARGS with ONNXSIM_SKIP added where they run onnxsim (a list whose first item is `onnxsim`)."""
    if isinstance(args, list | tuple) and args and str(args[0]) == "onnxsim" and ONNXSIM_SKIP[1] not in args:
        return [*args, *ONNXSIM_SKIP]
    return args


_EXACT_RESIZE = ("align_corners", "asymmetric")  # the modes onnx2tf at opset >= 18 converts as half_pixel


def resize_at_opset_17(node: Any) -> bool:
    """Whether onnx2tf should convert the Resize NODE (a graph-surgeon node) as at opset 17 (module docstring)."""
    attrs = node.attrs
    mode = str(attrs.get("mode", "nearest")).lower()
    return (attrs.get("coordinate_transformation_mode", "half_pixel") in _EXACT_RESIZE
            and not int(attrs.get("antialias", 0)) and attrs.get("keep_aspect_ratio_policy", "stretch") == "stretch"
            and (mode == "linear" or (mode == "nearest" and attrs.get("nearest_mode") == "floor"
                                      and attrs.get("coordinate_transformation_mode") == "asymmetric")))


def _resize_as_opset_17(original: Any) -> Any:
    def make_node(*args: Any, **kwargs: Any) -> Any:
        node = kwargs.get("graph_node", args[0] if args else None)
        if int(kwargs.get("opset", 0) or 0) > 17 and node is not None and resize_at_opset_17(node):
            kwargs["opset"] = 17
            note = f"Resize '{node.name}' ({node.attrs.get('coordinate_transformation_mode')}) converted as at opset 17"
            if note not in _REPAIRS:
                _REPAIRS.append(note)
        return original(*args, **kwargs)

    make_node.edgekit_resize = True  # type: ignore[attr-defined]  # a marker: installed once per process
    return make_node


def apply() -> list[str]:
    """Install the workarounds in this process's onnx2tf; the names of those installed."""
    import sys

    import onnx2tf.utils.common_functions as common

    done = []
    if not getattr(common.inverted_operation_enable_disable, "edgekit_tie_aware", False):
        loaded = [m for m in sys.modules if m.startswith("onnx2tf.ops.")]
        common.inverted_operation_enable_disable = _tie_aware(common.inverted_operation_enable_disable)
        # op modules take the decorator when first imported (onnx2tf.convert imports them lazily): those already
        # imported in this process keep onnx2tf's rule
        done.append("layout mark in same-size ties" + (f" ({len(loaded)} op modules already loaded)" if loaded else ""))

    import onnx2tf.onnx2tf as main

    if not isinstance(main.subprocess, _OnnxsimCommands):
        main.subprocess = _OnnxsimCommands(main.subprocess)
        done.append("onnxsim without attention fusion")
    main.subprocess.runs = OnnxsimRuns()  # apply() comes before each conversion: its own loop of passes
    _REPAIRS.clear()
    if not isinstance(main.gs, _InitializerImport):
        main.gs = _InitializerImport(main.gs)
        done.append("rank 3-5 Constant nodes imported as initializers")

    import onnx2tf.ops.Resize as resize

    if not getattr(resize.make_node, "edgekit_resize", False):
        resize.make_node = _resize_as_opset_17(resize.make_node)
        done.append("Resize align_corners/asymmetric at opset 18 as at opset 17")

    import onnx2tf.ops.MatMul as matmul

    if getattr(matmul, "onnx_tf_tensor_validation", None) is not as_converted_validation:
        matmul.onnx_tf_tensor_validation = as_converted_validation
        done.append("MatMul layout search compares candidates as converted")
    return done


__all__ = ["ONNXSIM_SKIP", "apply", "as_converted_validation", "first_unused_perm", "constant_nodes_to_initializers",
           "onnxsim_args", "repairs", "resize_at_opset_17"]
