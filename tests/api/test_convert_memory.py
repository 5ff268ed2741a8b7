"""edgekit.convert on the model object: the same artifacts and manifest as its saved file gets (issue 32).

For a torch.nn.Module, a Keras model and an onnx.ModelProto, the in-memory route and the file route a user
would take (torch.export.save / model.save / onnx.save, then edgekit.convert(path)) are run with the same
options, calibration arrays included, and their manifests compared whole (edgekit.core.reproducible's
stable part), less the fields that name where things are. Then what the result goes on to: bench, check,
profile, inspect and a refused second run. Real conversions: slow.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from api_models import cnn_forward, cnn_proto

import edgekit
from edgekit.api.result import Conversion
from edgekit.core.reproducible import stable_part
from edgekit.testing import tiny_cnn

pytestmark = pytest.mark.slow
OPTIONS = {"targets": "onnx", "quantize": "fp32,int8", "calib_size": 100, "val_size": 100, "quiet": True}
WHERE = (("source", "path"), ("source", "sha256"), ("options", "out_dir"), ("options", "calib"))


def comparable(result: Conversion) -> dict[str, Any]:
    """The manifest as the reproducibility promise compares it, less the fields that say where files are
    (the calibration file's path is also in each fidelity record's `inputs`: "npy:PATH [held-out: 60 of 240]")."""
    d = stable_part(result.manifest.to_dict())
    calib = d["options"]["calib"]
    for section, key in WHERE:
        d[section].pop(key)
    return json.loads(json.dumps(d).replace(calib, "CALIB"))


def assert_same_run(memory: Conversion, file: Conversion) -> None:
    assert [(a.path, a.format, a.precision, a.ok) for a in memory] == [(a.path, a.format, a.precision, a.ok)
                                                                       for a in file]
    assert [a.sha256 for a in memory] == [a.sha256 for a in file]  # byte-identical artifacts
    a, b = comparable(memory), comparable(file)
    assert [x["fidelity"] for x in a["artifacts"]] == [x["fidelity"] for x in b["artifacts"]]
    assert a == b
    assert all(x.fidelity.passed for x in memory)


@pytest.fixture(scope="module")
def torch_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Conversion, Conversion, Any, Path]:
    torch = pytest.importorskip("torch")
    tmp = tmp_path_factory.mktemp("torch-runs")
    module = tiny_cnn.torch_module().train()  # left in training mode: convert exports it in eval, then puts it back
    x = tiny_cnn.sample_inputs(240, seed=5)
    memory = edgekit.convert(module, input_shape=(1, 1, 28, 28), calib=x, out=tmp / "memory", **OPTIONS)
    assert module.training
    program = torch.export.export(module.eval(), (torch.zeros(1, 1, 28, 28),))
    (tmp / "user").mkdir()
    torch.export.save(program, str(tmp / "user" / "model.pt2"))
    np.save(tmp / "user" / "calibration.npy", x)
    file = edgekit.convert(tmp / "user" / "model.pt2", calib=str(tmp / "user" / "calibration.npy"),
                           out=tmp / "file", **OPTIONS)
    return memory, file, program, tmp


def test_a_torch_module_converts_as_its_saved_exported_program(torch_runs) -> None:
    memory, file, _, _ = torch_runs
    assert_same_run(memory, file)
    assert [a.path for a in memory] == ["model.fp32.onnx", "model.int8.onnx"]
    source = memory.out_dir / "source"
    assert memory.source.path == str(source / "model.pt2") and memory.source.kind == "torch-exported"
    assert memory.manifest.options["calib"] == str(source / "calibration.npy")
    assert memory.manifest.options["input_shape"] is None  # recorded in the .pt2, as for the file
    record = json.loads((source / "source.json").read_text())
    assert record["kind"] == "torch-module" and record["object"].endswith("TinyCNN")
    assert record["example_inputs"] == [{"shape": [1, 1, 28, 28], "dtype": "float32"}]
    assert record["how"].startswith("torch.export.export(module.eval()")
    assert np.load(source / "calibration.npy").shape == (240, 1, 28, 28)


def test_an_exported_program_is_written_as_its_file(torch_runs, tmp_path: Path) -> None:
    """An ExportedProgram goes the file route as the same bytes a user's torch.export.save writes."""
    from edgekit.core.fsutil import sha256_file
    from edgekit.sources import memory

    _, _, program, tmp = torch_runs
    path, _, consumed, _ = memory.write_source(program, "torch-exported-program", tmp_path / "ep", "model")
    assert sha256_file(path) == sha256_file(tmp / "user" / "model.pt2") and not consumed
    record = json.loads((tmp_path / "ep" / "source" / "source.json").read_text())
    assert record["kind"] == "torch-exported-program" and record["example_inputs"][0]["shape"] == [1, 1, 28, 28]


