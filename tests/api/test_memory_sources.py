"""Models in memory -> their file form in OUT/source/: which objects, refused inputs, the folder's publication.

Fast: the kinds are told from class modules (fake classes stand in for the frameworks' here), and the
ONNX writer (onnx.helper, no torch/TensorFlow) is the real one; the torch, Keras and TF writers run in
the slow end-to-end tests (test_convert_memory.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import edgekit
from edgekit.core.errors import UsageError
from edgekit.sources import memory


def _instance(module: str, name: str, base: type = object) -> object:
    cls = type(name, (base,), {})
    cls.__module__ = module
    return cls()


@pytest.mark.parametrize(("module", "name", "kind"), [
    ("torch.nn.modules.module", "Module", "torch-module"),
    ("torch.export.exported_program", "ExportedProgram", "torch-exported-program"),
    ("keras.src.models.model", "Model", "keras"),
    ("tf_keras.src.engine.training", "Model", "keras"),
    ("onnx.onnx_ml_pb2", "ModelProto", "onnx"),
    ("tensorflow.python.module.module", "Module", "tf-module"),
    ("tensorflow.python.eager.polymorphic_function.concrete_function", "ConcreteFunction", "tf-function"),
    ("tensorflow.python.eager.polymorphic_function.polymorphic_function", "Function", "tf-function"),
])
def test_the_kind_is_told_from_the_class_without_importing_the_framework(module: str, name: str, kind: str) -> None:
    assert memory.memory_kind(_instance(module, name)) == kind


def test_a_subclass_is_its_first_known_base() -> None:
    """A user's network subclasses torch.nn.Module; a Keras 3 model is a tf AutoTrackable too, and Keras first."""
    base = type(_instance("torch.nn.modules.module", "Module"))
    net = type("MyNet", (base,), {"__module__": "__main__"})()
    assert memory.memory_kind(net) == "torch-module"
    tracked = type(_instance("tensorflow.python.module.module", "Module"))
    keras = type("Model", (tracked,), {"__module__": "keras.src.models.model"})
    assert memory.memory_kind(type("Sequential", (keras,), {"__module__": "keras.src.models.sequential"})()) == "keras"


@pytest.mark.parametrize("obj", [object(), 3, [1, 2], {"a": 1}, np.zeros(3), _instance("torchvision", "Module"),
                                 _instance("mytorch.nn", "Module")])
def test_anything_else_is_a_usage_error_naming_what_is_accepted(obj: object) -> None:
    with pytest.raises(UsageError) as err:
        memory.memory_kind(obj)
    assert "cannot take a" in err.value.message and "torch.nn.Module" in err.value.hint
    assert "onnx.ModelProto" in err.value.hint and "keras.Model" in err.value.hint


def test_a_path_takes_the_file_route() -> None:
    assert memory.memory_kind("model.pt2") is None and memory.memory_kind(Path("m.onnx")) is None


