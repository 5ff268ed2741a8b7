"""The Edge TPU records: JSON as the dicts had it (keys written only in some cases still only then), and back."""

from __future__ import annotations

import json

from tflite_builder import Graph, conv_chain

from edgekit.edgetpu import CompilerLog, PreflightReport, parse_log, preflight
from edgekit.edgetpu.records import CompileResult, PreflightOp, Problem


def test_predicted_report_round_trips_and_writes_conditional_keys_only_when_set(tmp_path):
    pf = preflight(conv_chain(tmp_path / "leaky.tflite", middle="LEAKY_RELU"))
    d = pf.to_dict()
    json.dumps(d)
    assert "edgetpu_custom_ops" not in d and "note" not in d  # the compiled-model keys
    before, partition, after = d["ops"]
    assert "own_reason" not in before and "own_code" not in before
    assert after["code"] == "after_partition" and after["own_reason"] is None and after["own_code"] is None
    (blocking,) = [p for p in d["problems"] if p.get("blocking")]
    assert blocking["blocking"] is True and all("blocking" not in p for p in d["problems"] if p is not blocking)
    assert d["first_unsupported"] == {"index": 1, "op": "LEAKY_RELU", "reason": partition["reason"],
                                      "code": "unsupported_op", "tried": None}  # fmt: skip
    assert PreflightReport.from_dict(d) == pf
    assert PreflightReport.from_dict({**d, "how_to_finish": None, "compiler": None}) == pf  # a manifest's extra


def test_compiled_model_report_has_its_own_keys(tmp_path):
    g = Graph()
    x = g.tensor("input", [1, 8, 8, 3], "uint8")
    y = g.tensor("output", [1, 10], "uint8")
    g.op("edgetpu-custom-op", [x], [y])
    pf = preflight(g.write(tmp_path / "m_edgetpu.tflite", [x], [y]))
    assert list(pf.to_dict()) == [
        "predicted", "compiled", "ops_total", "ops_on_tpu", "macs_on_tpu_fraction", "first_unsupported",
        "edgetpu_custom_ops", "cpu_ops", "note",
    ]  # fmt: skip
    assert pf.summary == "" and "libedgetpu" in (pf.note or "")
    assert PreflightReport.from_dict(pf.to_dict()) == pf


def test_caveat_only_on_ops_that_have_one():
    plain = PreflightOp(index=0, op="ADD", mapped=True, reason=None, code="mapped", macs=0)
    assert "caveat" not in plain.to_dict()
    noted = PreflightOp(index=0, op="ADD", mapped=True, reason=None, code="mapped", macs=0, caveat="x")
    assert noted.to_dict()["caveat"] == "x"
    assert Problem.from_dict(Problem("rank", "m", "s", [1], "src").to_dict()).blocking is False


def test_compiler_log_keys_set_later_appear_once_set(fixtures_dir):
    log = parse_log((fixtures_dir / "reconstructed_v16_mnist_all_mapped_stdout.txt").read_text())
    d = log.to_dict()
    assert not {"stdout", "compiler_path", "log_path", "seconds"} & set(d)  # a bare parse, as before
    assert list(d)[:2] == ["compiler_version", "compile_ms"] and list(d)[-1] == "attempts"
    log.stdout, log.compiler_path, log.log_path, log.seconds = "out", "/bin/c", "m_edgetpu.log", 0.5
    d = log.to_dict()
    assert list(d)[-4:] == ["stdout", "compiler_path", "log_path", "seconds"]
    assert CompilerLog.from_dict(json.loads(json.dumps(d))) == log
    result = CompileResult(compiled_path="m_edgetpu.tflite", log_path="m_edgetpu.log", report=log, seconds=0.5,
                           command=["edgetpu_compiler", "-s"])  # fmt: skip
    assert result.to_dict()["report"] == d
