"""OpenVINO backend: OpenVINO IR (model.xml + model.bin) and ONNX files, on the CPU, an Intel GPU or NPU.

OpenVINO reads ONNX directly (QDQ int8 included: its CPU plugin runs the quantized convolutions in
int8), so an ONNX artifact can be measured with `--runtime openvino` beside onnxruntime.
Devices: "cpu" always; "gpu" and "npu" where `Core().available_devices` lists them ("GPU", "GPU.0",
"NPU"): otherwise NotAvailable saying what OpenVINO sees and what to install.
How it compiles (the profile's settings): `threads` -> INFERENCE_NUM_THREADS; PERFORMANCE_HINT
LATENCY with one request (single-stream, as `edgekit profile` measures; load option `hint`:
latency/throughput); on the CPU INFERENCE_PRECISION_HINT f32, because OpenVINO otherwise runs fp32
models in bf16 on CPUs with AMX/AVX512-BF16 (seen here: an fp32 row would be a bf16 row); load option
`inference_precision` (f32/bf16/f16) chooses otherwise. `info()` records what the compiled model reports.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from edgekit.core._deps import version_of
from edgekit.core.artifact import TensorSpec
from edgekit.core.errors import MissingDependency, UnsupportedModel, UsageError
from edgekit.core.sniff import is_openvino_ir, looks_like_onnx, read_head
from edgekit.runtimes.base import Runtime, input_array

_OV_DEVICES = {"cpu": "CPU", "gpu": "GPU", "npu": "NPU"}
_HINTS = {"latency": "LATENCY", "throughput": "THROUGHPUT", "cumulative_throughput": "CUMULATIVE_THROUGHPUT"}
_PRECISIONS = ("f32", "bf16", "f16")
# OpenVINO element type names (str(ov.Type)) -> numpy dtype names
_DTYPES = {"f32": "float32", "f16": "float16", "f64": "float64", "bf16": "bfloat16", "i8": "int8", "u8": "uint8",
           "i16": "int16", "u16": "uint16", "i32": "int32", "u32": "uint32", "i64": "int64", "u64": "uint64",
           "boolean": "bool"}
DEVICE_HINTS = {
    "gpu": "An Intel GPU needs Intel's GPU compute runtime (Debian/Ubuntu: intel-opencl-icd and "
           "libze-intel-gpu1/level-zero) and read access to /dev/dri/renderD*; see OpenVINO's GPU configuration guide.",
    "npu": "An Intel NPU (Core Ultra) needs the Intel NPU driver (linux-npu-driver, /dev/accel/accel0) and "
           "static input shapes; see OpenVINO's NPU device guide.",
}
LOAD_HINT = ("An OpenVINO IR is two files: model.xml and model.bin beside it, from the same conversion "
             "(re-run `edgekit convert ... --target openvino`).")


@functools.lru_cache(maxsize=1)
def core() -> Any:
    """One openvino.Core per process (it holds the device plugins; compile settings are per model)."""
    from edgekit.core.vendor_telemetry import require_quiet

    return require_quiet("openvino", purpose="run OpenVINO IR and ONNX models").Core()


def ir_weights(xml: Path) -> Path:
    """The model.bin of the IR whose graph is XML; UsageError where it is not beside it."""
    weights = xml.with_suffix(".bin")
    if not weights.is_file():
        raise UsageError(f"{xml} is an OpenVINO IR graph, but its weights file {weights.name} is not beside it.",
                         hint=LOAD_HINT)
    return weights


def read_model(path: Path) -> Any:
    """The ov.Model of PATH, an IR (.xml + .bin) or an ONNX file; UnsupportedModel for anything else.

    Files are hostile input: an .xml is handed to OpenVINO's reader only when it starts like an IR (a <net>
    root, no document type, so no entity can be declared), and nothing else is offered to its other frontends.
    """
    if is_openvino_ir(path):
        return core().read_model(str(path), str(ir_weights(path)))
    if path.suffix.lower() == ".onnx" or looks_like_onnx(read_head(path)):
        model = core().read_model(str(path))
        _refuse_16bit_qdq(model, path)
        return model
    raise UnsupportedModel(f"{path} is neither an OpenVINO IR (.xml with a <net> root) nor an ONNX model.",
                           hint=LOAD_HINT)


def _refuse_16bit_qdq(model: Any, path: Path) -> None:
    """UnsupportedModel for an ONNX model with 16-bit Q/DQ pairs (edgekit's w8a16): OpenVINO 2026.4 reads them as
    FakeQuantize with 65536 levels and computes them wrongly, with no error (cosine 0.53-0.79 against the float
    model on edgekit's tiny CNN, where onnxruntime gives 0.9999): a wrong answer is refused, never measured."""
    wide = [op.get_friendly_name() for op in model.get_ordered_ops()
            if op.get_type_name() == "FakeQuantize" and int(op.get_attributes().get("levels", 256)) > 256]
    if wide:
        raise UnsupportedModel(f"{path.name} has {len(wide)} 16-bit quantize/dequantize pairs (a w8a16 model): "
                               "OpenVINO computes them wrongly (measured: cosine 0.53-0.79 against the float model).",
                               hint="Run it with onnxruntime (the default for .onnx), or use the int8 artifact.")


def tensor_spec(port: Any, index: int, kind: str) -> TensorSpec:
    """A TensorSpec for one input/output port (ov.ConstOutput); a port without a name is "<kind><index>"."""
    names = sorted(port.get_names())
    shape = [d.get_length() if d.is_static else -1 for d in port.get_partial_shape()]
    et = str(port.get_element_type().get_type_name())
    return TensorSpec(name=names[0] if names else f"{kind}{index}", shape=shape, dtype=_DTYPES.get(et, et))


def present(device: str) -> tuple[bool, list[str]]:
    """Whether OpenVINO here sees DEVICE ("GPU" counts "GPU.0", "GPU.1" ...), and every device it sees."""
    seen = list(core().available_devices)
    want = _OV_DEVICES[device]
    return any(d == want or d.startswith(want + ".") for d in seen), seen


class OpenVINO(Runtime):
    name: ClassVar[str] = "openvino"
    vendor: ClassVar[str] = "openvino"
    formats: ClassVar[tuple[str, ...]] = ("openvino", "onnx")
    devices: ClassVar[tuple[str, ...]] = tuple(_OV_DEVICES)
    load_hint: ClassVar[str | None] = LOAD_HINT

    @classmethod
    def version(cls) -> str | None:
        return version_of("openvino")

    @classmethod
    def _available(cls, device: str) -> tuple[bool, str]:
        try:
            core()
        except MissingDependency as exc:
            return False, str(exc)
        if device == "cpu":
            return True, ""
        ok, seen = present(device)
        if ok:
            return True, ""
        return False, (f"OpenVINO {cls.version()} here sees no {_OV_DEVICES[device]} device (it sees "
                       f"{', '.join(seen) or 'none'}): the device or its driver is missing.")

    @classmethod
    def device_hint(cls, device: str) -> str | None:
        return DEVICE_HINTS.get(device)

    def _load(self, path: Path, device: str, threads: int | None, options: dict[str, Any]) -> None:
        config = compile_config(device, threads, options)
        model = read_model(path)
        self.compiled = core().compile_model(model, _OV_DEVICES[device], config)
        self.request = self.compiled.create_infer_request()
        self.inputs = [tensor_spec(p, i, "input") for i, p in enumerate(self.compiled.inputs)]
        self.outputs = [tensor_spec(p, i, "output") for i, p in enumerate(self.compiled.outputs)]
        self._ov_device = _OV_DEVICES[device]

    def _feed(self, inputs: dict[str, np.ndarray]) -> dict[int, np.ndarray]:
        """Input index -> array, checked against the model's dtypes, ranks and static dims (UsageError)."""
        feed: dict[int, np.ndarray] = {}
        for i, spec in enumerate(self.inputs):
            x = input_array(inputs, spec, self.inputs)
            if x.ndim != len(spec.shape) or any(0 <= d != n for d, n in zip(spec.shape, x.shape, strict=True)):
                raise UsageError(f"Input '{spec.name}' must have shape {spec.shape} (-1: any), got {list(x.shape)}.")
            feed[i] = np.ascontiguousarray(x)
        return feed

    def _run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        values = self.request.infer(self._feed(inputs)).to_tuple()  # copies: the request's buffers are reused
        return {spec.name: np.asarray(v) for spec, v in zip(self.outputs, values, strict=True)}

    def bind(self, inputs: dict[str, np.ndarray]) -> Callable[[], Any]:
        """`request.infer(feed)` itself (inputs copied in, outputs copied out): what an OpenVINO caller does."""
        infer = self.request.infer
        feed = self._feed(inputs)

        def call() -> tuple[np.ndarray, ...]:
            return infer(feed).to_tuple()

        return call

    def info(self) -> dict[str, Any]:
        c = self.compiled
        out: dict[str, Any] = {"device": self._ov_device}
        for key, prop in (("performance_hint", "PERFORMANCE_HINT"), ("inference_num_threads", "INFERENCE_NUM_THREADS"),
                          ("num_streams", "NUM_STREAMS"), ("inference_precision", "INFERENCE_PRECISION_HINT"),
                          ("execution_devices", "EXECUTION_DEVICES")):
            try:
                value = c.get_property(prop)
            except RuntimeError:  # a plugin that does not report this property
                continue
            out[key] = _plain(value)
        out["kernel_precisions"] = kernel_precisions(c)
        if self._ov_device != "CPU":
            out["gpu" if self._ov_device == "GPU" else "accelerator"] = str(
                core().get_property(self._ov_device, "FULL_DEVICE_NAME"))
        return out

    def close(self) -> None:
        self.request = None
        self.compiled = None


_MAC_LAYERS = ("Convolution", "Deconvolution", "FullyConnected", "MatMul")


def kernel_precisions(compiled: Any) -> dict[str, str]:
    """The precisions the compiled model's multiply-accumulate layers run in ({"Convolution": "u8"}): whether an
    int8 model really runs int8 kernels, from the plugin's own runtime graph; {} where the plugin does not say."""
    found: dict[str, set[str]] = {}
    try:
        for op in compiled.get_runtime_model().get_ordered_ops():
            rt = op.get_rt_info()
            kind = rt["layerType"].astype(str)
            if kind in _MAC_LAYERS:
                found.setdefault(kind, set()).add(rt["runtimePrecision"].astype(str))
    except (RuntimeError, KeyError):  # a plugin without a runtime graph, or without these keys
        return {}
    return {k: ",".join(sorted(v)) for k, v in sorted(found.items())}


def _plain(value: Any) -> Any:
    """A property value as JSON: numbers as they are, element types by name, lists of strings, enums by member."""
    if isinstance(value, (bool, int, float)):
        return value
    if hasattr(value, "get_type_name"):  # an ov.Type (INFERENCE_PRECISION_HINT): "f32", "bf16"
        return str(value.get_type_name())
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return str(value).rsplit(".", 1)[-1]


def compile_config(device: str, threads: int | None, options: dict[str, Any]) -> dict[str, Any]:
    """compile_model's properties for DEVICE from the profile's threads and the load options (checked)."""
    hint = str(options.get("hint", "latency")).lower()
    if hint not in _HINTS:
        raise UsageError(f"Unknown OpenVINO performance hint '{hint}'.", hint=f"Choose from {', '.join(_HINTS)}.")
    config: dict[str, Any] = {"PERFORMANCE_HINT": _HINTS[hint]}
    if hint == "latency":
        config["PERFORMANCE_HINT_NUM_REQUESTS"] = 1
    precision = options.get("inference_precision", "f32" if device == "cpu" else None)
    if precision is not None:
        if str(precision).lower() not in _PRECISIONS:
            raise UsageError(f"Unknown OpenVINO inference precision '{precision}'.",
                             hint=f"Choose from {', '.join(_PRECISIONS)}.")
        config["INFERENCE_PRECISION_HINT"] = str(precision).lower()
    if threads and device == "cpu":
        config["INFERENCE_NUM_THREADS"] = int(threads)
    return config


__all__ = ["OpenVINO", "compile_config", "core", "ir_weights", "kernel_precisions", "read_model", "tensor_spec"]
