"""The TFLite int8 and Edge TPU artifacts of one run share a calibrated model, so they share one diagnosis.

The debugger does not see the I/O type: a second run of it gave the same figures and cost the zoo's ResNet50V2
47 s. Unasked, an Edge TPU model that its graph fixes made another calibrated model gets the run's diagnosis too
(said so), and the float model's input-noise agreement is measured once a run. The records are edgekit's own
(Artifact, Intermediate, Reference, ConvertOptions), so a renamed field fails here; a few bytes stand in for the
model files, and the debugger and the twin are counted, not run (milliseconds).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from edgekit.conversion.options import ConvertOptions
from edgekit.core.artifact import Artifact, Fidelity
from edgekit.core.formats import FORMATS
from edgekit.quantize import explain as explain_mod
from edgekit.quantize.records import Diagnosis, RecipeChoice
from edgekit.quantize.search import NOT_JUDGED
from edgekit.steps.base import Intermediate
from edgekit.validation.artifact import Reference


def _art(path: str, fmt: str = "tflite") -> Artifact:
    """An int8 artifact that missed its thresholds (what explain diagnoses unasked)."""
    fid = Fidelity(samples=40, top1_agreement=0.9, cosine=0.99, max_abs_error=0.1, passed=False)
    return Artifact(path=path, format=fmt, precision="int8", inputs=[], outputs=[], size_bytes=0, sha256="",
                    extra={"int8_recipe": {}}, fidelity=fid)


def _inter(cal: Path, io: str, noise: float | None = 1.0, fixes: int = 0, chosen: str = "plain") -> Intermediate:
    """A named recipe's artifact (met None: not judged in the search), NOISE its input-noise agreement if measured."""
    applied = {"HARD_SWISH -> ADD+RELU6, MUL, MUL": fixes}
    choice = RecipeChoice(requested=chosen, chosen=chosen, config={}, met=None, judged_on=NOT_JUDGED,
                          float_model=str(cal), float_input_noise_agreement=noise,
                          edgetpu_fixes={"applied": applied} if fixes else None)
    return Intermediate(kind="tflite", path=Path(f"m.{io}.tflite"), layout="NHWC", precision="int8",
                        quantization=choice)


def _ref(outputs: int = 1, classes: int = 10) -> Reference:
    y = np.zeros((40, classes), np.float32)
    return Reference(x=np.zeros((40, 4, 4, 3), np.float32), y_ref=y, labels=None, layout="NHWC",
                     inputs_name="validation", outputs=None if outputs == 1 else {f"o{i}": y for i in range(outputs)})


