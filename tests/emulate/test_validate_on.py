"""--validate-on's record and verdict, without qemu: what validate_on writes for a run, a miss and a crash."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgekit.core.artifact import Artifact, Fidelity
from edgekit.core.errors import RuntimeFailure
from edgekit.emulate import validate as ev
from edgekit.emulate.cpus import emulated_cpu
from edgekit.report.convert import device_verdicts
from edgekit.validation.artifact import ArtifactCheck


def _art() -> Artifact:
    return Artifact(path="m.int8.tflite", format="tflite", precision="int8", inputs=[], outputs=[], size_bytes=1,
                    sha256="0" * 64, fidelity=Fidelity(samples=4, cosine=0.9999, max_abs_error=0.01, passed=True))


@pytest.fixture()
def host() -> dict[str, np.ndarray]:
    return {"logits": np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]], np.float32)}


def _fake(monkeypatch: pytest.MonkeyPatch, outcome: dict[str, object]) -> None:
    import edgekit.validation.artifact as cv

    def check_artifact(path, fmt, layout, precision, ref, *, on=None, **kw):
        got = outcome[on.cpu.device]
        if isinstance(got, Exception):
            raise got
        return got

    monkeypatch.setattr(cv, "check_artifact", check_artifact)
    monkeypatch.setattr("edgekit.emulate.launch.require", lambda root=None: None)


def test_a_pass_a_miss_and_a_crash_are_each_recorded(monkeypatch: pytest.MonkeyPatch, host) -> None:
    fp16ish = {"logits": host["logits"] * 1.01}
    _fake(monkeypatch, {
        "raspberry-pi-3": RuntimeFailure("the runtime crashed (SIGILL) while validating m.int8.tflite: an instruction "
                                         "this CPU does not have."),
        "raspberry-pi-4": ArtifactCheck(inputs=[], outputs=[], fidelity=Fidelity(samples=4, passed=True),
                                        kernels="xnnpack", outputs_got=dict(host)),
        "raspberry-pi-5": ArtifactCheck(inputs=[], outputs=[], fidelity=Fidelity(samples=4, passed=False,
                                                                                 failures=["cosine 0.98 < 0.99"]),
                                        outputs_got=fp16ish)})
    art = _art()
    said: list[str] = []
    ev.validate_on(art, Path("m.int8.tflite"), "NHWC", None, host, [emulated_cpu(n) for n in ("pi3", "pi4", "pi5")],
                   said.append)
    on = art.extra["validated_on"]
    assert on["raspberry-pi-3"]["ran"] is False and "SIGILL" in on["raspberry-pi-3"]["error"]
    assert on["raspberry-pi-4"]["passed"] and on["raspberry-pi-4"]["vs_host"]["logits"]["identical"]
    assert on["raspberry-pi-5"]["vs_host"]["logits"]["relative_difference"] == pytest.approx(0.01, rel=1e-3)
    assert on["raspberry-pi-5"]["cpu"]["core"] == "cortex-a76"
    # the artifact's verdict is the devices' too, each failure named by its device
    assert art.fidelity.passed is False
    assert any(f.startswith("on raspberry-pi-3 (Cortex-A53, emulated): ") for f in art.fidelity.failures)
    assert "on raspberry-pi-5 (Cortex-A76, emulated): cosine 0.98 < 0.99" in art.fidelity.failures
    cell = device_verdicts(on)
    assert "raspberry-pi-3 [bold red]could not run" in cell and "raspberry-pi-4 [green]pass" in cell
    assert "raspberry-pi-5 [bold red]MISS" in cell


def test_the_devices_verdict_leaves_a_passing_artifact_passing(monkeypatch: pytest.MonkeyPatch, host) -> None:
    _fake(monkeypatch, {"raspberry-pi-4": ArtifactCheck(inputs=[], outputs=[], fidelity=Fidelity(samples=4),
                                                        outputs_got=dict(host))})
    art = _art()
    ev.validate_on(art, Path("m"), "NHWC", None, host, [emulated_cpu("pi4")], lambda s: None)
    assert art.fidelity.passed and not art.fidelity.failures


def test_difference_of_outputs() -> None:
    a = {"y": np.array([1.0, 0.0]), "z": np.ones((2, 2))}
    d = ev.output_difference(a, {"y": np.array([1.0, 0.0]), "z": np.ones(3)})
    assert d["y"]["identical"] and d["y"]["cosine"] == 1.0
    assert d["z"] == {"identical": False, "note": "missing or of another shape on the device"}


def test_a_bad_name_is_refused_before_anything_runs() -> None:
    from edgekit.conversion.options import ConvertOptions
    from edgekit.core.errors import UsageError

    opts = ConvertOptions.from_keywords(validate_on="pi4,raspi5")
    with pytest.raises(UsageError, match="raspi5"):
        opts.check()
    ok = ConvertOptions.from_keywords(validate_on="pi5,pi4")
    ok.check()
    assert ok.validate_on == ["raspberry-pi-5", "raspberry-pi-4"]
