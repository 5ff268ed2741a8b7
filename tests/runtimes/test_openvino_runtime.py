"""OpenVINO specifics: compile settings, int8 kernels, devices it does not see, IRs that are incomplete or hostile,
`edgekit profile` on an IR and on an ONNX file, and no telemetry sent. The shared contract is in
test_runtime_conformance.py (the tiny CNN's IR and ONNX)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgekit.core.errors import (
    EdgekitError,
    MissingDependency,
    NotAvailable,
    RuntimeFailure,
    UnsupportedModel,
    UsageError,
)
from edgekit.runtimes import detect_format
from edgekit.runtimes import openvino as ovmod
from edgekit.runtimes.openvino import OpenVINO
from edgekit.testing import tiny_cnn

ov = pytest.importorskip("openvino")


def _ir_copy(tiny_models: dict[str, Any], folder: Path, bin_too: bool = True) -> Path:
    xml = Path(tiny_models["models"]["openvino-fp32"])
    shutil.copy(xml, folder / "m.xml")
    if bin_too:
        shutil.copy(xml.with_suffix(".bin"), folder / "m.bin")
    return folder / "m.xml"


def test_settings_reach_the_compiled_model(tiny_models: dict[str, Any]) -> None:
    """threads -> INFERENCE_NUM_THREADS, LATENCY hint, f32 on the CPU (OpenVINO's default may be bf16)."""
    x = tiny_cnn.sample_inputs(4)
    for key in ("openvino-fp32", "onnx"):
        with OpenVINO() as rt:
            rt.load(tiny_models["models"][key], threads=1)
            info = rt.info()
            assert info["inference_num_threads"] == 1 and info["performance_hint"] == "LATENCY"
            assert info["inference_precision"] == "f32" and info["kernel_precisions"]["Convolution"] == "f32"
            np.testing.assert_allclose(rt.run_float({"input": x})["logits"], tiny_cnn.forward(x), rtol=1e-4,
                                       atol=1e-4)
    with OpenVINO() as rt:
        rt.load(tiny_models["models"]["openvino-fp32"], hint="throughput", inference_precision="bf16")
        assert rt.info()["performance_hint"] == "THROUGHPUT"
    for bad in ({"hint": "fastest"}, {"inference_precision": "int4"}):
        with pytest.raises(UsageError, match="Unknown OpenVINO"):
            OpenVINO().load(tiny_models["models"]["openvino-fp32"], **bad)


def test_int8_ir_runs_int8_kernels(tiny_models: dict[str, Any], tmp_path: Path) -> None:
    """An NNCF int8 IR keeps float I/O, computes close to the reference and runs u8/i8 convolutions."""
    from edgekit.core.vendor_telemetry import require_quiet

    nncf = require_quiet("nncf")
    model = ov.Core().read_model(tiny_models["models"]["openvino-fp32"])
    calib = tiny_cnn.sample_inputs(32, seed=2)
    quantized = nncf.quantize(model, nncf.Dataset([calib[i:i + 1] for i in range(32)]), subset_size=32)
    ov.save_model(quantized, str(tmp_path / "int8.xml"))
    x = tiny_cnn.sample_inputs(16)
    ref = tiny_cnn.forward(x)
    with OpenVINO() as rt:
        rt.load(tmp_path / "int8.xml")
        assert rt.inputs[0].dtype == "float32"
        y = rt.run_float({"input": x})["logits"]
        assert set(rt.info()["kernel_precisions"]["Convolution"].split(",")) <= {"u8", "i8"}
    cos = (y * ref).sum(1) / np.linalg.norm(y, axis=1) / np.linalg.norm(ref, axis=1)
    assert cos.min() > 0.99


def test_incomplete_and_hostile_irs_are_edgekit_errors(tiny_models: dict[str, Any], tmp_path: Path) -> None:
    xml = _ir_copy(tiny_models, tmp_path, bin_too=False)
    assert detect_format(xml) == "openvino"
    with pytest.raises(UsageError, match="m.bin is not beside it") as err:
        OpenVINO().load(xml)
    assert "model.xml and model.bin" in (err.value.hint or "")

    xml = _ir_copy(tiny_models, tmp_path)
    text = xml.read_text()
    xml.write_text(text[: len(text) // 2])  # cut mid-graph: OpenVINO's reader refuses it
    with pytest.raises(RuntimeFailure, match="OpenVINO could not load"):
        OpenVINO().load(xml)
    (tmp_path / "m.bin").write_bytes(b"\0" * 16)  # weights that do not fit the graph's offsets
    xml.write_text(text)
    with pytest.raises(RuntimeFailure):
        OpenVINO().load(xml)

    # a document type (where entities are declared) never passes for an IR: refused before any parser sees it
    evil = tmp_path / "evil.xml"
    evil.write_text('<?xml version="1.0"?>\n<!DOCTYPE net [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>\n'
                    '<net name="x" version="11">&b;</net>')
    (tmp_path / "evil.bin").write_bytes(b"")
    with pytest.raises(UnsupportedModel):
        detect_format(evil)
    with pytest.raises(UnsupportedModel, match="neither an OpenVINO IR"):
        OpenVINO().load(evil)
    garbage = tmp_path / "garbage.xml"
    garbage.write_bytes(b"\x00\xff" * 100)
    with pytest.raises(UnsupportedModel):
        OpenVINO().load(garbage)


class _Core:
    def __init__(self, devices: list[str]) -> None:
        self.available_devices = devices


def test_gpu_and_npu_where_openvino_sees_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ovmod, "core", lambda: _Core(["CPU", "GPU.0", "GPU.1"]))
    assert OpenVINO.available("gpu") == (True, "")
    ok, why = OpenVINO.available("npu")
    assert not ok and "sees no NPU device (it sees CPU, GPU.0, GPU.1)" in why
    assert "NPU driver" in (OpenVINO.device_hint("npu") or "")
    with pytest.raises(NotAvailable) as err:
        OpenVINO().load(__file__, device="npu")
    assert err.value.exit_code == 3 and "NPU driver" in (err.value.hint or "")
    ok, why = OpenVINO.available("edgetpu")
    assert not ok and "choose from cpu, gpu, npu" in why

    def missing() -> Any:
        raise MissingDependency("The Python package 'openvino' is needed", hint="pip install 'edgekit[openvino]'")

    monkeypatch.setattr(ovmod, "core", missing)
    ok, why = OpenVINO.available("cpu")
    assert not ok and "openvino" in why


def test_profile_an_ir_and_an_onnx_file(tiny_models: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """`edgekit profile model.xml` and `edgekit profile model.onnx --runtime openvino`, end to end."""
    from edgekit.cli import main

    for key, extra in (("openvino-fp32", []), ("onnx", ["--runtime", "openvino"])):
        rc = main(["profile", tiny_models["models"][key], *extra, "--json", "--runs", "3", "--min-seconds", "0",
                   "--warmup", "1", "--threads", "1"])
        result = json.loads(capsys.readouterr().out)
        assert rc == 0 and result["runtime"]["name"] == "openvino" and result["latency_ms"]["p50"] > 0
        assert result["artifact"]["format"] == ("openvino" if key == "openvino-fp32" else "onnx")
        assert result["settings"]["threads"] == 1 and result["runtime"]["details"]["inference_num_threads"] == 1
        assert result["compute"]["macs"] == 59264  # counted by `edgekit inspect` on either file


_TELEMETRY = """
import sys
sent = []
import openvino_telemetry.utils.sender as sender
sender.TelemetrySender.send = lambda self, backend, message: sent.append(message)
if sys.argv[1] == "declined":
    from edgekit.core.vendor_telemetry import require_quiet
    ov = require_quiet("openvino")
else:
    import openvino as ov
ov.convert_model(sys.argv[2])
print(len(sent))
"""


@pytest.mark.slow
def test_no_telemetry_from_openvinos_converter(tiny_models: dict[str, Any], tmp_path: Path) -> None:
    """openvino.convert_model sends usage events where no consent file exists; through edgekit it sends none and
    writes no client id. (The control run proves the test can fail: events are sent without edgekit's decline.)"""
    pytest.importorskip("openvino_telemetry")
    counts = {}
    for mode in ("control", "declined"):
        home = tmp_path / mode
        home.mkdir()
        env = {k: v for k, v in os.environ.items() if k not in ("CI", "TF_BUILD", "JENKINS_URL")} | {"HOME": str(home)}
        proc = subprocess.run([sys.executable, "-c", _TELEMETRY, mode, tiny_models["models"]["onnx"]], env=env,
                              capture_output=True, text=True, timeout=120, check=True)
        counts[mode] = int(proc.stdout.split()[-1])
        counts[mode + " files"] = sorted(p.name for p in home.rglob("*") if p.is_file())
    assert counts["control"] > 0 and "openvino_ga_cid" in counts["control files"]
    assert counts["declined"] == 0 and counts["declined files"] == []


def test_corrupt_file_errors_are_edgekit_errors_without_openvino_types(tmp_path: Path) -> None:
    """A file that is not a model at all never reaches OpenVINO's frontends (which would try TF, Paddle ...)."""
    f = tmp_path / "notes.txt"
    f.write_text("hello")
    with pytest.raises(EdgekitError):
        OpenVINO().load(f)
