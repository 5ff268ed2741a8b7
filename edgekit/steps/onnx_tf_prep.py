"""Graph clean-up on edgekit's private copy of an ONNX model, before onnx2tf reads it.

Each fix is for a pattern that real exporters write and onnx2tf (1.28.8) cannot take, found on a
model in the zoo (docs/zoo.md); each returns a sentence per change, or nothing where the graph
does not have the pattern, so a model that converted before goes to onnx2tf unchanged.

- Negative dims. Paddle2ONNX writes a free batch as `dim_value: -1` (ONNX wants a `dim_param` or no
  value: dims are >= 0). ONNX shape inference carries the -1 into every `value_info` it writes, and
  onnx2tf compares those shapes with TensorFlow's (`TensorShape([-1, ...])`), which raises
  "Dimension -1 must be >= 0" at the first Add (PP-OCR's orientation classifier). Each negative dim
  becomes a named free dim: the batch keeps a name ("batch"), an inner dim is left unknown.
- A symbolic batch. torch's exporter names the batch ("s99"); onnx2tf's `batch_size` fixes the input
  only, and its Transpose handling compares the ONNX shapes it reads (['s99', 40, 40, 96]) with
  TensorFlow's ((1, 40, 40, 96)) to tell whether a tensor is already channels-last. A symbolic dim
  never matches, so the Transpose -> LayerNormalization -> Transpose around every ConvNeXt norm was
  applied literally and the next depthwise Conv got NCHW data ("groups=96 but the input has 40
  channels", transformers' ConvNeXt tiny). BiT's GroupNorm (Reshape to [N, 32, -1] ->
  InstanceNormalization -> Reshape back) came out channels-first the same way, and the next Conv
  failed ("node_Conv_3516: Exception encountered when calling layer tf.nn.convolution_1"); its
  run-time weight standardisation is not the cause (onnx2tf's onnxsim pass folds it). The batch is
  fixed to the TFLite batch in the whole graph and shapes are inferred again, so every shape onnx2tf
  reads is static.
- A constant as the first operand of Mul/Add. ConvNeXt's and PoolFormer's layer scale is exported
  as Mul(gamma, x); onnx2tf's broadcasting reshapes a leading rank-1 constant along the wrong axis
  ("node_mul_20: Dimensions must be equal, but are 40 and 96 with input shapes: [1,40,40,96],
  [1,1,96,1]"; upstream: PINTO0309/onnx2tf#698). Both ops commute: the constant goes second, the
  order onnx2tf handles.
- Node names TensorFlow refuses. onnx2tf names each Keras/TF op after its ONNX node, and TensorFlow
  takes only `[A-Za-z0-9_.\\/>-]` in a name scope: Paddle2ONNX's "Softmax@0" stops the conversion
  with "'Softmax@0' is not a valid scope name". Such node names are rewritten (tensor names, the
  model's input and output names among them, stay).
"""

from __future__ import annotations

import re
from typing import Any

BATCH_DIM_PARAM = "batch"


def _value_infos(graph: Any) -> list[Any]:
    return [*graph.input, *graph.output, *graph.value_info]


def free_negative_dims(model: Any) -> list[str]:
    """Turn every `dim_value < 0` of MODEL's inputs, outputs and value_info into a free dim (in place)."""
    fixed: list[str] = []
    for value in _value_infos(model.graph):
        if not value.type.HasField("tensor_type"):
            continue
        dims = value.type.tensor_type.shape.dim
        negative = [i for i, d in enumerate(dims) if d.HasField("dim_value") and d.dim_value < 0]
        for i in negative:
            dims[i].Clear()
            dims[i].dim_param = BATCH_DIM_PARAM if i == 0 else f"{value.name}_dim{i}"
        if negative:
            fixed.append(value.name)
    if not fixed:
        return []
    return [f"{len(fixed)} tensor shape(s) had a negative dim (-1, as Paddle2ONNX writes a free batch; first "
            f"'{fixed[0]}'): made free dims, which onnx2tf accepts"]


_NOT_IN_SCOPE = re.compile(r"[^A-Za-z0-9_.\\/>-]")


