"""onnxruntime's static quantization as every ONNX recipe calls it, and the calibration data reader.

Its own module so that the recipes (edgekit.quantize.onnx.recipes) and the passes they run
(bias correction) both call it without importing each other. onnxruntime is imported when called.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np


class Reader:
    """onnxruntime CalibrationDataReader over our samples (duck-typed: get_next / rewind)."""

    def __init__(self, name: str, samples: np.ndarray, batch: int,
                 feeds: dict[str, np.ndarray] | None = None) -> None:
        self.name, self.samples, self.batch, self.i = name, samples, max(1, batch), 0
        self.feeds = feeds or {name: samples}  # several inputs: every one by its graph input name

    def get_next(self) -> dict[str, np.ndarray] | None:
        if self.i >= len(self.samples):
            return None
        chunk = {k: v[self.i:self.i + self.batch] for k, v in self.feeds.items()}
        self.i += self.batch
        return chunk

    def rewind(self) -> None:
        self.i = 0


class _OutOfRangeAxis(logging.Filter):
    """Drops onnxruntime's "Axis 1 is out-of-range for weight ..." warnings, keeping the weights' names.

    onnxruntime 1.2x asks every normalization's scale for per-channel axis 1 (quantization/operators/norm.py),
    which a LayerNormalization's 1-D scale does not have: it then quantizes that scale per tensor, and says so on
    the root logger, once per node and per quantization (a ConvNeXt-T: 18 lines on the terminal each time).
    """

    def __init__(self) -> None:
        super().__init__()
        self.weights: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if "is out-of-range for weight" not in text:
            return True
        self.weights.add(text.split("'")[1] if text.count("'") >= 2 else text)
        return False


@contextlib.contextmanager
def _quiet_axis_warnings(notes: list[str] | None) -> Iterator[None]:
    """While inside, onnxruntime's out-of-range-axis warnings become one note in NOTES."""
    root, quiet = logging.getLogger(), _OutOfRangeAxis()
    root.addFilter(quiet)
    try:
        yield
    finally:
        root.removeFilter(quiet)
        if quiet.weights and notes is not None:
            notes.append(f"{len(quiet.weights)} normalization scale(s) quantized per tensor: onnxruntime's "
                         "per-channel axis 1 does not exist on a 1-D LayerNormalization scale")


def quantize(src: Path, dst: Path, data: Any, config: Any) -> None:
    """onnxruntime quantize_static with CONFIG's calibration statistic (`mse`: edgekit.quantize.onnx.mse) and float
    nodes."""
    from onnxruntime.quantization import CalibrationMethod, QuantType

    method = {"minmax": CalibrationMethod.MinMax, "percentile": CalibrationMethod.Percentile,
              "entropy": CalibrationMethod.Entropy, "mse": CalibrationMethod.MinMax}[config.calibrate]
    cache = data.cache
    if config.calibrate == "mse":  # onnxruntime has no MSE method: edgekit's ranges, given as a MinMax cache
        from edgekit.quantize.onnx.mse import write_mse_cache

        if cache is None or not cache.is_file():  # without a cache to share: made afresh for SRC
            cache = cache or data.work / "calibration.mse.json"
            write_mse_cache(src, data, cache)
    qtype = QuantType.QUInt8 if config.unsigned else QuantType.QInt8  # the weights' type (uint8 only in U8U8)
    # the activations': int16 (w8a16), uint8 (U8S8, the form x86 fuses: edgekit.quantize.cpu_forms; or U8U8), int8
    act = {"int16": QuantType.QInt16, "uint8": QuantType.QUInt8}.get(getattr(config, "activations", "int8"), qtype)
    extra: dict[str, Any] = {"ActivationSymmetric": False, "WeightSymmetric": True}
    if config.calibrate == "percentile":
        extra["CalibPercentile"] = config.percentile
    int16_nodes = getattr(config, "int16_nodes", ())
    if int16_nodes:  # mixed int8/int16: these nodes' activation tensors (inputs and outputs) quantized to 16 bits
        extra["TensorQuantOverrides"] = int16_overrides(src, int16_nodes)
    with _quiet_axis_warnings(getattr(data, "notes", None)), _quiet_opset_bump(getattr(data, "notes", None)):
        _quantize_static(src, dst, data, config, cache, method, qtype, extra, act)
    _float_half_step_inputs(dst, data)
    if getattr(config, "decode_heads", ()):  # a detector's last head layers write float for the float decode
        import onnx

        from edgekit.quantize.detect_decode import float_head_outputs

        model = onnx.load(str(dst))
        if float_head_outputs(model, config.decode_heads):
            onnx.save(model, str(dst))
    shutil.rmtree(data.work / "augmented_model.onnx", ignore_errors=True)


