"""`edgekit inspect --json` and the manifest's `extra.edgetpu` keep every key they had as hand-built dicts.

The key sets below were generated from the code as it was before the reports became typed records
(commit f76a9ae), on the bundled model's conversions: `edgekit inspect --json` of its int8 .tflite
and fp32 .onnx, and the manifest of `edgekit convert --target edgetpu` with a stand-in compiler.
A key path is dotted; `[]` stands for every element of a list; maps whose keys are data (op
counts, parameters by dtype, opsets, op options) count as one key. Fields may be added, never lost.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from edgekit.cli import main

MAPS = {"op_counts", "by_dtype", "opsets", "options"}

TFLITE_KEYS = {
    "all_static", "description", "dynamic_tensors", "edgetpu", "edgetpu_compiled", "format", "inputs",
    "inputs[].dtype", "inputs[].name", "inputs[].quantization", "inputs[].quantization.scale",
    "inputs[].quantization.zero_point", "inputs[].shape", "macs", "macs_counted_ops", "op_counts", "ops",
    "ops[].custom", "ops[].index", "ops[].inputs", "ops[].inputs[].const", "ops[].inputs[].dtype",
    "ops[].inputs[].name", "ops[].inputs[].quantization", "ops[].inputs[].quantization.axis",
    "ops[].inputs[].quantization.scale", "ops[].inputs[].quantization.zero_point", "ops[].inputs[].shape",
    "ops[].macs", "ops[].op", "ops[].options", "ops[].outputs", "ops[].outputs[].dtype",
    "ops[].outputs[].name", "ops[].outputs[].quantization", "ops[].outputs[].quantization.scale",
    "ops[].outputs[].quantization.zero_point", "ops[].outputs[].shape", "ops[].version", "outputs",
    "outputs[].dtype", "outputs[].name", "outputs[].quantization", "outputs[].quantization.scale",
    "outputs[].quantization.zero_point", "outputs[].shape", "params", "params.by_dtype", "params.bytes",
    "params.count", "path", "sha256", "size_bytes", "subgraphs",
}  # fmt: skip
PREFLIGHT_KEYS = {
    "compiled", "first_unsupported", "macs_on_tpu", "macs_on_tpu_fraction", "macs_total", "min_runtime",
    "ops", "ops[].caveat", "ops[].code", "ops[].index", "ops[].macs", "ops[].mapped", "ops[].op",
    "ops[].reason", "ops_on_cpu", "ops_on_tpu", "ops_on_tpu_fraction", "ops_total", "predicted", "problems",
    "problems[].kind", "problems[].message", "problems[].ops", "problems[].source", "problems[].suggestion",
    "rules_source", "suggestions", "summary",
}  # fmt: skip
ONNX_KEYS = {
    "all_static", "dynamic_tensors", "external_data", "format", "inputs", "inputs[].dtype", "inputs[].name",
    "inputs[].quantization", "inputs[].shape", "ir_version", "macs", "macs_counted_ops", "op_counts", "ops",
    "ops[].domain", "ops[].index", "ops[].inputs", "ops[].inputs[].const", "ops[].inputs[].dtype",
    "ops[].inputs[].name", "ops[].inputs[].quantization", "ops[].inputs[].shape", "ops[].macs", "ops[].name",
    "ops[].op", "ops[].options", "ops[].outputs", "ops[].outputs[].dtype", "ops[].outputs[].name",
    "ops[].outputs[].quantization", "ops[].outputs[].shape", "ops[].version", "opsets", "outputs",
    "outputs[].dtype", "outputs[].name", "outputs[].quantization", "outputs[].shape", "params",
    "params.by_dtype", "params.bytes", "params.count", "path", "producer", "sha256", "size_bytes",
    "unknown_shapes",
}  # fmt: skip
COMPILER_KEYS = {
    "attempts", "compile_ms", "compiler_path", "compiler_version", "errors", "failure", "input_model",
    "input_size_bytes", "log_path", "off_chip_memory_bytes", "on_chip_memory_available_bytes",
    "on_chip_memory_bytes", "on_chip_memory_remaining_bytes", "operation_log", "operators",
    "operators[].count", "operators[].mapped", "operators[].op", "operators[].status", "operators_complete",
    "operators_source", "ops_on_cpu", "ops_on_tpu", "ops_total", "output_model", "output_size_bytes",
    "seconds", "stdout", "subgraphs", "success", "timeout_s",
}  # fmt: skip
# what the edgetpu_compile step adds to the pre-flight in the manifest
EDGETPU_EXTRA_KEYS = (
    PREFLIGHT_KEYS
    | {"compiler", "disagreements", "how_to_finish"}
    | {f"compiler.{k}" for k in COMPILER_KEYS}
)


def key_paths(obj: Any, prefix: str = "") -> set[str]:
    """Every key path of OBJ (see the module docstring)."""
    out: set[str] = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            p = f"{prefix}.{k}" if prefix else k
            out.add(p)
            if k not in MAPS:
                out |= key_paths(v, p)
    elif isinstance(obj, list):
        for v in obj:
            out |= key_paths(v, prefix + "[]")
    return out


def test_key_paths_sees_nested_lists_and_skips_data_maps():
    doc = {"a": [{"b": 1}, {"c": {"d": 2}}], "options": {"padding": "SAME"}}
    assert key_paths(doc) == {"a", "a[].b", "a[].c", "a[].c.d", "options"}


def _artifact(conversion: Any, fmt: str, precision: str) -> Path:
    folder = Path(conversion.manifest_path).parent
    return next(folder / a.path for a in conversion.artifacts if (a.format, a.precision) == (fmt, precision))


def _inspect_json(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["inspect", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow
def test_inspect_json_of_the_bundled_int8_tflite_keeps_every_key(bundled_conversion, capsys):
    doc = _inspect_json(_artifact(bundled_conversion, "tflite", "int8"), capsys)
    expected = TFLITE_KEYS | {f"edgetpu.{k}" for k in PREFLIGHT_KEYS}
    assert expected - key_paths(doc) == set()


@pytest.mark.slow
def test_inspect_json_of_the_bundled_onnx_keeps_every_key(bundled_conversion, capsys):
    doc = _inspect_json(_artifact(bundled_conversion, "onnx", "fp32"), capsys)
    assert ONNX_KEYS - key_paths(doc) == set()
    assert "edgetpu" not in doc  # no Edge TPU section for ONNX, as before


@pytest.mark.slow
def test_manifest_extra_edgetpu_keeps_every_key(repo, tmp_path, monkeypatch):
    from edgetpu_standin import FIX, write_standin

    exe = write_standin(tmp_path / "bin" / "edgetpu_compiler")
    monkeypatch.setenv("PATH", f"{exe.parent}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_STDOUT", str(FIX / "reconstructed_v16_mnist_all_mapped_stdout.txt"))
    monkeypatch.setenv("FAKE_LOG", str(FIX / "nrf20_mnist7_edgetpu.log"))
    args = ["convert", str(repo / "models" / "mnist_cnn.pt2"), "--target", "edgetpu", "--calib", "mnist",
            "--calib-size", "100", "--val-size", "300", "--out", str(tmp_path / "o"),
            # the graph fixes (issue 9) clear the MNIST model's one pre-flight problem; the keys of problems[]
            # are what this test keeps, so the model goes in as it is
            "--no-edgetpu-fixes"]  # fmt: skip
    assert main(args) == 0
    manifest = json.loads((tmp_path / "o" / "manifest.json").read_text())
    for art in manifest["artifacts"]:  # the Edge TPU-ready int8 model and the compiled one
        assert EDGETPU_EXTRA_KEYS - key_paths(art["extra"]["edgetpu"]) == set(), art["path"]
