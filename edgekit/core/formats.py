"""Model file formats: one `FormatSpec` each, the table that runtimes, profile, bench, serve and inspect read.

An artifact's `format` (manifest.json) is a key of this table. It says which runtime runs the
format by default, where it runs when no device is named, whether `edgekit inspect` can count its
MACs, where it sits in tables and charts, how a file of it is recognised, which files travel with it,
where `edgekit serve` ranks it, and how its int8 artifacts are diagnosed. Plain data, nothing heavy imported:
the functions it names are "module:attr" strings, resolved when used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType


@dataclass(frozen=True)
class Int8Diagnosis:
    """How an int8 artifact of a format is diagnosed layer by layer (edgekit.quantize.explain)."""

    diagnose: str  # "module:function" (RecipeChoice, int8 artifact path, x, inputs name) -> Diagnosis
    run_float: str  # "module:function" (float twin path, x) -> its first output: the input-noise figure
    vendor: str  # the edgekit.core.border.VENDORS key of the library it drives
    unasked_samples: int  # samples an unasked diagnosis (a miss) reads; --explain reads more


@dataclass(frozen=True)
class FormatSpec:
    name: str
    order: int  # position in tables: sources first, then artifacts as they get smaller/faster
    runtime: str | None  # the runtime (edgekit.runtimes.RUNTIMES key) used when none is named; None: none loads it
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
    # recognised from a file (a source form, recognised by edgekit.sources)
    sniff: str | None = None
    # suffixes of the files that belong to an artifact of this format, beside it under the same stem (an OpenVINO
    # IR's ".bin"): published, hashed, sized, copied and served with it
    companions: tuple[str, ...] = ()
    # edgekit serve's preference: device kind -> {precision: rank}, lower first; ties go to the table's order.
    # A format absent for a kind is never picked on it.
    serve: Mapping[str, Mapping[str, int]] = field(default_factory=lambda: MappingProxyType({}))
    int8_diagnosis: Int8Diagnosis | None = None  # None: no layer-by-layer diagnosis for this format (noted)
    # the Triton backend that serves it (`edgekit export`: <name>/1/model<suffix> + companions); None: not exported
    triton_backend: str | None = None

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

FORMATS: dict[str, FormatSpec] = {
    f.name: f
    for f in (
        FormatSpec("torch", 0, "torch", ".pt2", source=True, colour="#d62728"),
        FormatSpec("keras", 1, None, ".keras", source=True, colour="#8c564b"),  # run as its SavedModel
        FormatSpec("savedmodel", 2, "tf", "", source=True, colour="#9467bd"),
        FormatSpec("onnx", 3, "onnxruntime", ".onnx", inspector="edgekit.inspect.onnx:describe", colour="#1f77b4",
                   sniff="edgekit.core.sniff:has_onnx_suffix",
                   # on a CPU: int8 after the TFLite int8 (XNNPACK runs it faster on Arm); fp16 last (no fp16
                   # kernels in onnxruntime's CPU provider: it runs slower than fp32). On a GPU: ONNX only, fp16 first
                   serve=serve_ranks(cpu={"int8": 11, "w8a16": 26, "dynamic": 21, "fp32": 32, "fp16": 40},
                                gpu={"fp16": 10, "fp32": 11, "int8": 12, "dynamic": 13}),
                   int8_diagnosis=Int8Diagnosis("edgekit.quantize.onnx.diagnose:diagnose_int8",
                                                "edgekit.quantize.onnx.graph:run_first_output", "onnxruntime", 16),
                   triton_backend="onnxruntime"),
        FormatSpec("tflite", 4, "litert", ".tflite", inspector=_TFLITE_INSPECT, colour="#ff7f0e",
                   sniff="edgekit.core.sniff:is_tflite",
                   serve=serve_ranks(cpu={"int8": 10, "w8a16": 25, "dynamic": 20, "fp16": 30, "fp32": 31}),
                   int8_diagnosis=_TFLITE_DIAGNOSIS),
        FormatSpec("edgetpu", 5, "litert", ".tflite", devices=("edgetpu",), inspector=_TFLITE_INSPECT, colour="#2ca02c",
                   compiled_from="tflite", sniff="edgekit.core.sniff:is_edgetpu_model",
                   serve=serve_ranks(edgetpu={"int8": 0}), int8_diagnosis=_TFLITE_DIAGNOSIS),
        # OpenVINO IR: model.xml (the graph) + model.bin (the weights), published together. Served first on a CPU
        # where OpenVINO runs (x86): its int8 is the fastest there (docs/results/openvino.md)
        FormatSpec("openvino", 6, "openvino", ".xml", inspector="edgekit.inspect.openvino:describe", colour="#17becf",
                   sniff="edgekit.core.sniff:is_openvino_ir", companions=(".bin",),
                   serve=serve_ranks(cpu={"int8": 5, "fp16": 28, "fp32": 29}), triton_backend="openvino"),
    )
}


def order(name: str) -> int:
    spec = FORMATS.get(name)
    return spec.order if spec else len(FORMATS)


def inspectable(name: str) -> bool:
    spec = FORMATS.get(name)
    return bool(spec and spec.inspectable)


def sniffed(path: str | Path) -> str | None:
    """The artifact format of the file at PATH by the table's sniffers, a compiled format before the one it is
    compiled from (an Edge TPU model is also a .tflite); None where none claims it."""
    from edgekit.core.registry import resolve

    specs = sorted((s for s in FORMATS.values() if s.sniff), key=lambda s: (s.compiled_from is None, s.order))
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


__all__ = ["FORMATS", "FormatSpec", "Int8Diagnosis", "companions", "inspectable", "order", "serve_ranks", "sniffed"]