def tf_safe_node_names(model: Any) -> list[str]:
    """Rename MODEL's nodes whose names TensorFlow would refuse as a name scope (in place); unique names kept."""
    taken = {n.name for n in model.graph.node}
    renamed: list[str] = []
    for node in model.graph.node:
        if not _NOT_IN_SCOPE.search(node.name):  # a leading "/" (torch's names) onnx2tf rewrites itself
            continue
        base = _NOT_IN_SCOPE.sub("_", node.name)
        new, k = base, 1
        while new in taken:
            new, k = f"{base}_{k}", k + 1
        taken.add(new)
        renamed.append(f"'{node.name}' -> '{new}'")
        node.name = new
    if not renamed:
        return []
    return [f"{len(renamed)} node name(s) TensorFlow refuses as a scope renamed ({', '.join(renamed[:3])}"
            f"{', ...' if len(renamed) > 3 else ''})"]


def static_batch(model: Any, batch: int) -> list[str]:
    """Fix the batch dim of MODEL's inputs to BATCH throughout the graph and infer shapes again (in place)."""
    from edgekit.core._deps import require

    onnx = require("onnx")
    graph = model.graph
    inits = {i.name for i in graph.initializer}
    names: set[str] = set()
    fixed: list[str] = []
    for value in graph.input:
        dims = value.type.tensor_type.shape.dim if value.type.HasField("tensor_type") else []
        if value.name in inits or not dims or (dims[0].HasField("dim_value") and dims[0].dim_value > 0):
            continue
        if dims[0].dim_param:
            names.add(dims[0].dim_param)
        dims[0].Clear()
        dims[0].dim_value = batch
        fixed.append(value.name)
    if not fixed:
        return []
    for value in _value_infos(graph):  # the same symbol wherever it stands (outputs, value_info)
        for dim in value.type.tensor_type.shape.dim if value.type.HasField("tensor_type") else []:
            if dim.HasField("dim_param") and dim.dim_param in names:
                dim.Clear()
                dim.dim_value = batch
    known = list(graph.value_info)
    del graph.value_info[:]
    try:
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError):  # an op onnx cannot infer: keep
        # the shapes as they were, the symbol replaced
        graph.value_info.extend(known)
        return [f"batch of input(s) {fixed} fixed to {batch} (shape inference failed; symbols replaced)"]
    graph.value_info.extend(inferred.graph.value_info)
    return [f"batch of input(s) {', '.join(repr(n) for n in fixed)} fixed to {batch} and shapes inferred again "
            f"({len(graph.value_info)} tensors), so onnx2tf compares static shapes"]


_COMMUTATIVE = ("Mul", "Add")


def constants_second(model: Any) -> list[str]:
    """Put the constant operand of MODEL's Mul/Add nodes second (in place); the result is the same."""
    graph = model.graph
    const = {i.name for i in graph.initializer} | {o for n in graph.node if n.op_type == "Constant" for o in n.output}
    swapped = []
    for node in graph.node:
        if node.op_type in _COMMUTATIVE and len(node.input) == 2 and node.input[0] in const \
                and node.input[1] not in const:
            first, second = node.input
            node.input[0], node.input[1] = second, first
            swapped.append(node.name or node.op_type)
    if not swapped:
        return []
    return [f"{len(swapped)} Mul/Add node(s) with a constant first operand reordered, constant second (first "
            f"'{swapped[0]}'): onnx2tf broadcasts a leading constant along the wrong axis (onnx2tf#698)"]


_SQRT2 = 1.4142135


def _scalar(graph: Any, name: str) -> float | None:
    """The value of NAME where it is a one-element constant (an initializer or a Constant node's), else None."""
    from onnx import numpy_helper

    for init in graph.initializer:
        if init.name == name:
            arr = numpy_helper.to_array(init)
            return float(arr.reshape(-1)[0]) if arr.size == 1 else None
    for node in graph.node:
        if node.op_type == "Constant" and node.output[0] == name and node.attribute:
            value = numpy_helper.to_array(node.attribute[0].t) if node.attribute[0].HasField("t") else None
            return float(value.reshape(-1)[0]) if value is not None and value.size == 1 else None
    return None