def test_the_result_goes_on_to_bench_check_profile_and_inspect(torch_runs) -> None:
    memory, file, _, _ = torch_runs
    report = memory.bench(runtimes="onnxruntime", runs=5, min_seconds=0, warmup=1, in_process=True,
                          include_source=False, quiet=True)
    assert [(r.label, r.status) for r in report.rows] == [("onnx fp32", "ok"), ("onnx int8", "ok")]
    assert (memory.out_dir / "bench" / "bench.json").is_file()
    frame = report.to_pandas()
    assert list(frame["label"]) == ["onnx fp32", "onnx int8"] and frame["p50_ms"].notna().all()
    gate = edgekit.check(memory)
    assert gate.verdict in ("pass", "warn") and gate.exit_code == 0 and gate.checks
    assert edgekit.check(memory, baseline=file).verdict in ("pass", "warn")  # another run as the baseline
    assert memory.check().verdict == gate.verdict
    int8 = memory["onnx", "int8"]
    result = int8.profile(device="cpu", runs=5, min_seconds=0, warmup=1, quiet=True)
    assert result.artifact.sha256 == int8.sha256 and result.latency_ms.p50 > 0 and result.runs >= 5
    assert edgekit.profile(int8.file, "cpu", runs=5, min_seconds=0, warmup=1, quiet=True).runtime.name == \
        "onnxruntime"
    assert int8.inspect().format == "onnx" and edgekit.inspect(int8).macs == int8.inspect().macs
    with int8.load() as run:
        x = tiny_cnn.sample_inputs(6)
        agree = (run(input=x)["output"].argmax(1) == tiny_cnn.forward(x).argmax(1)).mean()
        assert agree >= 5 / 6


def test_a_second_run_into_the_same_folder_needs_force(torch_runs) -> None:
    memory = torch_runs[0]
    written = (memory.out_dir / "source" / "model.pt2").stat().st_mtime_ns
    with pytest.raises(edgekit.UsageError, match="force=True"):
        edgekit.convert(tiny_cnn.torch_module(), input_shape=(1, 1, 28, 28), calib=np.zeros((10, 1, 28, 28)),
                        out=memory.out_dir, **OPTIONS)
    assert (memory.out_dir / "source" / "model.pt2").stat().st_mtime_ns == written


def test_a_keras_model_converts_as_its_saved_keras_file(tmp_path: Path) -> None:
    pytest.importorskip("keras")
    model = tiny_cnn._keras_model(tiny_cnn.weights())
    x = tiny_cnn.sample_inputs(240, seed=6).transpose(0, 2, 3, 1)  # NHWC, as the Keras model takes it
    keras_options = {**OPTIONS, "quantize": "fp32"}  # int8's calibration is the torch and ONNX runs' (Keras: seconds)
    memory = edgekit.convert(model, calib=x, out=tmp_path / "memory", name="tiny", **keras_options)
    (tmp_path / "user").mkdir()
    model.save(str(tmp_path / "user" / "tiny.keras"))
    np.save(tmp_path / "user" / "calibration.npy", x)
    file = edgekit.convert(tmp_path / "user" / "tiny.keras", calib=str(tmp_path / "user" / "calibration.npy"),
                           out=tmp_path / "file", **keras_options)
    assert_same_run(memory, file)
    assert [a.path for a in memory] == ["tiny.fp32.onnx"] and memory.source.kind == "keras"


