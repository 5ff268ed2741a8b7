"""Conversion targets by name: one file each in this package, one line in TARGETS.

Plain "module:attr" strings, so listing the targets (CLI help, did-you-mean) imports nothing;
a target's file holds its TargetSpec, its own options and, where it needs one, its own step class.
"""

from __future__ import annotations

from edgekit.core.registry import resolve_record
from edgekit.targets.base import TargetSpec

TARGETS: dict[str, str] = {
    "onnx": "edgekit.targets.onnx:TARGET",
    "tflite": "edgekit.targets.tflite:TARGET",
    "edgetpu": "edgekit.targets.edgetpu:TARGET",
    "openvino": "edgekit.targets.openvino:TARGET",
    "ncnn": "edgekit.targets.ncnn:TARGET",
}


def get_target(name: str) -> TargetSpec:
    """The TargetSpec registered as NAME; UsageError with a did-you-mean for a typo."""
    return resolve_record(TARGETS, name, "target", TargetSpec)


def target_names() -> list[str]:
    return list(TARGETS)


def target_options() -> list[type]:
    """Each target's own options class, in table order: edgekit.conversion.options gathers them into ConvertOptions.

    Read once, when edgekit.conversion.options is imported: a target registered later (a test's monkeypatch)
    converts with the options already gathered.
    """
    specs = (get_target(name) for name in TARGETS)
    return [spec.options for spec in specs if spec.options is not None]


__all__ = ["TARGETS", "TargetSpec", "get_target", "target_names", "target_options"]