def erf_gelu_to_gelu(model: Any) -> list[str]:
    """Each exact GELU torch writes in five nodes, Mul(x, Mul(0.5, Add(Erf(Div(x, sqrt 2)), 1))), as one Gelu.

    TFLite has no ERF, so onnx2tf writes Erf as a polynomial whose sign and 1/(1 + p|x|) are DIVs by values
    near 0: in int8 the divisor rounds to its zero point and LiteRT's DIV refuses to run (ConvNeXt, PoolFormer:
    "div.cc data[i] != zero_point"). ONNX's Gelu (opset 20) becomes TFLite's own GELU, which has int8 kernels.
    The model's opset is raised to 20 where it was lower (edgekit's private copy only).
    """
    import numpy as np
    from onnx import helper

    graph = model.graph
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    producer = {o: n for n in graph.node for o in n.output}

    def only(name: str, op: str) -> Any | None:
        nodes = consumers.get(name, [])
        return nodes[0] if len(nodes) == 1 and nodes[0].op_type == op else None

    def other(node: Any, name: str) -> str:
        return node.input[1] if node.input[0] == name else node.input[0]

    def near(value: float | None, want: float) -> bool:
        return value is not None and bool(np.isclose(value, want, rtol=1e-5))

    found: list[tuple[list[Any], str, str]] = []
    for erf in graph.node:
        if erf.op_type != "Erf":
            continue
        div = producer.get(erf.input[0])
        if div is None or div.op_type != "Div" or not near(_scalar(graph, div.input[1]), _SQRT2) \
                or only(div.output[0], "Erf") is None:
            continue
        x = div.input[0]
        add = only(erf.output[0], "Add")
        half = add and only(add.output[0], "Mul")
        last = half and only(half.output[0], "Mul")
        if not (add and half and last and near(_scalar(graph, other(add, erf.output[0])), 1.0)
                and near(_scalar(graph, other(half, add.output[0])), 0.5) and other(last, half.output[0]) == x):
            continue
        found.append(([div, erf, add, half, last], x, last.output[0]))
    if not found:
        return []
    drop = {id(n) for nodes, _, _ in found for n in nodes}
    first = {id(nodes[-1]): (x, y, nodes[-1].name) for nodes, x, y in found}
    kept = []
    for node in graph.node:
        if id(node) in first:
            x, y, name = first[id(node)]
            kept.append(helper.make_node("Gelu", [x], [y], name=f"{name}_gelu" if name else "", approximate="none"))
        elif id(node) not in drop:
            kept.append(node)
    _replace_nodes(graph, kept, [n for nodes, _, _ in found for n in nodes])
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx") and opset.version < 20:
            opset.version = 20
    return [f"{len(found)} GELU(s) written with Erf made one Gelu node each (first at '{found[0][2]}'): TFLite has "
            "no ERF, and the polynomial onnx2tf writes instead divides by values int8 rounds to zero"]


def _replace_nodes(graph: Any, kept: list[Any], dropped: list[Any]) -> None:
    """GRAPH's nodes become KEPT; the initializers only the DROPPED nodes read go with them."""
    del graph.node[:]
    graph.node.extend(kept)
    used = {name for node in graph.node for name in node.input}
    unused = {name for n in dropped for name in n.input} - used
    inits = [i for i in graph.initializer if i.name not in unused]
    del graph.initializer[:]
    graph.initializer.extend(inits)


_AXES_CHW = [1, 2, 3]


