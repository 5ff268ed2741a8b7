"""Model file formats: one `FormatSpec` each, the table that runtimes, profile, bench, serve and inspect read.

An artifact's `format` (manifest.json) is a key of this table, and its record is everything edgekit knows
about the format: the runtime that runs it by default (its class too), the libraries it drives (how their errors
read, how they are installed, whose versions a manifest records), where it runs when no device is named, whether
`edgekit inspect` can count its MACs, where it sits in tables and charts, how a file of it is recognised, which
files travel with it, where `edgekit serve` ranks it and which KServe/Triton platform it is, how its outputs are
ordered, and how its int8 artifacts are diagnosed. No module outside a format's own files branches on a format's
name. Plain data, nothing heavy imported: the functions it names are "module:attr" strings, resolved when used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from edgekit.core.vendor import ONNX_ERRORS, Vendor


@dataclass(frozen=True)
class Int8Diagnosis:
    """How an int8 artifact of a format is diagnosed layer by layer (edgekit.quantize.explain)."""

    diagnose: str  # "module:function" (RecipeChoice, int8 artifact path, x, inputs name) -> Diagnosis
    run_float: str  # "module:function" (float twin path, x) -> its first output: the input-noise figure
    vendor: str  # the key of the library it drives (edgekit.core.border.find_vendor)
    unasked_samples: int  # samples an unasked diagnosis (a miss) reads; --explain reads more


@dataclass(frozen=True)
class FormatSpec:
    name: str
    order: int  # position in tables: sources first, then artifacts as they get smaller/faster
    runtime: str | None  # the name of the runtime used when none is named; None: none loads it
    suffix: str = ""  # file suffix, "" for folders or several
    devices: tuple[str, ...] | None = None  # the only devices it runs on (edgetpu); None: any of the runtime's
    # "module:function" (path, min_runtime=None) -> InspectReport: how `edgekit inspect` reads it (ops, MACs);
    # None: not inspectable
    inspector: str | None = None
    source: bool = False  # a source-model form (the reference), not a converted artifact
    colour: str = "#7f7f7f"  # chart colour
    # the format it is compiled from, whose fp32 artifact its size is compared with (edgetpu: tflite)
    compiled_from: str | None = None
    # "module:function" (path) -> bool: a file of this format, from its content (edgekit.core.sniff); None: not
    # recognised from a file (a source form that no runtime runs, recognised by edgekit.sources)
    sniff: str | None = None
    # suffixes of the files that belong to an artifact of this format, beside it under the same stem (an OpenVINO
    # IR's ".bin"): published, hashed, sized, copied and served with it
    companions: tuple[str, ...] = ()
    # edgekit serve's preference: device kind -> {precision: rank}, lower first; ties go to the table's order.
    # A format absent for a kind is never picked on it. "cpu-arm64": its ranks on an Arm64 CPU where they differ
    # from "cpu"'s (a format without it ranks there as on any CPU)
    serve: Mapping[str, Mapping[str, int]] = field(default_factory=lambda: MappingProxyType({}))
    int8_diagnosis: Int8Diagnosis | None = None  # None: no layer-by-layer diagnosis for this format (noted)
    # the Triton backend that serves it (`edgekit export`: <name>/1/model<suffix> + companions); None: not exported
    triton_backend: str | None = None
    # the runtimes this record brings, name -> "module:Class" of the Runtime (edgekit.runtimes finds them here;
    # a format run by another format's runtime, as the Edge TPU's by LiteRT's, brings none)
    runtimes: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # the libraries its runtime drives, by the key borders name them: how their errors read, their import names
    # and pip requirements (install hints), the extra that brings them; a manifest records their versions
    libraries: Mapping[str, Vendor] = field(default_factory=lambda: MappingProxyType({}))
    platform: str | None = None  # the KServe v2 / Triton platform name of a served model; None: the format's name
    # "module:function" (path) -> its output names in the model's own (signature) order, where the runtime lists
    # them in another; None: the runtime's order is the model's
    signature: str | None = None
    source_layout: bool = False  # its inputs keep the source model's layout (an ONNX of a PyTorch model: NCHW)
    # "module:attr" of the edgekit.testing.tiny_cnn.TinyModels that writes the tiny CNN in this format (the models'
    # keys, precisions and layouts, and how): the runtimes' conformance suite runs every one; None: it has none
    tiny_model: str | None = None
    label: str = ""  # how prose names it ("Edge TPU"; tests/test_docs_lists.py finds it in the docs' lists); "": name

    def __post_init__(self) -> None:
        for name in ("libraries", "runtimes"):  # read-only, as `serve`
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))
        if not self.label:
            object.__setattr__(self, "label", self.name)

    @property
    def inspectable(self) -> bool:
        return self.inspector is not None


def serve_ranks(**by_kind: dict[str, int]) -> Mapping[str, Mapping[str, int]]:
    """FormatSpec.serve from keyword arguments: serve_ranks(cpu={"int8": 10, "fp32": 31}), read-only."""
    return MappingProxyType({kind: MappingProxyType(r) for kind, r in by_kind.items()})


# A miss is diagnosed unasked, on fewer samples than --explain's (up to 32): each sample is a run of both models
# with every layer's tensors exposed, which took 10-24 s per artifact on PP-OCR's detector at 32 samples (and kept
# its recogniser's whole matrix past the zoo's 3 minutes). A layer's SQNR is a noise power over every element of
# every sample, so 16 pages or images rank the layers as 32 do (ONNX). The TFLite quantization debugger is dearer
# per sample: it runs every op in float and int8 and keeps every layer's tensor of every sample (4.5 s a sample on
# a Keras ResNet50V2 at 160x160: 72 s of a 322 s zoo row at 16 samples): 8.
_TFLITE_DIAGNOSIS = Int8Diagnosis("edgekit.quantize.tflite.recipes:diagnose_int8",
                                  "edgekit.quantize.tflite.run:run_first_output", "tensorflow", 8)

_TFLITE_INSPECT = "edgekit.inspect.tflite:describe"  # a compiled Edge TPU model is read as the .tflite it is
_TFLITE_SIGNATURE = "edgekit.fidelity.matching:signature_outputs"

_ORT = "onnxruntime.capi.onnxruntime_pybind11_state"
ONNXRUNTIME = Vendor("onnxruntime", tuple(f"{_ORT}:{n}" for n in (
    "Fail", "InvalidArgument", "InvalidGraph", "InvalidProtobuf", "NoModel", "NoSuchFile", "NotImplemented",
    "RuntimeException", "EPFail", "EngineError", "ModelLoaded")) + ONNX_ERRORS,
    modules={"onnxruntime": "onnxruntime"}, extra="runtime", arm64=True)
LITERT = Vendor("LiteRT", modules={"ai_edge_litert": "ai-edge-litert"}, extra="runtime", arm64=True)
# OpenVINO raises a plain RuntimeError for most failures (core.read_model, compile_model, infer); these are the
# types it raises besides: its frontends' failures, its Python layer's (OVTypeError is also a TypeError) and ovc's.
OPENVINO = Vendor("OpenVINO", tuple(f"openvino._pyopenvino:{n}" for n in (
    "GeneralFailure", "InitializationFailure", "NotImplementedFailure", "OpConversionFailure", "OpValidationFailure"))
    + ("openvino.exceptions:OVError", "openvino.tools.ovc.error:BasicError"),
    modules={"openvino": "openvino"}, extra="openvino")
# ncnn's bindings raise nothing of their own: a failure is a return code (edgekit.runtimes.ncnn says what it means).
# Pinned: the release tested with the convert extra's pnnx (pyproject.toml). On an Arm64 device: the float runtime a
# Pi runs first (issue 39), and its aarch64 wheels are the ones to check under emulation (LSE atomics with no CPU
# test: docs/results/ncnn.md). OpenVINO is not: x86 boxes and Intel accelerators (pyproject.toml's openvino extra)
NCNN = Vendor("ncnn", modules={"ncnn": "ncnn==1.0.20261020"}, extra="ncnn", arm64=True)

FORMATS: dict[str, FormatSpec] = {
    f.name: f
    for f in (
        FormatSpec("torch", 0, "torch", ".pt2", label="PyTorch", source=True, colour="#d62728",
                   runtimes={"torch": "edgekit.sources.torch_runtime:TorchRuntime"},
                   sniff="edgekit.sources.detect:is_torch_model", tiny_model="edgekit.testing.tiny_cnn:TORCH"),
        FormatSpec("keras", 1, None, ".keras", label="Keras", source=True, colour="#8c564b",  # run as its SavedModel
                   tiny_model="edgekit.testing.tiny_cnn:KERAS"),
        FormatSpec("savedmodel", 2, "tf", "", label="SavedModel", source=True, colour="#9467bd",
                   runtimes={"tf": "edgekit.runtimes.tf:TFRuntime"}, tiny_model="edgekit.testing.tiny_cnn:SAVEDMODEL"),
        FormatSpec("onnx", 3, "onnxruntime", ".onnx", label="ONNX", inspector="edgekit.inspect.onnx:describe",
                   colour="#1f77b4", sniff="edgekit.core.sniff:has_onnx_suffix",
                   # on a CPU: int8 after the TFLite int8 (XNNPACK runs it faster on Arm); fp16 last (no fp16
                   # kernels in onnxruntime's CPU provider: it runs slower than fp32). On a GPU: ONNX only, fp16 first
                   serve=serve_ranks(cpu={"int8": 11, "w8a16": 26, "dynamic": 21, "fp32": 32, "fp16": 40},
                                gpu={"fp16": 10, "fp32": 11, "int8": 12, "dynamic": 13}),
                   int8_diagnosis=Int8Diagnosis("edgekit.quantize.onnx.diagnose:diagnose_int8",
                                                "edgekit.quantize.onnx.graph:run_first_output", "onnxruntime", 16),
                   triton_backend="onnxruntime", runtimes={"onnxruntime": "edgekit.runtimes.onnxruntime:OnnxRuntime"},
                   libraries={"onnxruntime": ONNXRUNTIME}, platform="onnxruntime_onnx", source_layout=True,
                   tiny_model="edgekit.testing.tiny_cnn:ONNX"),
        FormatSpec("tflite", 4, "litert", ".tflite", label="TFLite", inspector=_TFLITE_INSPECT, colour="#ff7f0e",
                   sniff="edgekit.core.sniff:is_tflite",
                   serve=serve_ranks(cpu={"int8": 10, "w8a16": 25, "dynamic": 20, "fp16": 30, "fp32": 31}),
                   int8_diagnosis=_TFLITE_DIAGNOSIS, runtimes={"litert": "edgekit.runtimes.litert:LiteRT"},
                   libraries={"litert": LITERT}, platform="tensorflow_lite", signature=_TFLITE_SIGNATURE,
                   tiny_model="edgekit.testing.tiny_cnn:TFLITE"),
        FormatSpec("edgetpu", 5, "litert", ".tflite", label="Edge TPU", devices=("edgetpu",), inspector=_TFLITE_INSPECT,
                   colour="#2ca02c", compiled_from="tflite", sniff="edgekit.core.sniff:is_edgetpu_model",
                   serve=serve_ranks(edgetpu={"int8": 0}), int8_diagnosis=_TFLITE_DIAGNOSIS,
                   platform="tensorflow_lite_edgetpu", signature=_TFLITE_SIGNATURE),
        # OpenVINO IR: model.xml (the graph) + model.bin (the weights), published together. Served first on a CPU
        # where OpenVINO runs (x86): its int8 is the fastest there (docs/results/openvino.md)
        FormatSpec("openvino", 6, "openvino", ".xml", label="OpenVINO", inspector="edgekit.inspect.openvino:describe",
                   colour="#17becf", sniff="edgekit.core.sniff:is_openvino_ir", companions=(".bin",),
                   serve=serve_ranks(cpu={"int8": 5, "fp16": 28, "fp32": 29}), triton_backend="openvino",
                   runtimes={"openvino": "edgekit.runtimes.openvino:OpenVINO"}, libraries={"openvino": OPENVINO},
                   source_layout=True, tiny_model="edgekit.testing.tiny_cnn:OPENVINO"),
        # ncnn: model.ncnn.param (the graph, text) + model.ncnn.bin (the weights), published together. The float
        # runtime that leads on Arm CPUs in the published figures (a Pi 5, YOLO11n fp32: ncnn 94 ms, onnxruntime 182,
        # TFLite 324): on an x86 CPU served after LiteRT's and onnxruntime's fp32 (it trails both there, 23.8 ms
        # against 14.7 and 19.5 on a MobileNetV2: docs/results/ncnn.md); on an Arm64 CPU its fp32 right after the
        # int8 rows and before every other float, its fp16 after its fp32 (a Pi 5 computes it in fp16 arithmetic,
        # which moved a MobileNetV2's outputs by 9% on the emulated A76); on a GPU (Vulkan) after ONNX on CUDA
        FormatSpec("ncnn", 7, "ncnn", ".param", inspector="edgekit.inspect.ncnn:describe", colour="#e377c2",
                   sniff="edgekit.ncnn.param:is_ncnn_param", companions=(".bin",),
                   serve=serve_ranks(cpu={"fp32": 33, "fp16": 34}, gpu={"fp16": 14, "fp32": 15},
                                     **{"cpu-arm64": {"fp32": 18, "fp16": 19}}),
                   runtimes={"ncnn": "edgekit.runtimes.ncnn:Ncnn"}, libraries={"ncnn": NCNN}, source_layout=True,
                   tiny_model="edgekit.testing.tiny_cnn:NCNN"),
    )
}


def libraries() -> dict[str, Vendor]:
    """Every format's libraries by key (edgekit.core.border.find_vendor, edgekit.core._deps.require), read when
    asked so a format registered later counts."""
    return {key: lib for spec in FORMATS.values() for key, lib in spec.libraries.items()}


def order(name: str) -> int:
    spec = FORMATS.get(name)
    return spec.order if spec else len(FORMATS)


def inspectable(name: str) -> bool:
    spec = FORMATS.get(name)
    return bool(spec and spec.inspectable)


def sniffed(path: str | Path) -> str | None:
    """The format of the file at PATH by the table's sniffers: artifact formats first, a compiled format before the
    one it is compiled from (an Edge TPU model is also a .tflite), source forms last; None where none claims it."""
    from edgekit.core.registry import resolve

    specs = sorted((s for s in FORMATS.values() if s.sniff),
                   key=lambda s: (s.source, s.compiled_from is None, s.order))
    for spec in specs:
        if spec.sniff and resolve({spec.name: spec.sniff}, spec.name, "format sniffer")(path):
            return spec.name
    return None


def companions(path: str | Path) -> list[Path]:
    """The files that belong with the artifact at PATH (an IR's .bin), by its suffix: those that exist, in the
    table's order. Empty for a format without companions."""
    p = Path(path)
    out: list[Path] = []
    for spec in FORMATS.values():
        if spec.companions and spec.suffix and p.suffix.lower() == spec.suffix:
            out += [p.with_suffix(s) for s in spec.companions if p.with_suffix(s).is_file()]
    return list(dict.fromkeys(out))


__all__ = ["FORMATS", "FormatSpec", "Int8Diagnosis", "companions", "inspectable", "libraries", "order", "serve_ranks",
           "sniffed"]