@pytest.fixture
def debugger(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The TFLite debugger, counted: each call's sample count."""
    import edgekit.quantize.tflite.recipes as tr

    calls: list[int] = []

    def fake(choice, x, inputs):  # noqa: ANN001, ANN202 - the debugger's signature
        calls.append(len(x))
        return Diagnosis("tflite quantization debugger", len(x), inputs, (), 3, "summary")

    monkeypatch.setattr(tr, "diagnose_tflite", fake)
    return calls


def test_the_second_artifact_of_one_calibration_reuses_the_diagnosis(tmp_path: Path, debugger: list[int]) -> None:
    calls = debugger
    cal, other = tmp_path / "cal.tflite", tmp_path / "other.tflite"
    cal.write_bytes(b"calibrated model")
    other.write_bytes(b"another calibrated model")
    ref = _ref()
    options = ConvertOptions(explain=False)
    seen: dict = {}
    int8, tpu, fixed = _art("m.int8.tflite"), _art("m.int8-uint8io.tflite"), _art("m.fixed.tflite")
    for art, inter in ((int8, _inter(cal, "int8")), (tpu, _inter(cal, "uint8")), (fixed, _inter(other, "uint8"))):
        explain_mod.explain(art, inter, ref, options, lambda _m: None, seen)
    unasked = FORMATS["tflite"].int8_diagnosis.unasked_samples
    assert calls == [unasked] * 2  # int8 and the other calibration; not the twin
    assert tpu.fidelity.diagnosis == int8.fidelity.diagnosis and tpu.diagnosis_run.same_as == "m.int8.tflite"
    assert fixed.diagnosis_run.same_as is None


@pytest.mark.parametrize("explain", [False, True])
def test_an_edge_tpu_model_its_fixes_changed_gets_the_run_s_diagnosis_unasked(tmp_path: Path, debugger: list[int],
                                                                              explain: bool) -> None:
    cal, fixed = tmp_path / "cal.tflite", tmp_path / "fixed.tflite"
    cal.write_bytes(b"calibrated model")
    fixed.write_bytes(b"calibrated model after 3 Edge TPU fixes")
    seen: dict = {}
    int8, tpu = _art("m.int8.tflite"), _art("m.int8-uint8io.tflite")
    for art, inter in ((int8, _inter(cal, "int8")), (tpu, _inter(fixed, "uint8", fixes=3))):
        explain_mod.explain(art, inter, _ref(), ConvertOptions(explain=explain), lambda _m: None, seen)
    if explain:  # asked: each model on its own
        assert len(debugger) == 2 and tpu.diagnosis_run.same_as is None
    else:
        assert debugger == [FORMATS["tflite"].int8_diagnosis.unasked_samples]
        assert tpu.fidelity.diagnosis == int8.fidelity.diagnosis and tpu.diagnosis_run.same_as == "m.int8.tflite"
        assert "3 Edge TPU graph fix(es) apart" in tpu.diagnosis_run.note


def test_another_recipe_is_not_the_run_s_diagnosis(tmp_path: Path, debugger: list[int]) -> None:
    cal, fixed = tmp_path / "cal.tflite", tmp_path / "fixed.tflite"
    cal.write_bytes(b"calibrated model")
    fixed.write_bytes(b"equalized, then fixed")
    seen: dict = {}
    tpu_inter = _inter(fixed, "uint8", fixes=2, chosen="equalize")
    for art, inter in ((_art("m.int8.tflite"), _inter(cal, "int8")), (_art("m.int8-uint8io.tflite"), tpu_inter)):
        explain_mod.explain(art, inter, _ref(), ConvertOptions(explain=False), lambda _m: None, seen)
    assert len(debugger) == 2


def test_the_input_noise_agreement_is_measured_once_a_run(tmp_path: Path, debugger: list[int],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import edgekit.quantize.onnx.diagnose as do
    import edgekit.quantize.search as search

    twins: list[str] = []

    def twin(fmt: str, float_model: str, x: np.ndarray) -> float:
        twins.append(fmt)
        return 0.8125

    monkeypatch.setattr(search, "twin_noise_agreement", twin)
    monkeypatch.setattr(do, "diagnose", lambda f, q, x, inputs: Diagnosis("ort", len(x), inputs, (), 3, "s"))
    onnx, cal, fixed = tmp_path / "pre.onnx", tmp_path / "cal.tflite", tmp_path / "fixed.tflite"
    for f in (onnx, cal, fixed):
        f.write_bytes(f.name.encode())
    seen: dict = {}
    arts = [_art("m.int8.onnx", "onnx"), _art("m.int8.tflite"), _art("m.int8-uint8io.tflite")]
    inters = [_inter(onnx, "int8", noise=None), _inter(cal, "int8", noise=None), _inter(fixed, "uint8", None, 2)]
    for art, inter in zip(arts, inters, strict=True):
        explain_mod.explain(art, inter, _ref(), ConvertOptions(explain=False), lambda _m: None, seen)
    assert twins == ["onnx"]  # the first miss's float twin; the others read the run's figure
    for art in arts:
        assert art.extra["int8_recipe"] == {}  # the record, not the serialized extra, holds it until written
        assert art.to_dict()["extra"]["int8_recipe"] == {"float_input_noise_agreement": 0.8125,
                                                         "float_input_noise_measured_on": "m.int8.onnx"}


@pytest.mark.parametrize(("outputs", "classes"), [(1, 1), (3, 10)])
def test_no_noise_agreement_without_one_output_of_classes(tmp_path: Path, debugger: list[int],
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          outputs: int, classes: int) -> None:
    import edgekit.quantize.search as search

    monkeypatch.setattr(search, "twin_noise_agreement", lambda *a: pytest.fail("the twin ran for no top-1"))
    cal = tmp_path / "cal.tflite"
    cal.write_bytes(b"calibrated model")
    art = _art("m.int8.tflite")
    explain_mod.explain(art, _inter(cal, "int8", noise=None), _ref(outputs, classes), ConvertOptions(explain=False),
                        lambda _m: None, {})
    assert art.fidelity.diagnosis is not None and art.to_dict()["extra"]["int8_recipe"] == {}


def test_a_diagnosis_the_library_cannot_make_is_noted_in_the_manifest(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """An expected failure (the library's, mapped at the border to an EdgekitError) keeps the artifact and its
    verdict; its message is the manifest's `extra.diagnosis_error`, as before."""
    import edgekit.quantize.tflite.recipes as tr
    from edgekit.core.errors import RuntimeFailure

    def refuses(choice, x, inputs):  # noqa: ANN001, ANN202 - the debugger's signature
        raise RuntimeFailure("the debugger cannot run op CUSTOM")

    monkeypatch.setattr(tr, "diagnose_tflite", refuses)
    cal = tmp_path / "cal.tflite"
    cal.write_bytes(b"calibrated model")
    art = _art("m.int8.tflite")
    assert explain_mod.explain(art, _inter(cal, "int8"), _ref(), ConvertOptions(explain=False), lambda _m: None,
                               {}) is None
    assert art.to_dict()["extra"]["diagnosis_error"] == "RuntimeFailure: the debugger cannot run op CUSTOM"
    assert Artifact.from_dict(art.to_dict()).diagnosis_run.error == art.diagnosis_run.error  # read back typed


def test_a_bug_in_the_diagnosis_is_raised_not_a_manifest_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A TypeError inside the diagnosis is a bug in edgekit: InternalError, never `extra.diagnosis_error`."""
    import edgekit.quantize.tflite.recipes as tr
    from edgekit.core.errors import InternalError

    def buggy(choice, x, inputs):  # noqa: ANN001, ANN202 - the debugger's signature
        from edgekit.quantize.records import LayerDiagnosis

        return LayerDiagnosis.from_dict(None)  # a TypeError raised in edgekit's own code (cls(**None))

    monkeypatch.setattr(tr, "diagnose_tflite", buggy)
    cal = tmp_path / "cal.tflite"
    cal.write_bytes(b"calibrated model")
    art = _art("m.int8.tflite")
    with pytest.raises(InternalError, match="TypeError"):
        explain_mod.explain(art, _inter(cal, "int8"), _ref(), ConvertOptions(explain=False), lambda _m: None, {})
    assert art.diagnosis_run.error is None and "diagnosis_error" not in art.to_dict()["extra"]


def test_a_miss_without_a_float_twin_says_why_it_is_not_diagnosed(tmp_path: Path) -> None:
    """A w8a16 or OpenVINO int8 record keeps no float twin: a miss is noted in the manifest, never silent."""
    art = _art("m.w8a16.tflite")
    inter = _inter(tmp_path / "cal.tflite", "int8")
    inter.quantization = dataclasses.replace(inter.quantization, float_model=None)
    assert explain_mod.explain(art, inter, _ref(), ConvertOptions(), lambda _m: None, {}) is None
    assert "keeps no float twin" in art.diagnosis_run.note
    passed = _art("p.w8a16.tflite")
    passed.fidelity.passed = True
    assert explain_mod.explain(passed, inter, _ref(), ConvertOptions(), lambda _m: None, {}) is None
    assert passed.diagnosis_run.note is None
