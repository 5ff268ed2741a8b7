from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgekit.core.artifact import Artifact, Fidelity, Manifest, QuantParams, SourceInfo, TensorSpec
from edgekit.core.errors import UsageError


def _manifest() -> Manifest:
    art = Artifact(
        path="m.int8.tflite", format="tflite", precision="int8",
        inputs=[TensorSpec("x", [1, 28, 28, 1], "int8", "NHWC", QuantParams(0.0039, -128))],
        outputs=[TensorSpec("y", [1, 10], "int8", None, QuantParams(0.1, 3))],
        size_bytes=123, sha256="ab" * 32, parent="torch_to_onnx",
        fidelity=Fidelity(samples=10, top1_agreement=1.0, cosine=0.999, max_abs_error=0.1, accuracy=0.9,
                          reference_accuracy=0.9),
        seconds=1.5, extra={"io_dtype": "int8"},
    )
    return Manifest(source=SourceInfo(path="m.pt2", sha256="cd" * 32, kind="torch-exported"), artifacts=[art],
                    tool_versions={"torch": "2.13.0"}, edgekit_version="0.1.0")


def test_manifest_round_trips_through_json(tmp_path: Path) -> None:
    m = _manifest()
    path = m.write(tmp_path / "manifest.json")
    data = json.loads(path.read_text())
    for key in ("edgekit_version", "source", "tool_versions", "options", "artifacts"):
        assert key in data
    a = data["artifacts"][0]
    for key in ("path", "format", "precision", "size_bytes", "sha256", "inputs", "outputs", "fidelity", "seconds"):
        assert key in a
    for key in ("top1_agreement", "cosine", "max_abs_error", "accuracy", "reference_accuracy", "samples", "passed"):
        assert key in a["fidelity"]
    back = Manifest.read(tmp_path)
    assert back.to_dict() == data
    assert back.artifacts[0].inputs[0].quantization == QuantParams(0.0039, -128)
    assert a["inputs"][0]["quantization"] == {"scale": 0.0039, "zero_point": -128}  # the v1 keys, no "axis"


def test_reading_a_non_manifest_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text("{\"hello\": 1}")
    with pytest.raises(UsageError, match="not an edgekit manifest"):
        Manifest.read(tmp_path)
    with pytest.raises(UsageError, match="No manifest"):
        Manifest.read(tmp_path / "nope")


def test_source_record_round_trips_and_survives_a_hostile_value() -> None:
    from edgekit.core.artifact import SourceInput

    info = SourceInfo(path="m.pt2", sha256="ab" * 32, kind="torch-exported", layout="NCHW",
                      input=SourceInput(name="x", shape=[-1, 1, 28, 28], dtype="float32"))
    d = info.to_dict()
    assert list(d)[:5] == ["path", "sha256", "kind", "layout", "input"]  # the five keys manifest v1 writes, first
    assert d["input"] == {"name": "x", "shape": [-1, 1, 28, 28], "dtype": "float32"}
    assert SourceInfo.read(d) == info
    assert SourceInfo.read("not a dict") == SourceInfo()
    assert SourceInfo.read({"path": "m", "input": {"shape": ["1", 2, None]}}).input == SourceInput(shape=[2])


def test_quantization_parameters_per_tensor_and_per_channel() -> None:
    q = QuantParams.from_arrays([0.5], [3])
    assert q == QuantParams(0.5, 3) and not q.per_channel and q.to_dict() == {"scale": 0.5, "zero_point": 3}
    pc = QuantParams.from_arrays([0.1, 0.2, 0.4], [0, 0, 0], axis=3)
    assert pc.per_channel and pc.to_dict() == {"scale": [0.1, 0.2, 0.4], "zero_point": [0, 0, 0], "axis": 3}
    scale, zp = pc.arrays(4)
    assert scale.shape == (1, 1, 1, 3) and zp.shape == (1, 1, 1, 3)
    assert QuantParams.from_arrays([], []) is None
    for hostile in (None, {}, {"scale": 0}, {"scale": "x"}, {"scale": [0.1], "zero_point": "y"}, [1, 2]):
        assert QuantParams.read(hostile) is None
    assert QuantParams.read(pc.to_dict()) == pc


@pytest.mark.parametrize("escape", ["../secret.onnx", "/etc/hostname", "sub/../../secret.onnx", "link.onnx"])
def test_an_artifact_path_out_of_the_manifests_folder_is_refused(tmp_path: Path, escape: str) -> None:
    """A hostile manifest must not make bench --remote, export or serve take any file it names."""
    run = tmp_path / "run"
    run.mkdir()
    (tmp_path / "secret.onnx").write_text("not yours")
    (run / "link.onnx").symlink_to(tmp_path / "secret.onnx")
    m = _manifest()
    assert m.resolve(m.artifacts[0], run / "manifest.json") == (run / "m.int8.tflite").resolve()
    m.artifacts[0].path = escape
    with pytest.raises(UsageError, match="not inside its folder"):
        m.resolve(m.artifacts[0], run / "manifest.json")


def test_a_file_beside_a_manifest_with_an_escaping_entry_still_finds_its_own(tmp_path: Path) -> None:
    from edgekit.measure.artifact import manifest_for

    m = _manifest()
    stray = Artifact(**{**m.artifacts[0].__dict__, "path": "../elsewhere.tflite"})
    m.artifacts.insert(0, stray)
    m.write(tmp_path / "manifest.json")
    (tmp_path / "m.int8.tflite").write_bytes(b"")
    found = manifest_for(tmp_path / "m.int8.tflite")
    assert found is not None and found[1].path == "m.int8.tflite"