def _float_half_step_inputs(dst: Path, data: Any) -> None:
    """DST's graph inputs whose calibration values are 8-bit levels with zero half-way between two of them, which
    no int8 grid holds, left float (edgekit.quantize.onnx.input_grid); DATA's notes say which."""
    import onnx

    from edgekit.quantize.onnx.input_grid import half_step_inputs, keep_inputs_float

    feeds = getattr(data, "feeds", None) or {data.name: data.samples}
    model = onnx.load(str(dst))
    changed = keep_inputs_float(model, half_step_inputs(model, feeds))
    if not changed:
        return
    onnx.save(model, str(dst))
    notes = getattr(data, "notes", None)
    if notes is not None:
        notes.append(f"input(s) {', '.join(changed)} left float: their calibration values are 8-bit levels with zero "
                     "half-way between two of them (pixels normalised around 127.5), which int8 would round by up to "
                     "half a step each; the first layer reads them in float (edgekit.quantize.onnx.input_grid)")


def int16_overrides(src: Path, nodes: tuple[str, ...]) -> dict[str, list[dict[str, Any]]]:
    """onnxruntime's TensorQuantOverrides that make every activation NODES read or write int16 (not the weights and
    biases, which stay int8 / int32): the mixed int8/int16 recipe's layers."""
    import onnx
    from onnxruntime.quantization import QuantType

    model = onnx.load(str(src), load_external_data=False)
    consts = {i.name for i in model.graph.initializer} | {
        o for n in model.graph.node if n.op_type == "Constant" for o in n.output}
    wanted = set(nodes)
    tensors = [t for n in model.graph.node if n.name in wanted for t in (*n.input, *n.output) if t and t not in consts]
    return {t: [{"quant_type": QuantType.QInt16}] for t in dict.fromkeys(tensors)}


class _OpsetBump(logging.Filter):
    """Drops onnxruntime's "update the model to opset >= 21" warning: 16-bit QuantizeLinear needs opset 21, and
    onnxruntime raises the model's opset itself; the record's notes say so once."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = False

    def filter(self, record: logging.LogRecord) -> bool:
        if "opset" in record.getMessage() and "16-bit" in record.getMessage():
            self.seen = True
            return False
        return True


@contextlib.contextmanager
def _quiet_opset_bump(notes: list[str] | None) -> Iterator[None]:
    root, quiet = logging.getLogger(), _OpsetBump()
    root.addFilter(quiet)
    try:
        yield
    finally:
        root.removeFilter(quiet)
        note = ("opset raised to 21 by onnxruntime: 16-bit QuantizeLinear/DequantizeLinear are standard ONNX from "
                "opset 21 (onnxruntime >= 1.18 runs them; older runtimes cannot load the model)")
        if quiet.seen and notes is not None and note not in notes:
            notes.append(note)


def _quantize_static(src: Path, dst: Path, data: Any, config: Any, cache: Path | None, method: Any, qtype: Any,
                     extra: dict[str, Any], act: Any = None) -> None:
    from onnxruntime.quantization import QuantFormat, quantize_static

    from edgekit.quantize.onnx.calibrate import chunked_reader, strided_options

    quantize_static(
        # fed and folded a chunk at a time (edgekit.quantize.onnx.calibrate): histograms held every sample's tensors
        str(src), str(dst), chunked_reader(src, data.name, data.samples, data.batch, data.feeds),
        # reduce_range (7-bit weights): x86 CPUs without VNNI saturate in onnxruntime's u8 x s8 convolutions
        # (AVX2 here: the Keras twin's agreement went 98.9% -> 99.6%); the deployment CPU's row decides it
        # (edgekit.quantize.cpu_forms), as it decides the activations' sign and per-channel weights
        quant_format=QuantFormat.QDQ, per_channel=getattr(config, "per_channel", True),
        reduce_range=config.reduce_range,
        # uint8 activations and weights (the uint8 recipe): onnxruntime's U8U8 kernels do not saturate, so full 8-bit
        # weights are safe on every CPU
        activation_type=act or qtype, weight_type=qtype, calibrate_method=method,
        nodes_to_exclude=list(config.excluded()) or None, extra_options={**extra, **strided_options()},
        calibration_cache_path=str(cache) if cache is not None else None,
    )


__all__ = ["Reader", "int16_overrides", "quantize"]
