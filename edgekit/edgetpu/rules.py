"""Coral's Edge TPU model requirements and supported-operations table, as data, each with its source.

Everything the pre-flight knows about the Edge TPU compiler is in this module: the general model
requirements, one OpRule per supported TFLite builtin (Coral's "known limitations" column turned
into a check where it can be checked from the flatbuffer), the compiler's status strings, and the
known fixes. The texts paraphrase Coral's documentation; the URL and section are given with each.

Primary source: Coral, "TensorFlow models on the Edge TPU"
(https://coral.ai/docs/edgetpu/models-intro/), sections "Model requirements" and "Supported
operations" (the table with "Runtime version required" and "Known limitations"), as published for
Edge TPU compiler 16.0. The same table is mirrored by Axis for ARTPEC-7, which embeds an Edge TPU
(https://developer.axis.com/computer-vision/on-device/system-on-chip/artpec-7/supported-ops/).
Ops outside the table are predicted unsupported. The ops of the original table are marked "All"
runtimes; for the ops added later the runtime number could not be re-checked against the live page
while writing this, so those rules say `verified=False` (see docs/edgetpu.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from edgekit.tflite.model import TfliteModel, TOp, TTensor

MODELS_INTRO = "https://coral.ai/docs/edgetpu/models-intro/"
REQUIREMENTS_URL = MODELS_INTRO + "#model-requirements"
OPS_TABLE_URL = MODELS_INTRO + "#supported-operations"
COMPILER_URL = "https://coral.ai/docs/edgetpu/compiler/"
# A maintainer's statement of the one-subgraph rule and its QUANTIZE exception
PARTITION_THREAD = "https://github.com/google-coral/edgetpu/issues/461"

# Edge TPU compiler 16 targets runtime 14 unless -m/--min_runtime_version says otherwise
# (coral.ai/docs/edgetpu/compiler/, "Compiler and runtime versions").
DEFAULT_MIN_RUNTIME = 14

INT8_TYPES = ("int8", "uint8")
CONST_TYPES = ("int8", "uint8", "int32", "int64")  # weights, biases, shape/axis/padding constants


@dataclass(frozen=True)
class Requirement:
    key: str
    text: str
    source: str


REQUIREMENTS: tuple[Requirement, ...] = (
    Requirement(
        "int8",
        "Tensor parameters are quantized to 8-bit fixed point (int8 or uint8); float tensors "
        "do not run on the Edge TPU.",
        REQUIREMENTS_URL,
    ),
    Requirement("static", "Tensor sizes are constant at compile time: no dynamic dimensions.", REQUIREMENTS_URL),
    Requirement(
        "const_params",
        "Model parameters such as weights and bias tensors are constant at compile time.",
        REQUIREMENTS_URL,
    ),
    Requirement(
        "rank",
        "Tensors are 1-, 2- or 3-dimensional; a tensor with more dimensions may be larger than 1 "
        "only in its 3 innermost dimensions.",
        REQUIREMENTS_URL,
    ),
    Requirement("ops", "The model uses only the operations of the supported-operations table.", OPS_TABLE_URL),
    Requirement(
        "partition",
        "The compiler partitions the graph once, at the first unsupported operation: that "
        "operation and everything after it runs on the CPU, even operations the Edge TPU supports. "
        "A QUANTIZE of a float input is the exception: it runs on the CPU before the Edge TPU part.",
        MODELS_INTRO + " (section 'Model requirements', the paragraph on partitioning); " + PARTITION_THREAD,
    ),
)

# Compiler statuses ("Operator  Count  Status" table of edgetpu_compiler -s and its .log), keyed by
# the reason codes the pre-flight uses. Quoted from real compiler logs (tests/fixtures/edgetpu).
STATUS: dict[str, str] = {
    "mapped": "Mapped to Edge TPU",
    "dtype": "Operation is working on an unsupported data type",
    "unsupported_op": "Operation not supported",
    "rank": "Tensor has unsupported rank (up to 3 innermost dimensions mapped)",
    "limitation": "Operation is otherwise supported, but not mapped due to some unspecified limitation",
    "after_partition": "More than one subgraph is not supported",
    "version": "Operation version not supported",
}

# Activations outside the table, with the replacement that is known to map.
ACTIVATION_FIXES: dict[str, tuple[str, str]] = {
    "LEAKY_RELU": (
        "replace LeakyReLU by ReLU, or by PReLU with one alpha per channel (Keras: PReLU("
        "shared_axes=[1, 2]); needs runtime 13+)",
        "https://github.com/google-coral/edgetpu/issues/597",
    ),
    "HARD_SWISH": (
        "replace hard-swish by ReLU or ReLU6 (as MobileNet-EdgeTPU does)",
        "https://github.com/google-coral/edgetpu/issues/272",
    ),
    "GELU": ("replace GELU by ReLU/ReLU6, or build it from supported ops (MUL, TANH, ADD)", OPS_TABLE_URL),
    "ELU": ("replace ELU by ReLU/ReLU6", OPS_TABLE_URL),
    "RELU_0_TO_1": ("express ReLU(0..1) as MINIMUM(RELU(x), 1) or use RELU6", OPS_TABLE_URL),
}


@dataclass
class OpCtx:
    """What a limitation check may look at: the op, its tensors, and the runtime being targeted."""

    op: TOp
    model: TfliteModel
    min_runtime: int

    def ins(self, k: int) -> TTensor | None:
        return self.model.tensor(self.op.inputs[k]) if k < len(self.op.inputs) else None

    def const(self, k: int) -> np.ndarray | None:
        t = self.ins(k)
        return t.value() if t is not None and t.const else None

    @property
    def out(self) -> TTensor | None:
        outs = self.model.op_outputs(self.op)
        return outs[0] if outs else None

    def option(self, key: str, default: Any = None) -> Any:  # the op's options as TfliteModel read them
        return self.op.options.get(key, default)


Check = Callable[[OpCtx], "str | None"]


@dataclass(frozen=True)
class OpRule:
    op: str  # TFLite builtin name
    coral_name: str  # as Coral's table writes it
    min_runtime: int  # Coral's "Runtime version required": 0 = all versions
    limitation: str = ""  # Coral's "Known limitations", paraphrased
    check: Check | None = None  # returns why the limitation is violated, or None
    caveat: str = ""  # a limitation that cannot be decided from the file; shown, does not unmap
    source: str = OPS_TABLE_URL
    verified: bool = True  # False: runtime column taken from memory of the table, not re-checked


# --- limitation checks -----------------------------------------------------------------------------
def _nontrivial(shape: Sequence[int]) -> int:
    """How many dimensions are larger than 1 (the ones the Edge TPU's shape limits count)."""
    return sum(1 for d in shape if d > 1)


def _axes(values: np.ndarray | None, rank: int) -> set[int] | None:
    if values is None:
        return None
    return {int(a) % rank for a in np.asarray(values).ravel()} if rank else set()


def _no_fused_activation(ctx: OpCtx) -> str | None:
    act = ctx.option("fusedActivationFunction", "NONE")
    return None if act in ("NONE", 0, None) else f"has a fused {act} activation (not supported on this op)"


def _same_dilation(ctx: OpCtx) -> str | None:
    w, h = ctx.option("dilationWFactor", 1), ctx.option("dilationHFactor", 1)
    if w != h:
        return f"uses different dilations in x and y ({w} vs {h})"
    if ctx.op.op == "DEPTHWISE_CONV_2D" and ctx.min_runtime <= 12 and w != 1:
        return "is dilated, which runtime 12 and older do not support"
    return None


def _concatenation(ctx: OpCtx) -> str | None:
    if why := _no_fused_activation(ctx):
        return why
    consts = [t for t in (ctx.ins(k) for k in range(len(ctx.op.inputs))) if t is not None and t.const]
    if not consts:
        return None
    if len(ctx.op.inputs) != 2:
        return "has a constant input and more than 2 inputs (a constant is allowed only as a 2-input zero pad)"
    t = consts[0]
    v = t.value()
    zp = t.quantization.zero_point if t.quantization is not None else 0
    zero = zp if isinstance(zp, int) else 0
    if v is None or np.any(v != zero):
        return "has a constant input that is not all zeros"
    return None


def _fully_connected(ctx: OpCtx) -> str | None:
    if ctx.option("weightsFormat", "DEFAULT") not in ("DEFAULT", 0):
        return f"uses the {ctx.option('weightsFormat')} weights format (only the default format is supported)"
    out = ctx.out
    if out is not None and _nontrivial(out.static_shape) > 1:
        return f"has a {len(out.static_shape)}-D output {out.static_shape} (the output must be one-dimensional)"
    return None


def _reduce(ctx: OpCtx) -> str | None:
    x = ctx.ins(0)
    rank = len(x.static_shape) if x is not None else 0
    axes = _axes(ctx.const(1), rank)
    if axes is None:
        return "has non-constant reduction axes"
    if rank >= 2 and 0 in axes:
        return "reduces over the batch dimension"
    if ctx.op.op == "MEAN" and rank == 4:
        if ctx.min_runtime <= 12 and not axes <= {1, 2}:
            return "reduces along z (channels), which runtime 12 and older do not support (x/y only)"
        if 3 in axes and x is not None and x.static_shape[3] % 4:
            return f"reduces along z with {x.static_shape[3]} channels (must be a multiple of 4)"
    return None


def _pad(ctx: OpCtx) -> str | None:
    p = ctx.const(1)
    if p is None:
        return "has non-constant paddings"
    p = np.asarray(p).reshape(-1, 2)
    if len(p) == 4 and np.any(p[0]):
        return "pads the batch dimension"
    if ctx.min_runtime <= 12 and len(p) == 4 and np.any(p[3]):
        return "pads along z (channels), which runtime 12 and older do not support (x/y only)"
    return None


def _pack(ctx: OpCtx) -> str | None:
    return "packs along the batch dimension" if int(ctx.option("axis", 0) or 0) == 0 else None


def _prelu(ctx: OpCtx) -> str | None:
    alpha = ctx.ins(1)
    if alpha is None or not alpha.const:
        return "has a non-constant alpha"
    if _nontrivial(alpha.static_shape[:-1]):
        return f"has alpha of shape {alpha.static_shape} (only the innermost dimension may be larger than 1)"
    return None


def _softmax(ctx: OpCtx) -> str | None:
    x = ctx.ins(0)
    if x is None:
        return None
    if _nontrivial(x.static_shape) > 1:
        return f"has a {len(x.static_shape)}-D input {x.static_shape} (only 1-D inputs are supported)"
    if x.elements > 16000:
        return f"has {x.elements} elements (at most 16,000)"
    return None


def _split(ctx: OpCtx) -> str | None:
    x = ctx.ins(1)
    rank = len(x.static_shape) if x is not None else 0
    axes = _axes(ctx.const(0), rank)
    return "splits along the batch dimension" if axes and rank >= 2 and 0 in axes else None


def _strided_slice(ctx: OpCtx) -> str | None:
    strides = ctx.const(3)
    if strides is None or np.any(np.asarray(strides) != 1):
        return f"has strides {None if strides is None else np.asarray(strides).tolist()} (all must be 1)"
    if ctx.option("ellipsisMask", 0) or ctx.option("newAxisMask", 0):
        return "uses an ellipsis or new-axis mask (both must be 0)"
    return None


_RESIZE_CAVEAT = "Depending on input/output size, the compiler may leave it on the CPU to avoid loss of precision."


def _resize(ctx: OpCtx) -> str | None:
    x = ctx.ins(0)
    if x is not None and len(x.static_shape) == 4 and x.static_shape[0] != 1:
        return f"has a 4-D input {x.static_shape} (input/output must be 3-D: batch 1)"
    return None


_TABLE: tuple[OpRule, ...] = (
    OpRule("ADD", "Add", 0),
    OpRule("AVERAGE_POOL_2D", "AveragePool2d", 0, "No fused activation function.", _no_fused_activation),
    OpRule(
        "CONCATENATION",
        "Concatenation",
        0,
        "No fused activation function. If any input is a compile-time "
        "constant tensor, there must be only 2 inputs, and this constant tensor must be all zeros.",
        _concatenation,
    ),
    OpRule("CONV_2D", "Conv2d", 0, "Must use the same dilation in x and y dimensions.", _same_dilation),
    OpRule(
        "DEPTHWISE_CONV_2D",
        "DepthwiseConv2d",
        0,
        "Must use the same dilation in x and y dimensions (runtime <= 12: no dilation).",
        _same_dilation,
    ),
    OpRule("EXPAND_DIMS", "ExpandDims", 13, verified=False),
    OpRule(
        "FULLY_CONNECTED",
        "FullyConnected",
        0,
        "Only the default format is supported for fully-connected weights. Output tensor is one-dimensional.",
        _fully_connected,
    ),
    OpRule("L2_NORMALIZATION", "L2Normalization", 0),
    OpRule("LOGISTIC", "Logistic", 0),
    OpRule("UNIDIRECTIONAL_SEQUENCE_LSTM", "LSTM", 14, "Unidirectional LSTM only.", verified=False),
    OpRule("MAXIMUM", "Maximum", 0),
    OpRule("MAX_POOL_2D", "MaxPool2d", 0, "No fused activation function.", _no_fused_activation),
    OpRule(
        "MEAN",
        "Mean",
        0,
        "No reduction in batch dimension. If a z-reduction, the z-dimension must be a "
        "multiple of 4 (runtime <= 12: reduction along x and/or y only).",
        _reduce,
    ),
    OpRule("MINIMUM", "Minimum", 0),
    OpRule("MUL", "Mul", 0),
    OpRule("PACK", "Pack", 13, "No packing in batch dimension.", _pack, verified=False),
    OpRule("PAD", "Pad", 0, "No padding in batch dimension (runtime <= 12: padding along x and/or y only).", _pad),
    OpRule(
        "PRELU",
        "PReLU",
        13,
        "Alpha must be 1-dimensional (only the innermost dimension can be >1 size).",
        _prelu,
        verified=False,
    ),
    OpRule("QUANTIZE", "Quantize", 13, verified=False),
    OpRule("REDUCE_MAX", "ReduceMax", 14, "Cannot operate on the batch dimension.", _reduce, verified=False),
    OpRule("REDUCE_MIN", "ReduceMin", 14, "Cannot operate on the batch dimension.", _reduce, verified=False),
    OpRule("RELU", "ReLU", 0),
    OpRule("RELU6", "ReLU6", 0),
    OpRule("RELU_N1_TO_1", "ReLUN1To1", 0),
    OpRule("RESHAPE", "Reshape", 0, caveat="Certain reshapes might not be mapped for large tensor sizes."),
    OpRule(
        "RESIZE_BILINEAR",
        "ResizeBilinear",
        0,
        "Input/output is a 3-dimensional tensor.",
        _resize,
        caveat=_RESIZE_CAVEAT,
    ),
    OpRule(
        "RESIZE_NEAREST_NEIGHBOR",
        "ResizeNearestNeighbor",
        0,
        "Input/output is a 3-dimensional tensor.",
        _resize,
        caveat=_RESIZE_CAVEAT,
    ),
    OpRule("RSQRT", "Rsqrt", 14, verified=False),
    OpRule("SLICE", "Slice", 0),
    OpRule("SOFTMAX", "Softmax", 0, "Supports only 1-D input tensor with a max of 16,000 elements.", _softmax),
    OpRule("SPACE_TO_DEPTH", "SpaceToDepth", 0),
    OpRule("SPLIT", "Split", 0, "No splitting in batch dimension.", _split),
    OpRule("SQUARED_DIFFERENCE", "SquaredDifference", 14, verified=False),
    OpRule("SQUEEZE", "Squeeze", 0),
    OpRule(
        "STRIDED_SLICE",
        "StridedSlice",
        0,
        "Supported only when all strides are equal to 1 (effectively a "
        "Slice), with ellipsis-axis-mask == 0 and new-axis-mask == 0.",
        _strided_slice,
    ),
    OpRule("SUB", "Sub", 0),
    OpRule("SUM", "Sum", 13, "Cannot operate on the batch dimension.", _reduce, verified=False),
    OpRule("TANH", "Tanh", 0),
    OpRule("TRANSPOSE", "Transpose", 14, verified=False),
    OpRule("TRANSPOSE_CONV", "TransposeConv", 13, verified=False),
)

RULES: dict[str, OpRule] = {r.op: r for r in _TABLE}

# Ops whose weights and bias must be compile-time constants (inputs 1 and 2)
PARAM_INPUTS: dict[str, tuple[int, ...]] = {
    "CONV_2D": (1, 2),
    "DEPTHWISE_CONV_2D": (1, 2),
    "FULLY_CONNECTED": (1, 2),
    "TRANSPOSE_CONV": (1, 3),
}
