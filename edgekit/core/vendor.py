"""The libraries edgekit drives, as records: how messages name each, the exception types it raises on purpose, and
how it is installed. VENDORS holds the tools (converters, frameworks); the library behind a format's runtime is in
that format's record (edgekit.core.formats), a target's own converter in its TargetSpec. edgekit.core.border maps
what they raise; edgekit.core._deps writes their install lines."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True)
class Vendor:
    """A library edgekit calls: how messages name it, the exception types it raises on purpose, and how it is
    installed (its import names, the pip requirement of each, the edgekit extra that brings it)."""

    label: str
    raises: tuple[str, ...] = ()  # "module:QualName"; always that vendor's failure, wherever raised
    exits: bool = False  # it calls sys.exit() on failure: SystemExit inside the block is its error
    # import name -> pip requirement ("ncnn": "ncnn==1.0.20261020"): edgekit.core._deps.require's install line
    modules: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    extra: str | None = None  # the edgekit extra (pyproject.toml) that installs it
    # it belongs on an Arm64 device (a Raspberry Pi) and its requirements have aarch64 wheels: its extra is part of
    # a device's install, which the emulated Pi's userland holds (edgekit.emulate.userland.extras)
    arm64: bool = False

    @property
    def dists(self) -> tuple[str, ...]:
        """The distributions of its modules (requirements less their version specifiers): the manifest records
        their versions."""
        return tuple(dict.fromkeys(re.split(r"[\s<>=!~;\[]", req, maxsplit=1)[0] for req in self.modules.values()))


_PROTOBUF = ("google.protobuf.message:DecodeError", "google.protobuf.message:EncodeError")
_ONNX = ("onnx.checker:ValidationError", "onnx.shape_inference:InferenceError", *_PROTOBUF)
_TF = ("tensorflow.python.framework.errors_impl:OpError", "tensorflow.lite.python.convert_phase:ConverterError")
ONNX_ERRORS = _ONNX  # what onnx raises on a bad model: the libraries that read ONNX raise them too

# The tools edgekit calls, by the key a border names. One line per library; a typo is a KeyError. The library
# behind a format's runtime is in that format's record instead (edgekit.core.formats.FORMATS: `libraries`;
# find_vendor() looks there too), and a target's own conversion library in its TargetSpec (its steps pass the Vendor).
VENDORS: dict[str, Vendor] = {
    "torch": Vendor("PyTorch", ("pickle:UnpicklingError", "torch._dynamo.exc:TorchDynamoException")),
    "torch.onnx": Vendor("the PyTorch ONNX exporter", ("torch.onnx.errors:OnnxExporterError",
                                                       "torch._dynamo.exc:TorchDynamoException", *_ONNX)),
    "onnx": Vendor("onnx", _ONNX),
    "onnx2tf": Vendor("onnx2tf", _ONNX + _TF, exits=True),
    "tensorflow": Vendor("TensorFlow", _TF),
    "tflite": Vendor("the TFLite converter", _TF),
    "keras": Vendor("Keras", _TF),
    "tf2onnx": Vendor("tf2onnx", _TF + _ONNX),
    "numpy": Vendor("numpy", ()),
    "nncf": Vendor("NNCF", tuple(f"nncf.errors:{n}" for n in ("ValidationError", "InternalError",
                                                              "UnsupportedModelError", "UnsupportedDatasetError"))),
    "pynvml": Vendor("NVML", ("pynvml:NVMLError",)),
    "edgetpu_compiler": Vendor("edgetpu_compiler", ()),
}


__all__ = ["ONNX_ERRORS", "VENDORS", "Vendor"]