def one_group_norm_to_reductions(model: Any) -> list[str]:
    """GroupNorm with one group, Reshape(x, [N, 1, -1]) -> InstanceNormalization -> Reshape back, written on x.

    torch exports GroupNorm as a reshape to (N, groups, C*H*W), an InstanceNormalization and a reshape back.
    With one group (PoolFormer's norm) onnx2tf loses the layout in the 3-D middle: the fp32 TFLite came out
    with cosine 0.56 against the source, first wrong at that reshape (onnx2tf's own per-node check). The same
    normalisation over C, H and W is written as ReduceMean/Sub/Mul/ReduceMean/Add/Sqrt/Div on the 4-D tensor,
    whose axes onnx2tf maps. Exact up to float rounding; the affine Mul/Add after it stay as they were.
    """
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    from edgekit.steps.onnx_pools import _static_shapes

    graph = model.graph
    if not any(n.op_type == "InstanceNormalization" for n in graph.node):
        return []
    try:  # static_batch inferred shapes only where it fixed a symbolic batch
        shapes = _static_shapes(onnx.shape_inference.infer_shapes(model).graph)
    except Exception:  # noqa: BLE001 - an uninferable graph keeps its pattern: onnx2tf then says what fails
        shapes = _static_shapes(graph)
    producer = {o: n for n in graph.node for o in n.output}
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 18)
    found = []
    for norm in graph.node:
        if norm.op_type != "InstanceNormalization" or len(norm.input) < 3:
            continue
        first = producer.get(norm.input[0])
        after = consumers.get(norm.output[0], [])
        if first is None or first.op_type != "Reshape" or len(after) != 1 or after[0].op_type != "Reshape":
            continue
        x, mid, back = first.input[0], shapes.get(norm.input[0]), shapes.get(after[0].output[0])
        if not (mid and len(mid) == 3 and mid[1] == 1 and back and shapes.get(x) == back and len(back) == 4):
            continue
        scale, bias = (_scalar(graph, norm.input[1]), _scalar(graph, norm.input[2]))
        if scale != 1.0 or bias != 0.0 or len(consumers.get(norm.input[0], [])) != 1:
            continue
        eps = next((a.f for a in norm.attribute if a.name == "epsilon"), 1e-5)
        found.append((first, norm, after[0], x, eps))
    if not found:
        return []
    replaced: dict[int, list[Any]] = {}
    drop: set[int] = set()
    for i, (first, norm, back, x, eps) in enumerate(found):
        p = f"edgekit_gn1_{i}"
        graph.initializer.append(numpy_helper.from_array(np.array(eps, np.float32), f"{p}_eps"))
        if opset >= 18:
            graph.initializer.append(numpy_helper.from_array(np.array(_AXES_CHW, np.int64), f"{p}_axes"))

        def mean(src: str, dst: str, p: str = p) -> Any:
            if opset >= 18:
                return helper.make_node("ReduceMean", [src, f"{p}_axes"], [dst], keepdims=1)
            return helper.make_node("ReduceMean", [src], [dst], axes=_AXES_CHW, keepdims=1)

        replaced[id(back)] = [
            mean(x, f"{p}_mean"), helper.make_node("Sub", [x, f"{p}_mean"], [f"{p}_centred"]),
            helper.make_node("Mul", [f"{p}_centred", f"{p}_centred"], [f"{p}_sq"]), mean(f"{p}_sq", f"{p}_var"),
            helper.make_node("Add", [f"{p}_var", f"{p}_eps"], [f"{p}_var_eps"]),
            helper.make_node("Sqrt", [f"{p}_var_eps"], [f"{p}_std"]),
            helper.make_node("Div", [f"{p}_centred", f"{p}_std"], [back.output[0]], name=f"{p}_norm")]
        drop |= {id(first), id(norm), id(back)}
    kept = []
    for node in graph.node:
        if id(node) in replaced:
            kept.extend(replaced[id(node)])
        elif id(node) not in drop:
            kept.append(node)
    _replace_nodes(graph, kept, [n for first, norm, back, _, _ in found for n in (first, norm, back)])
    return [f"{len(found)} one-group GroupNorm(s) (Reshape -> InstanceNormalization -> Reshape) written as "
            "reductions over C, H, W: onnx2tf loses the layout in the 3-D middle"]


def prepare(model: Any, batch: int = 1) -> list[str]:
    """Every clean-up onnx2tf needs, applied to MODEL (an onnx.ModelProto, changed in place); what changed."""
    from edgekit.steps.onnx_pools import whole_input_pools_to_global  # needs the static shapes static_batch gives

    return [*free_negative_dims(model), *static_batch(model, batch), *whole_input_pools_to_global(model),
            *erf_gelu_to_gelu(model), *one_group_norm_to_reductions(model), *constants_second(model),
            *tf_safe_node_names(model)]


__all__ = ["constants_second", "erf_gelu_to_gelu", "free_negative_dims", "one_group_norm_to_reductions", "prepare",
           "static_batch", "tf_safe_node_names"]
