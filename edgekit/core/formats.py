"""Model file formats: one `FormatSpec` each, the table that runtimes, profile, bench and inspect read.

An artifact's `format` (manifest.json) is a key of this table. It says which runtime runs the
format by default, where it runs when no device is named, whether `edgekit inspect` can count its
MACs, and where it sits in tables and charts. Plain data, nothing heavy imported.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FormatSpec:
    name: str
    order: int  # position in tables: sources first, then artifacts as they get smaller/faster
    runtime: str | None  # the runtime (edgekit.runtimes.RUNTIMES key) used when none is named; None: none loads it
    suffix: str = ""  # file suffix, "" for folders or several
    devices: tuple[str, ...] | None = None  # the only devices it runs on (edgetpu); None: any of the runtime's
    inspectable: bool = False  # `edgekit inspect` reads it (ops, MACs)
    source: bool = False  # a source-model form (the reference), not a converted artifact
    colour: str = "#7f7f7f"  # chart colour
    # the format it is compiled from, whose fp32 artifact its size is compared with (edgetpu: tflite)
    compiled_from: str | None = None


FORMATS: dict[str, FormatSpec] = {
    f.name: f
    for f in (
        FormatSpec("torch", 0, "torch", ".pt2", source=True, colour="#d62728"),
        FormatSpec("keras", 1, None, ".keras", source=True, colour="#8c564b"),  # run as its SavedModel
        FormatSpec("savedmodel", 2, "tf", "", source=True, colour="#9467bd"),
        FormatSpec("onnx", 3, "onnxruntime", ".onnx", inspectable=True, colour="#1f77b4"),
        FormatSpec("tflite", 4, "litert", ".tflite", inspectable=True, colour="#ff7f0e"),
        FormatSpec("edgetpu", 5, "litert", ".tflite", devices=("edgetpu",), inspectable=True, colour="#2ca02c",
                   compiled_from="tflite"),
        # OpenVINO IR: model.xml (the graph) + model.bin (the weights), published together
        FormatSpec("openvino", 6, "openvino", ".xml", inspectable=True, colour="#17becf"),
    )
}


def order(name: str) -> int:
    spec = FORMATS.get(name)
    return spec.order if spec else len(FORMATS)


def inspectable(name: str) -> bool:
    spec = FORMATS.get(name)
    return bool(spec and spec.inspectable)


__all__ = ["FORMATS", "FormatSpec", "inspectable", "order"]
