"""The manifest, ProfileResult and bench documents keep every field they had before issue 14's refactor.

The key sets below were generated from the code as it stood before the refactor (the bundled
conversion, a profile of its int8 TFLite and ONNX artifacts, a bench of it) and are hard-coded on
purpose: a field may be added, never renamed or removed. Nested keys are dotted; `[]` marks the
items of a list ("rows[].p50_ms"). A runtime's own `details` are not part of the contract.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow  # the bundled conversion: ONNX and TFLite at four precisions

MANIFEST_KEYS = {
    "artifacts", "artifacts[].extra", "artifacts[].extra.exporter", "artifacts[].extra.io_dtype",
    "artifacts[].extra.opset", "artifacts[].extra.steps", "artifacts[].extra.steps[].seconds",
    "artifacts[].extra.steps[].shared", "artifacts[].extra.steps[].step",
    "artifacts[].extra.validation_seconds", "artifacts[].fidelity", "artifacts[].fidelity.accuracy",
    "artifacts[].fidelity.cosine", "artifacts[].fidelity.failures", "artifacts[].fidelity.inputs",
    "artifacts[].fidelity.max_abs_error", "artifacts[].fidelity.passed",
    "artifacts[].fidelity.reference_accuracy", "artifacts[].fidelity.samples",
    "artifacts[].fidelity.thresholds", "artifacts[].fidelity.thresholds.accuracy_drop",
    "artifacts[].fidelity.thresholds.cosine", "artifacts[].fidelity.thresholds.top1_agreement",
    "artifacts[].fidelity.top1_agreement", "artifacts[].format", "artifacts[].inputs",
    "artifacts[].inputs[].dtype", "artifacts[].inputs[].layout", "artifacts[].inputs[].name",
    "artifacts[].inputs[].quantization", "artifacts[].inputs[].quantization.scale",
    "artifacts[].inputs[].quantization.zero_point", "artifacts[].inputs[].shape", "artifacts[].outputs",
    "artifacts[].outputs[].dtype", "artifacts[].outputs[].layout", "artifacts[].outputs[].name",
    "artifacts[].outputs[].quantization", "artifacts[].outputs[].quantization.scale",
    "artifacts[].outputs[].quantization.zero_point", "artifacts[].outputs[].shape", "artifacts[].parent",
    "artifacts[].path", "artifacts[].precision", "artifacts[].seconds", "artifacts[].sha256",
    "artifacts[].size_bytes", "created", "edgekit_version", "manifest_version", "options", "options.batch",
    "options.calib", "options.calib_size", "options.edgetpu_compiler", "options.edgetpu_min_runtime",
    "options.edgetpu_timeout", "options.factory", "options.force", "options.input_shape", "options.io_dtype",
    "options.mean", "options.opset", "options.out_dir", "options.precisions", "options.signature",
    "options.std", "options.strict", "options.targets", "options.trust_model", "options.val_size", "source",
    "source.input", "source.input.dtype", "source.input.name", "source.input.shape", "source.kind",
    "source.layout", "source.path", "source.sha256", "tool_versions", "tool_versions.ai-edge-litert",
    "tool_versions.keras", "tool_versions.numpy", "tool_versions.onnx", "tool_versions.onnx2tf",
    "tool_versions.onnxruntime", "tool_versions.onnxscript", "tool_versions.tensorflow",
    "tool_versions.tf2onnx", "tool_versions.torch", "warnings"
}
# what every artifact holds (the union above may come from some artifacts only: quantization from int8 ones)
ARTIFACT_KEYS = {"extra", "fidelity", "format", "inputs", "outputs", "parent", "path", "precision", "seconds",
                 "sha256", "size_bytes"}
EXTRA_KEYS = {"onnx": {"exporter", "opset", "steps", "validation_seconds"},
              "tflite": {"exporter", "io_dtype", "opset", "steps", "validation_seconds"}}
PROFILE_KEYS = {
    "artifact", "artifact.format", "artifact.path", "artifact.precision", "artifact.precision_source",
    "artifact.sha256", "artifact.size_bytes", "compute", "compute.cpu_peak_gmacs_per_s",
    "compute.fraction_of_peak", "compute.gmacs_per_s", "compute.macs", "compute.macs_source",
    "compute.peak_method", "created", "device", "device.accelerator", "device.board",
    "device.cpu_cores_logical", "device.cpu_cores_physical", "device.cpu_cores_usable", "device.cpu_model",
    "device.machine", "device.name", "device.os", "device.profile", "device.python", "edgekit_version",
    "first_inference_ms", "inputs", "inputs[].dtype", "inputs[].name", "inputs[].shape", "latency_ms",
    "latency_ms.max", "latency_ms.mean", "latency_ms.min", "latency_ms.n", "latency_ms.p50", "latency_ms.p90",
    "latency_ms.p99", "latency_ms.std", "load_ms", "memory", "memory.arena_bytes", "memory.artifact_bytes",
    "memory.load_rss_delta_bytes", "memory.peak_rss_bytes", "notes", "power", "power.avg_watts",
    "power.estimated", "power.idle_watts", "power.joules_per_inference", "power.measured", "power.method",
    "power.net_watts", "power.reason", "power.samples", "power.scope", "power.sensor", "runs", "runtime",
    "runtime.details", "runtime.name", "runtime.version", "schema_version", "settings", "settings.batch",
    "settings.idle_baseline", "settings.input", "settings.min_seconds", "settings.raw_io", "settings.runs",
    "settings.threads", "settings.warmup", "throughput_per_s", "timed_seconds"
}
BENCH_KEYS = {
    "edgekit_version", "energy_note", "files", "files.chart", "files.json", "files.markdown", "host",
    "host.board", "host.cpu_cores_logical", "host.cpu_cores_physical", "host.cpu_cores_usable",
    "host.cpu_model", "host.machine", "host.os", "host.python", "manifest", "reference", "reference.kind",
    "reference.label", "reference.p50_ms", "results", "rows", "rows[].accuracy", "rows[].device",
    "rows[].energy_estimated", "rows[].format", "rows[].joules_per_inference", "rows[].label", "rows[].note",
    "rows[].p50_ms", "rows[].p90_ms", "rows[].path", "rows[].precision", "rows[].runtime", "rows[].size_bytes",
    "rows[].speedup", "rows[].status", "rows[].throughput_per_s", "rows[].top1_agreement", "schema_version",
    "settings", "settings.batch", "settings.devices", "settings.include_source", "settings.isolate",
    "settings.min_seconds", "settings.runs", "settings.runtimes", "settings.threads", "settings.timeout",
    "settings.warmup", "source", "source.input", "source.input.dtype", "source.input.name",
    "source.input.shape", "source.kind", "source.layout", "source.path", "source.sha256"
}
OPAQUE = {"details"}  # a runtime's own settings: not part of the contract


def key_paths(doc: Any, prefix: str = "") -> set[str]:
    """Every key of DOC as a dotted path, lists of objects as `name[]`."""
    out: set[str] = set()
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.add(prefix + k)
            if k not in OPAQUE:
                out |= key_paths(v, f"{prefix}{k}.")
    elif isinstance(doc, list):
        for item in doc:
            out |= key_paths(item, prefix[:-1] + "[].")
    return out


def missing(expected: set[str], doc: dict[str, Any]) -> list[str]:
    return sorted(expected - key_paths(doc))


@pytest.fixture(scope="module")
def manifest(bundled_conversion) -> dict[str, Any]:
    return json.loads(Path(bundled_conversion.manifest_path).read_text())


def _artifact(bundled_conversion, fmt: str, precision: str) -> Path:
    folder = Path(bundled_conversion.manifest_path).parent
    return next(folder / a.path for a in bundled_conversion.artifacts if (a.format, a.precision) == (fmt, precision))


def test_manifest_keeps_every_field(manifest: dict[str, Any]) -> None:
    assert missing(MANIFEST_KEYS, manifest) == []
    for art in manifest["artifacts"]:
        assert sorted(ARTIFACT_KEYS - set(art)) == [], art["path"]
        assert sorted(EXTRA_KEYS.get(art["format"], set()) - set(art["extra"])) == [], art["path"]
        assert art["fidelity"] is not None, art["path"]  # every artifact validated, quantized ones too


@pytest.mark.parametrize("fmt", ["tflite", "onnx"])
def test_profile_result_keeps_every_field(bundled_conversion, fmt: str) -> None:
    from edgekit.measure.profile import ProfileResult, profile_artifact
    from edgekit.measure.settings import MeasureSettings

    path = _artifact(bundled_conversion, fmt, "int8")
    result = profile_artifact(path, device="cpu", settings=MeasureSettings(runs=10, min_seconds=0, warmup=1))
    doc = json.loads(json.dumps(result.to_dict()))
    assert missing(PROFILE_KEYS, doc) == []
    assert doc["artifact"]["precision_source"] == "manifest" and doc["compute"]["macs"]  # found beside it
    assert ProfileResult.from_dict(doc).to_dict() == doc  # the file reads back to the same record


def test_bench_report_keeps_every_field(bundled_conversion, tmp_path: Path) -> None:
    from edgekit.measure.bench import BenchReport, BenchSettings, bench

    report = bench(bundled_conversion.manifest_path, BenchSettings(isolate=False, runs=5, min_seconds=0, warmup=1),
                   out_dir=tmp_path)
    doc = json.loads(Path(report.files["json"]).read_text())
    expected = set(BENCH_KEYS)
    if importlib.util.find_spec("matplotlib") is None:
        expected.discard("files.chart")
    assert missing(expected, doc) == []
    assert doc["results"] and all(missing(PROFILE_KEYS, r) == [] for r in doc["results"])
    assert BenchReport.from_dict(doc).to_dict() == doc
