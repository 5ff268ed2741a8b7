"""The TFLite int8 and Edge TPU artifacts of one run share a calibrated model, so they share one diagnosis.

The debugger does not see the I/O type: a second run of it gave the same figures and cost the zoo's ResNet50V2
47 s. Fakes stand in for the artifacts; the debugger is counted, not run (milliseconds).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from edgekit.quantize import explain as explain_mod
from edgekit.quantize.records import Diagnosis


def _art(path: str) -> SimpleNamespace:
    return SimpleNamespace(path=path, format="tflite", extra={},
                           fidelity=SimpleNamespace(passed=False, diagnosis=None))


def _inter(cal: Path, io: str) -> SimpleNamespace:
    choice = SimpleNamespace(float_model=str(cal), float_nodes=(), requested="plain", why_words=lambda: "", met=None,
                             float_input_noise_agreement=1.0)  # a named recipe's, its noise agreement measured
    return SimpleNamespace(quantization=choice, path=Path(f"m.{io}.tflite"), layout="NHWC")


def test_the_second_artifact_of_one_calibration_reuses_the_diagnosis(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import edgekit.quantize.tflite_recipes as tr

    calls: list[int] = []

    def fake(choice, x, inputs):  # noqa: ANN001, ANN202 - the debugger's signature
        calls.append(len(x))
        return Diagnosis("tflite quantization debugger", len(x), inputs, (), 3, "summary")

    monkeypatch.setattr(tr, "diagnose_tflite", fake)
    cal, other = tmp_path / "cal.tflite", tmp_path / "other.tflite"
    cal.write_bytes(b"calibrated model")
    other.write_bytes(b"another calibrated model")
    ref = SimpleNamespace(x=np.zeros((40, 4, 4, 3), np.float32), layout="NHWC", inputs_name="validation")
    options = SimpleNamespace(explain=False)
    seen: dict = {}
    int8, tpu, fixed = _art("m.int8.tflite"), _art("m.int8-uint8io.tflite"), _art("m.fixed.tflite")
    for art, inter in ((int8, _inter(cal, "int8")), (tpu, _inter(cal, "uint8")), (fixed, _inter(other, "uint8"))):
        explain_mod.explain(art, inter, ref, options, lambda _m: None, seen)
    assert calls == [explain_mod.UNASKED_TFLITE_SAMPLES] * 2  # int8 and the other calibration; not the twin
    assert tpu.fidelity.diagnosis == int8.fidelity.diagnosis and tpu.extra["diagnosis_same_as"] == "m.int8.tflite"
    assert "diagnosis_same_as" not in fixed.extra
