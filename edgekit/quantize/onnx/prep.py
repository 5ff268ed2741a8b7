"""Graph changes made before onnxruntime's static quantizer sees a model, for faults of the quantizer itself.

Shared biases (microsoft/onnxruntime#24705, closed unfixed; still so in onnxruntime 1.32): when one float
bias initializer feeds several Conv/Gemm/normalization nodes, QDQQuantizer gives each later node a copy named
`<bias><n>`, with n one past the largest numeric suffix among the *initializers* that start with the bias
name; it never looks at the graph's other tensor names. The torch exporter names tensors `val_<k>`, so the
copy of `val_53` made for the tenth GroupNorm (InstanceNormalization) of a BiT ResNet is `val_539`, which is
also the output of a Reshape. From then on that activation counts as an initializer, and the quantizer stops
with "Quantization parameter shared mode is not supported for weight yet" (the Reshape's output shares its
input's parameters, and a weight cannot); where the colliding tensor is a plain activation, the model comes
out silently wrong instead. Giving each node its own copy beforehand, under a name no tensor has, is what
the quantizer would have done, without the collision.
"""

from __future__ import annotations

from typing import Any

# onnxruntime's QDQ quantizers that quantize input 2 as a bias (quantize_bias_tensor): conv.py, gemm.py, norm.py
BIAS_OPS = ("Conv", "ConvTranspose", "Gemm", "InstanceNormalization", "LayerNormalization", "BatchNormalization")


def tensor_names(model: Any) -> set[str]:
    """Every name a tensor of MODEL's main graph has: initializers, inputs, outputs, value_info, node outputs."""
    g = model.graph
    names = {i.name for i in g.initializer} | {v.name for v in (*g.input, *g.output, *g.value_info)}
    for node in g.node:
        names.update(node.input)
        names.update(node.output)
    return names


def unshare_biases(model: Any) -> list[str]:
    """Give each node of BIAS_OPS its own copy of a float bias initializer that an earlier node reads too (in
    place); the names of the biases that were shared, once each."""
    from onnx import TensorProto

    g = model.graph
    inits = {i.name: i for i in g.initializer}
    taken = tensor_names(model)
    seen: set[str] = set()
    shared: list[str] = []
    for node in g.node:
        if node.op_type not in BIAS_OPS or len(node.input) < 3 or not node.input[2]:
            continue
        name = node.input[2]
        init = inits.get(name)
        if init is None or init.data_type not in (TensorProto.FLOAT, TensorProto.FLOAT16):
            continue
        if name not in seen:
            seen.add(name)
            continue
        k = 1
        while f"{name}.copy{k}" in taken:
            k += 1
        copy = TensorProto()
        copy.CopyFrom(init)
        copy.name = f"{name}.copy{k}"
        g.initializer.append(copy)
        taken.add(copy.name)
        node.input[2] = copy.name
        if name not in shared:
            shared.append(name)
    return shared


__all__ = ["BIAS_OPS", "tensor_names", "unshare_biases"]
