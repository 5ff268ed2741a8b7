"""`edgekit export --triton`: config.pbtxt read with Triton's model-config protobuf, checked against the manifest."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from edgekit.cli import main
from edgekit.core.artifact import Artifact, Manifest, SourceInfo, TensorSpec


def model_config_pb2():
    """tritonclient's ModelConfig protobuf module. `tritonclient.grpc`'s package import needs grpcio (its grpc
    extra, which pins protobuf<7); the generated module itself needs only protobuf, so it is loaded by file."""
    try:
        from tritonclient.grpc import model_config_pb2 as mod
        return mod
    except (ImportError, RuntimeError):
        spec = importlib.util.find_spec("tritonclient")
        if spec is None or not spec.submodule_search_locations:
            pytest.skip("tritonclient is not installed (pip install 'edgekit[dev]')")
        path = Path(spec.submodule_search_locations[0]) / "grpc" / "model_config_pb2.py"
        loader = importlib.util.spec_from_file_location("edgekit_test_model_config_pb2", path)
        mod = importlib.util.module_from_spec(loader)
        loader.loader.exec_module(mod)
        return mod


def _art(precision: str, batch: int) -> Artifact:
    return Artifact(path=f"net.{precision}.onnx", format="onnx", precision=precision,
                    inputs=[TensorSpec("x", [batch, 3, 32, 32], "float32", "NCHW")],
                    outputs=[TensorSpec("logits", [batch, 10], "float32"), TensorSpec("idx", [batch], "int64")],
                    size_bytes=4, sha256="")


@pytest.fixture()
def conversion(tmp_path: Path) -> Path:
    arts = [_art("fp32", -1), _art("int8", 1),
            Artifact(path="net.int8.tflite", format="tflite", precision="int8", inputs=[], outputs=[],
                     size_bytes=1, sha256="")]
    for a in arts:
        (tmp_path / a.path).write_bytes(b"onnx" if a.format == "onnx" else b"tfl3")
    (tmp_path / "net.fp32.onnx.data").write_bytes(b"weights")
    Manifest(source=SourceInfo(path="models/net.pt2"), artifacts=arts).write(tmp_path / "manifest.json")
    return tmp_path


def test_repository_configs_parse_as_triton_model_configs_and_match_the_manifest(conversion: Path,
                                                                                  tmp_path: Path) -> None:
    from google.protobuf import text_format

    pb2 = model_config_pb2()
    repo = tmp_path / "repo"
    assert main(["export", str(conversion), "--triton", str(repo), "--max-batch", "16",
                 "--storage-uri", "s3://bucket/repo"]) == 0
    manifest = Manifest.read(conversion)
    onnx = {a.precision: a for a in manifest.artifacts if a.format == "onnx"}
    assert sorted(p.name for p in repo.iterdir()) == ["inferenceservice.yaml", "net-fp32", "net-int8"]
    for precision, art in onnx.items():
        folder = repo / f"net-{precision}"
        assert (folder / "1" / "model.onnx").read_bytes() == (conversion / art.path).read_bytes()
        cfg = text_format.Parse((folder / "config.pbtxt").read_text(), pb2.ModelConfig())
        dynamic = art.inputs[0].shape[0] == -1
        assert cfg.name == f"net-{precision}" and cfg.backend == "onnxruntime"
        assert cfg.max_batch_size == (16 if dynamic else 0) and cfg.HasField("dynamic_batching") is dynamic
        for got, want in ((cfg.input, art.inputs), (cfg.output, art.outputs)):
            assert [t.name for t in got] == [s.name for s in want]
            for t, s in zip(got, want, strict=True):
                assert list(t.dims) == (s.shape[1:] if dynamic else s.shape)
                assert pb2.DataType.Name(t.data_type) == {"float32": "TYPE_FP32", "int64": "TYPE_INT64"}[s.dtype]
    assert (repo / "net-fp32" / "1" / "net.fp32.onnx.data").read_bytes() == b"weights"  # external data travels
    import yaml

    service = yaml.safe_load((repo / "inferenceservice.yaml").read_text())
    assert service["kind"] == "InferenceService" and service["metadata"]["name"] == "net"
    assert service["spec"]["predictor"]["model"] == {"modelFormat": {"name": "triton"}, "protocolVersion": "v2",
                                                     "storageUri": "s3://bucket/repo"}
    assert main(["export", str(conversion), "--triton", str(repo)]) == 2  # not replaced without --force


def test_no_onnx_artifact_is_a_usage_error(tmp_path: Path) -> None:
    Manifest(source=SourceInfo(), artifacts=[]).write(tmp_path / "manifest.json")
    assert main(["export", str(tmp_path), "--triton", str(tmp_path / "repo")]) == 2


def test_an_openvino_ir_is_exported_with_its_weights_for_triton_s_openvino_backend(tmp_path: Path) -> None:
    """FORMATS names each format's Triton backend: the IR goes to <stem>-openvino-<precision>/1/model.xml + .bin."""
    ir = Artifact(path="net.int8.xml", format="openvino", precision="int8",
                  inputs=[TensorSpec("x", [-1, 3, 32, 32], "float32", "NCHW")],
                  outputs=[TensorSpec("logits", [-1, 10], "float32")], size_bytes=8, sha256="")
    (tmp_path / "net.int8.xml").write_bytes(b'<?xml version="1.0"?>\n<net name="n" version="11"></net>')
    (tmp_path / "net.int8.bin").write_bytes(b"weights!")
    onnx_art = _art("int8", 1)
    (tmp_path / onnx_art.path).write_bytes(b"onnx")
    Manifest(source=SourceInfo(path="models/net.pt2"), artifacts=[ir, onnx_art]).write(tmp_path / "manifest.json")
    repo = tmp_path / "repo"
    assert main(["export", str(tmp_path), "--triton", str(repo)]) == 0
    version = repo / "net-openvino-int8" / "1"
    assert (version / "model.xml").read_bytes().startswith(b"<?xml")
    assert (version / "model.bin").read_bytes() == b"weights!"
    pb = model_config_pb2()
    from google.protobuf import text_format

    config = text_format.Parse((repo / "net-openvino-int8" / "config.pbtxt").read_text(), pb.ModelConfig())
    assert config.backend == "openvino" and config.max_batch_size == 8 and list(config.input[0].dims) == [3, 32, 32]
    assert (repo / "net-int8" / "1" / "model.onnx").is_file()  # the ONNX beside it keeps its name