def test_an_onnx_model_proto_converts_as_its_saved_file(tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    proto = cnn_proto(seed=1)
    x = np.random.default_rng(4).random((240, 3, 12, 12), dtype=np.float32)
    labels = cnn_forward(proto, x).argmax(1)
    memory = edgekit.convert(proto, calib=(x, labels), out=tmp_path / "memory", **OPTIONS)
    (tmp_path / "user").mkdir()
    onnx.save(proto, str(tmp_path / "user" / "model.onnx"))
    np.savez(tmp_path / "user" / "calibration.npz", x=x, y=labels)
    file = edgekit.convert(str(tmp_path / "user" / "model.onnx"), calib=str(tmp_path / "user" / "calibration.npz"),
                           out=tmp_path / "file", **OPTIONS)
    assert_same_run(memory, file)
    assert memory["onnx", "fp32"].fidelity.accuracy == 1.0  # the labels went along with the arrays
    with memory["onnx", "fp32"].load() as run:
        np.testing.assert_allclose(run(x[:4])["scores"], cnn_forward(proto, x[:4]), rtol=1e-4, atol=1e-5)


def test_held_out_arrays_given_apart_validate_every_artifact(tmp_path: Path) -> None:
    """val= arrays are written beside the calibration's and every artifact is validated on them, all of them, with
    their labels; the calibration arrays then calibrate whole."""
    proto = cnn_proto(seed=1)
    rng = np.random.default_rng(5)
    x, held = rng.random((40, 3, 12, 12), dtype=np.float32), rng.random((24, 3, 12, 12), dtype=np.float32)
    labels = cnn_forward(proto, held).argmax(1)
    result = edgekit.convert(proto, calib=x, val=(held, labels), out=tmp_path / "out", **OPTIONS)
    record = json.loads((tmp_path / "out" / "source" / "source.json").read_text())
    assert record["calibration"] == "calibration.npy" and record["validation"] == "validation.npz"
    assert result.manifest.options["val"] == str(tmp_path / "out" / "source" / "validation.npz")
    for precision in ("fp32", "int8"):
        fid = result["onnx", precision].fidelity
        assert fid.samples == 24 and "given apart: 24 of 24" in fid.inputs and fid.accuracy is not None
    assert result["onnx", "fp32"].fidelity.accuracy == 1.0  # the labels went along with the held-out arrays
    with pytest.raises(edgekit.UsageError, match="val= cannot be a list"):
        edgekit.convert(proto, calib=x, val=[held], out=tmp_path / "again", **OPTIONS)
    assert not (tmp_path / "again").exists()


def test_a_tf_module_and_a_concrete_function_are_written_as_saved_models(tmp_path: Path) -> None:
    """Written with their one signature, and read back by the SavedModel source loader (the file route's)."""
    tf = pytest.importorskip("tensorflow")
    from edgekit.sources import LoadOptions, memory
    from edgekit.sources.savedmodel import load

    w = tiny_cnn.weights()

    class Tiny(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.k1 = tf.Variable(w["c1.weight"].transpose(2, 3, 1, 0))
            self.b1 = tf.Variable(w["c1.bias"])
            self.fc = tf.Variable(np.random.default_rng(0).standard_normal((4, 10)).astype(np.float32))

        @tf.function(input_signature=[tf.TensorSpec([1, 28, 28, 1], tf.float32)])
        def __call__(self, x: Any) -> Any:
            y = tf.nn.relu(tf.nn.conv2d(x, self.k1, 1, "VALID") + self.b1)
            return {"logits": tf.reduce_mean(y, axis=[1, 2]) @ self.fc}

    module = Tiny()
    x = tiny_cnn.sample_inputs(3).transpose(0, 2, 3, 1)
    want = np.concatenate([module(x[i:i + 1])["logits"].numpy() for i in range(3)])
    for kind, obj in (("tf-module", module), ("tf-function", module.__call__.get_concrete_function())):
        path, _, _, _ = memory.write_source(obj, kind, tmp_path / kind, "model")
        assert (path / "saved_model.pb").is_file()
        src = load(path, LoadOptions(), "savedmodel")
        assert src.input_shape == [1, 28, 28, 1] and src.output_names == ["logits"]
        np.testing.assert_allclose(src.run_outputs({src.input_name: x})["logits"], want, rtol=1e-5, atol=1e-5)
    with pytest.raises(edgekit.UsageError, match="no input_signature"):
        memory.write_source(tf.function(lambda t: t * 2), "tf-function", tmp_path / "bare", "model")