def test_convert_refuses_a_wrong_object_before_anything_is_written(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(UsageError, match="cannot take a builtins.object"):
        edgekit.convert(object(), out=out)
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"example_inputs": np.zeros((1, 3))}, "example_inputs= is for a model held in memory"),
    ({"name": "mnist"}, "name= names a model held in memory"),
])
def test_keywords_for_a_model_in_memory_are_refused_with_a_path(tmp_path: Path, kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        edgekit.convert(tmp_path / "model.onnx", out=tmp_path / "out", **kwargs)


def test_a_torch_module_without_an_example_input_is_refused_before_any_write(tmp_path: Path) -> None:
    module = type("Module", (), {"__module__": "torch.nn.modules.module"})()
    with pytest.raises(UsageError, match="needs an example input") as err:
        edgekit.convert(module, targets="onnx", out=tmp_path / "out")
    assert "input_shape=" in err.value.hint and not (tmp_path / "out").exists()


def test_example_inputs_of_python_objects_are_refused_before_any_write(tmp_path: Path) -> None:
    module = _instance("torch.nn.modules.module", "Module")  # torch.from_numpy would raise a bare TypeError
    with pytest.raises(UsageError, match="array of Python objects"):
        edgekit.convert(module, targets="onnx", example_inputs=(np.array([object()]),), out=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_bad_request_is_refused_before_the_model_is_written(tmp_path: Path, proto) -> None:
    with pytest.raises(UsageError, match="calibration data"):  # int8 without --calib
        edgekit.convert(proto, targets="onnx", quantize="int8", out=tmp_path / "out")
    with pytest.raises(UsageError, match="targt"):
        edgekit.convert(proto, targets="onnx", targt="x", out=tmp_path / "out")
    with pytest.raises(UsageError, match="Unknown target|tflit"):
        edgekit.convert(proto, targets="tflit", out=tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["", "../x", "a/b", ".hidden", "x" * 101, "sp ace"])
def test_a_name_must_make_a_file_name(name: str) -> None:
    with pytest.raises(UsageError, match="cannot name a model file"):
        memory.check_name(name)


def test_calibration_arrays_in_their_forms() -> None:
    x, y = np.zeros((4, 3), np.float32), np.arange(4)
    assert list(memory.calibration_arrays(x)) == ["x"]
    assert list(memory.calibration_arrays((x, y))) == ["x", "y"]
    assert list(memory.calibration_arrays({"image": x, "mask": x})) == ["image", "mask"]
    assert memory.calibration_arrays("mnist") is None and memory.calibration_arrays(None) is None
    with pytest.raises(UsageError, match="calib= cannot be a list"):
        memory.calibration_arrays([x])


@pytest.mark.parametrize("bad", [np.array([object()]), np.zeros(2, dtype=[("a", "f4"), ("b", object)])])
def test_calibration_arrays_of_objects_are_refused_before_anything_is_written(bad: np.ndarray, tmp_path: Path,
                                                                             proto) -> None:
    with pytest.raises(UsageError, match="Python objects"):  # np.savez would pickle them
        memory.calibration_arrays((np.zeros((2, 3), np.float32), bad))
    with pytest.raises(UsageError, match="Python objects"):
        edgekit.convert(proto, targets="onnx", calib=bad, out=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_onnx_writer_and_the_source_folder(tmp_path: Path, proto) -> None:
    out = tmp_path / "out"
    x = np.ones((5, 3, 12, 12), np.float32)
    src, calib, consumed, _ = memory.write_source(proto, "onnx", out, "tiny", calib={"x": x, "y": np.arange(5)})
    assert src == out / "source" / "tiny.onnx" and calib == out / "source" / "calibration.npz" and not consumed
    import onnx

    assert onnx.load(str(src)) == proto
    with np.load(calib) as z:
        assert z["x"].shape == (5, 3, 12, 12) and z["y"].tolist() == [0, 1, 2, 3, 4]
    record = json.loads((out / "source" / "source.json").read_text())
    assert record["kind"] == "onnx" and record["object"] == "onnx.onnx_ml_pb2.ModelProto"
    assert record["file"] == "tiny.onnx" and record["calibration"] == "calibration.npz"
    assert [p.name for p in out.iterdir()] == ["source"]  # the staging folder is gone
    assert (out / "source").stat().st_mode & 0o777 != 0o700  # a published folder, not mkdtemp's private one


def test_calibration_inputs_may_be_named_like_savez_keywords(tmp_path: Path, proto) -> None:
    """np.savez(path, **arrays) raised TypeError for an input named "file" and took one named "allow_pickle" as
    its flag, leaving it out of the file: every array is written under its own name."""
    arrays = {"file": np.ones((2, 3), np.float32), "allow_pickle": np.zeros((2, 1), np.float32), "y": np.arange(2)}
    _, calib, _, _ = memory.write_source(proto, "onnx", tmp_path / "out", "tiny", calib=arrays)
    with np.load(calib, allow_pickle=False) as z:
        assert sorted(z.files) == ["allow_pickle", "file", "y"]
        assert all(z[k].dtype == v.dtype and (z[k] == v).all() for k, v in arrays.items())


def test_an_earlier_source_folder_is_replaced_only_with_force(tmp_path: Path, proto) -> None:
    out = tmp_path / "out"
    memory.write_source(proto, "onnx", out, "first")
    memory.refuse_earlier(out, force=False)  # a folder edgekit wrote, no manifest: an unfinished run's, replaceable
    (out / "manifest.json").write_text("{}")
    with pytest.raises(UsageError, match="force=True"):
        memory.refuse_earlier(out, force=False)
    memory.refuse_earlier(out, force=True)
    memory.write_source(proto, "onnx", out, "second")
    assert sorted(p.name for p in (out / "source").iterdir()) == ["second.onnx", "source.json"]
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "source"]


def test_a_source_folder_edgekit_did_not_write_is_never_replaced(tmp_path: Path) -> None:
    (tmp_path / "out" / "source").mkdir(parents=True)
    with pytest.raises(UsageError, match="not written by edgekit.convert"):
        memory.refuse_earlier(tmp_path / "out", force=True)


def test_a_writer_that_fails_leaves_no_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(memory.WRITERS, "onnx", "edgekit.sources.memory_writers:write_onnx")
    with pytest.raises(AttributeError):  # not a ModelProto: the writer fails half-way
        memory.write_source(object(), "onnx", tmp_path / "out", "x")
    assert list((tmp_path / "out").iterdir()) == []


def test_every_writer_resolves() -> None:
    from edgekit.core.registry import resolve

    kinds = {kind for _, _, kind in memory._KINDS}
    assert kinds == set(memory.WRITERS)
    assert all(callable(resolve(memory.WRITERS, k, "writer")) for k in kinds)
