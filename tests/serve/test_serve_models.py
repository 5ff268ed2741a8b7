"""Which artifact of a conversion folder is served on which device, and under which names (no runtime loaded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgekit.core.artifact import Artifact, Fidelity, Manifest, Preprocessing, SourceInfo, SourceInput, TensorSpec
from edgekit.core.errors import UsageError
from edgekit.serve.models import ModelChoice, choose_artifact, name_models, read_labels


def _art(fmt: str, precision: str, passed: bool = True, io: str | None = None) -> Artifact:
    spec = TensorSpec("x", [1, 28, 28, 1], "float32")
    return Artifact(path=f"m.{precision}.{fmt}", format=fmt, precision=precision, inputs=[spec], outputs=[spec],
                    size_bytes=1, sha256="", fidelity=Fidelity(1, 1.0, 1.0, 0.0, passed=passed),
                    extra={"io_dtype": io} if io else {})


MANIFEST = Manifest(source=SourceInfo(), artifacts=[
    _art("onnx", "fp32"), _art("onnx", "int8"), _art("tflite", "fp32"), _art("tflite", "int8", io="uint8"),
    _art("tflite", "int8"), _art("tflite", "fp16", passed=False)])


@pytest.mark.parametrize(("device", "precision", "want"), [
    ("cpu", None, ("tflite", "int8", None)),  # the small int8 TFLite with int8 I/O, as on a Pi
    ("gpu", None, ("onnx", "fp32", None)),
    ("cpu", "fp32", ("tflite", "fp32", None)),
    ("raspberry-pi-5", None, ("tflite", "int8", None)),
])
def test_the_best_artifact_for_the_device(device: str, precision: str | None, want: tuple) -> None:
    a = choose_artifact(MANIFEST, device, precision, None)
    assert (a.format, a.precision, a.extra.get("io_dtype")) == want


def test_no_fit_and_failed_fidelity_are_refused() -> None:
    with pytest.raises(UsageError, match="edgetpu"):
        choose_artifact(MANIFEST, "edgetpu", None, None)
    with pytest.raises(UsageError, match="No artifact"):
        choose_artifact(MANIFEST, "cpu", "fp16", None)  # the only fp16 missed its fidelity thresholds
    assert choose_artifact(MANIFEST, "cpu", None, "onnxruntime").format == "onnx"


def _choice(name: str, precision: str, fmt: str = "tflite") -> ModelChoice:
    return ModelChoice(name, (), Path(f"{name}.{precision}.{fmt}"), fmt, precision, "litert", "cpu", None, None)


def test_names_are_the_stem_while_unique_else_stem_precision() -> None:
    named = name_models([_choice("a", "int8"), _choice("b", "int8"), _choice("b", "fp32")])
    assert [(c.name, c.aliases) for c in named] == [("a", ("a-int8",)), ("b-int8", ()), ("b-fp32", ())]
    with pytest.raises(UsageError, match="Several PATHs"):
        name_models([_choice("a", "int8"), _choice("a", "int8")])


def test_labels_and_preprocessing_from_the_conversion_options(tmp_path: Path) -> None:
    f = tmp_path / "labels.txt"
    f.write_text("cat\n\ndog\n\n")
    assert read_labels(f) == ["cat", "", "dog"]
    src = SourceInfo(layout="NCHW", input=SourceInput("x", [-1, 3, 224, 160], "float32"))
    pre = Preprocessing.of_conversion({"calib": "imgs/", "mean": [0.5, 0.5, 0.5], "std": [0.25] * 3}, src)
    assert (pre.color, pre.size, pre.mean, pre.known) == ("RGB", [224, 160], [0.5, 0.5, 0.5], True)
    assert Preprocessing.from_dict(pre.to_dict()) == pre
    assert Preprocessing.of_conversion({"calib": "x.npy"}, src).known is False


def test_a_device_profile_gives_its_thread_count_and_kind(tmp_path: Path) -> None:
    from edgekit.serve.models import resolve_models

    (tmp_path / "net.fp32.onnx").write_bytes(b"")  # the format is read from the name; nothing is loaded here
    [choice] = resolve_models([tmp_path / "net.fp32.onnx"], device="raspberry-pi-5")
    assert (choice.name, choice.precision, choice.runtime, choice.device, choice.threads) == \
        ("net", "fp32", "onnxruntime", "cpu", 4)
    with pytest.raises(UsageError, match="No such file"):
        resolve_models([tmp_path / "missing.onnx"])


def test_on_an_arm64_cpu_ncnn_is_the_first_float(monkeypatch: pytest.MonkeyPatch) -> None:
    """ncnn leads the float runtimes on Arm CPUs (the published Pi figures) and trails them on x86 (measured here):
    its record's "cpu-arm64" ranks stand for its "cpu" ones on an Arm64 CPU only; the int8 rows stay first."""
    import platform

    from edgekit.serve.models import preference

    arm, x86 = preference("cpu", machine="aarch64"), preference("cpu", machine="x86_64")
    assert arm[("tflite", "int8")] < arm[("ncnn", "fp32")] < arm[("ncnn", "fp16")] < arm[("tflite", "fp16")]
    assert arm[("ncnn", "fp32")] < min(arm[("tflite", "fp32")], arm[("onnx", "fp32")])
    assert x86[("ncnn", "fp32")] > max(x86[("tflite", "fp32")], x86[("onnx", "fp32")])
    assert ("ncnn", "fp32") in preference("gpu", machine="aarch64")  # Vulkan: the GPU's ranks, on any CPU
    floats = Manifest(source=SourceInfo(), artifacts=[_art("onnx", "fp32"), _art("tflite", "fp32"),
                                                      _art("ncnn", "fp32"), _art("ncnn", "fp16")])
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    assert (choose_artifact(floats, "cpu", None, None).format, choose_artifact(floats, "cpu", None, None)
            .precision) == ("ncnn", "fp32")
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    assert choose_artifact(floats, "cpu", None, None).format == "tflite"


def test_serve_ranks_come_from_the_format_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """An int8 OpenVINO IR is served first on a CPU where OpenVINO runs; where it does not, the int8 TFLite."""
    from edgekit.runtimes import get_runtime
    from edgekit.serve.models import preference

    ranks = preference("cpu")
    assert ranks[("openvino", "int8")] < ranks[("tflite", "int8")] < ranks[("onnx", "int8")] < ranks[("onnx", "fp16")]
    assert ("openvino", "int8") not in preference("gpu") and preference("raspberry-pi-9") == ranks
    manifest = Manifest(source=SourceInfo(), artifacts=[*MANIFEST.artifacts, _art("openvino", "int8")])
    cls = get_runtime("openvino")
    monkeypatch.setattr(cls, "available", classmethod(lambda c, device: (True, "")))
    assert choose_artifact(manifest, "cpu", None, None).format == "openvino"
    monkeypatch.setattr(cls, "available", classmethod(lambda c, device: (False, "openvino is not installed")))
    assert (choose_artifact(manifest, "cpu", None, None).format, choose_artifact(manifest, "cpu", None, None)
            .precision) == ("tflite", "int8")
