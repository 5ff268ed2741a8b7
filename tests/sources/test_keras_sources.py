"""Keras and SavedModel loaders: each source kind, safe loading, refusal of code-running files, bad files.

The models are tiny (8x8x3 input) and built once per module; every loaded Source is checked
against the Keras model it came from, not just for "it loaded".
"""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from edgekit.core.errors import UnsupportedModel, UsageError
from edgekit.core.fsutil import sha256_file
from edgekit.sources.base import LoadOptions

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")

CUSTOM_MODULE = "ek_test_custom_layers"  # written into the module's tmp folder, imported from there
FACTORY_MODULE = "ek_test_keras_factory"


def _tiny(seed: int = 0):
    keras.utils.set_random_seed(seed)
    inp = keras.Input((8, 8, 3), name="pixels")
    x = keras.layers.Conv2D(4, 3, activation="relu", name="conv")(inp)
    x = keras.layers.Flatten(name="flat")(x)
    out = keras.layers.Dense(3, name="scores")(x)
    return keras.Model(inp, out, name="tiny")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every file the tests read, written once: good models, refused models, broken files."""
    d = tmp_path_factory.mktemp("keras_sources")
    paths: dict[str, Path] = {"dir": d}
    model = _tiny()
    model.save(d / "tiny.keras")
    model.save(d / "tiny.h5")
    model.save_weights(d / "tiny.weights.h5")
    model.export(str(d / "tiny_sm"), format="tf_saved_model", verbose=False)
    (d / f"{FACTORY_MODULE}.py").write_text(
        "import keras\n"
        "def build():\n"
        "    inp = keras.Input((8, 8, 3), name='pixels')\n"
        "    x = keras.layers.Conv2D(4, 3, activation='relu', name='conv')(inp)\n"
        "    return keras.Model(inp, keras.layers.Dense(3, name='scores')(keras.layers.Flatten(name='flat')(x)))\n"
        "def not_a_model():\n"
        "    return 42\n"
    )
    # refused: a Lambda layer (Python bytecode in the file)
    inp = keras.Input((4,), name="v")
    lam = keras.Model(inp, keras.layers.Dense(2, name="d")(keras.layers.Lambda(lambda t: t * 2.0, name="twice")(inp)))
    lam.save(d / "lambda.keras")
    lam.save(d / "lambda.h5")
    # refused: a registered custom layer from a user module
    (d / f"{CUSTOM_MODULE}.py").write_text(
        "import keras\n"
        "@keras.saving.register_keras_serializable(package='ektest')\n"
        "class Scale(keras.layers.Layer):\n"
        "    def call(self, x):\n"
        "        return x * 3.0\n"
    )
    sys.path.insert(0, str(d))
    try:
        import importlib

        custom = importlib.import_module(CUSTOM_MODULE)
        inp = keras.Input((4,), name="v")
        keras.Model(inp, keras.layers.Dense(2, name="d")(custom.Scale(name="scale")(inp))).save(d / "custom.keras")
    finally:
        sys.path.remove(str(d))
    with zipfile.ZipFile(d / "custom.keras") as src, zipfile.ZipFile(d / "custom_missing.keras", "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "config.json":
                data = data.replace(CUSTOM_MODULE.encode(), b"ek_no_such_module")
            dst.writestr(item, data)
    # single-input rule, unknown dims
    a, b = keras.Input((4,), name="a"), keras.Input((4,), name="b")
    keras.Model([a, b], keras.layers.Add()([a, b])).save(d / "two_inputs.keras")
    inp = keras.Input((None, None, 3), name="img")
    keras.Model(inp, keras.layers.GlobalAveragePooling2D()(keras.layers.Conv2D(2, 3)(inp))).save(d / "anysize.keras")
    # broken files
    data = (d / "tiny.keras").read_bytes()
    (d / "truncated.keras").write_bytes(data[: len(data) // 2])
    with zipfile.ZipFile(d / "noconfig.keras", "w") as z:
        z.writestr("model.weights.h5", b"\x89HDF\r\n\x1a\n")
    h5 = (d / "tiny.h5").read_bytes()
    (d / "truncated.h5").write_bytes(h5[: len(h5) // 3])
    (d / "garbage.h5").write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(range(256)) * 4)
    # SavedModels: one with two signatures and a static batch of 2; a damaged one
    module = tf.Module()
    module.w = tf.Variable(np.arange(4, dtype=np.float32))
    module.plain = tf.function(lambda x: {"y": x * module.w}, input_signature=[tf.TensorSpec([2, 4], name="x")])
    module.double = tf.function(lambda x: {"y": 2.0 * x * module.w}, input_signature=[tf.TensorSpec([2, 4], name="x")])
    tf.saved_model.save(module, str(d / "two_sigs"), signatures={"serving_default": module.plain,
                                                                  "double": module.double})
    (d / "broken_sm").mkdir()
    (d / "broken_sm" / "saved_model.pb").write_bytes(b"not a protobuf at all" * 10)
    (d / "not_sm").mkdir()
    (d / "not_sm" / "readme.txt").write_text("hello")
    paths.update({p.name: p for p in d.iterdir()})
    return paths


@pytest.fixture(scope="module")
def probe() -> np.ndarray:
    return np.random.default_rng(1).random((5, 8, 8, 3), dtype=np.float32)


def _load(path: Path | None, kind: str, **opts):
    from edgekit.sources.keras import load

    return load(path, LoadOptions(**opts), kind)


def _expected(probe: np.ndarray) -> np.ndarray:
    return np.asarray(_tiny()(probe, training=False))


@pytest.mark.parametrize(("name", "kind"), [("tiny.keras", "keras"), ("tiny.h5", "h5")])
def test_keras_files_load_with_their_io(files, probe, name: str, kind: str) -> None:
    src = _load(files[name], kind)
    assert (src.family, src.kind, src.layout) == ("keras", kind, "NHWC")
    assert (src.input_name, src.input_shape, src.input_dtype) == ("pixels", [-1, 8, 8, 3], "float32")
    assert src.output_names == ["scores"]
    assert src.sha256 == sha256_file(files[name])
    assert isinstance(src.model, keras.Model)
    np.testing.assert_allclose(src.predict(probe), _expected(probe), rtol=0, atol=1e-6)


def test_factory_with_and_without_weights(files, probe, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(files["dir"])
    monkeypatch.setattr(sys, "path", list(sys.path))  # the loader puts the cwd on sys.path; undo that after
    with_weights = _load(files["tiny.weights.h5"], "h5", factory=f"{FACTORY_MODULE}:build")
    assert with_weights.kind == "keras-factory"
    np.testing.assert_allclose(with_weights.predict(probe), _expected(probe), rtol=0, atol=1e-6)
    fresh = _load(None, "keras-factory", factory=f"{FACTORY_MODULE}:build")
    assert fresh.input_shape == [-1, 8, 8, 3] and fresh.sha256 == ""
    assert not np.allclose(fresh.predict(probe), _expected(probe))  # initial weights, not the trained ones
    with pytest.raises(UsageError, match="not a keras.Model"):
        _load(None, "keras-factory", factory=f"{FACTORY_MODULE}:not_a_model")
    with pytest.raises(UsageError, match="do not fit"):
        _load(files["lambda.h5"], "h5", factory=f"{FACTORY_MODULE}:build")


def test_the_reference_runs_one_traced_graph_for_every_chunk(files, probe, monkeypatch: pytest.MonkeyPatch) -> None:
    """Eager Keras calls kept a whole chunk's activations in TensorFlow's allocator (GBs on the zoo's models):
    the reference is one graph, traced at load for a free batch, and chunks of any size reuse it."""
    import edgekit.sources.keras as keras_source

    src = _load(files["tiny.keras"], "keras")
    calls = []
    dense = src.model.get_layer("scores")
    real_call = dense.call
    monkeypatch.setattr(dense, "call", lambda *a, **k: calls.append(1) or real_call(*a, **k))
    monkeypatch.setattr(keras_source, "rows_per_chunk", lambda arrays, cap, budget: 2)  # chunks of 2, 2 and 1
    np.testing.assert_allclose(src.predict(probe), _expected(probe), rtol=0, atol=1e-6)
    assert calls == []  # eagerly, the layer's Python code would run once per chunk; traced, never again


def test_weights_only_h5_needs_a_factory(files) -> None:
    with pytest.raises(UsageError, match="only weights") as exc:
        _load(files["tiny.weights.h5"], "h5")
    assert "--model" in exc.value.hint


@pytest.mark.parametrize("name", ["lambda.keras", "lambda.h5"])
def test_lambda_layers_are_refused_unless_trusted(files, name: str) -> None:
    kind = name.rsplit(".", 1)[1]
    with pytest.raises(UnsupportedModel, match="Lambda layer 'twice'") as exc:
        _load(files[name], kind)
    assert "--trust-model" in exc.value.hint
    src = _load(files[name], kind, trust_model=True)
    x = np.ones((2, 4), dtype=np.float32)
    dense = src.model.get_layer("d")
    w, b = (np.asarray(v) for v in dense.weights)
    np.testing.assert_allclose(src.predict(x), (2.0 * x) @ w + b, rtol=1e-6)  # the lambda really ran


def test_custom_objects_are_refused_unless_trusted(files, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UnsupportedModel, match=f"custom object .* from module '{CUSTOM_MODULE}'") as exc:
        _load(files["custom.keras"], "keras")
    assert "--trust-model" in exc.value.hint
    monkeypatch.chdir(files["dir"])
    monkeypatch.setattr(sys, "path", list(sys.path))
    src = _load(files["custom.keras"], "keras", trust_model=True)
    assert src.model.get_layer("scale").__class__.__module__ == CUSTOM_MODULE
    with pytest.raises(UnsupportedModel, match="cannot be imported"):
        _load(files["custom_missing.keras"], "keras", trust_model=True)


def test_config_scan_names_every_code_path() -> None:
    from edgekit.sources.keras import unsafe_parts

    config = {"class_name": "Functional", "module": "keras", "config": {"layers": [
        {"class_name": "Conv2D", "module": "keras.layers", "config": {"name": "c"}},
        {"class_name": "Lambda", "module": "keras.layers", "config": {"name": "l", "function": {
            "class_name": "__lambda__", "config": {"code": "..."}}}},
        {"class_name": "Mine", "module": "evil.pkg", "registered_name": "evil>Mine", "config": {"name": "m"}},
        {"class_name": "function", "module": "builtins", "config": "relu"},
    ]}}
    reasons, modules = unsafe_parts(config)
    assert any("Lambda layer 'l'" in r for r in reasons)
    assert any("serialized Python lambda" in r for r in reasons)
    assert any("'evil>Mine' from module 'evil.pkg'" in r for r in reasons)
    assert modules == ["evil.pkg"]
    assert unsafe_parts(config["config"]["layers"][0]) == ([], [])


@pytest.mark.parametrize(("name", "kind", "text"), [
    ("truncated.keras", "keras", "truncated, corrupt"),
    ("noconfig.keras", "keras", "no config.json"),
    ("truncated.h5", "h5", "truncated, corrupt"),
    ("garbage.h5", "h5", "truncated, corrupt"),
])
def test_broken_files_are_unsupported_not_tracebacks(files, name: str, kind: str, text: str) -> None:
    with pytest.raises(UnsupportedModel, match=text):
        _load(files[name], kind)


def test_multi_input_models_are_refused(files) -> None:
    with pytest.raises(UnsupportedModel, match="takes 2 inputs"):
        _load(files["two_inputs.keras"], "keras")


def test_unknown_dims_need_input_shape(files, probe) -> None:
    with pytest.raises(UsageError, match="not fully known") as exc:
        _load(files["anysize.keras"], "keras")
    assert "--input-shape" in exc.value.hint
    src = _load(files["anysize.keras"], "keras", input_shape=[1, 16, 16, 3])
    assert src.input_shape == [1, 16, 16, 3]
    with pytest.raises(UsageError, match="does not fit the model"):
        _load(files["tiny.keras"], "keras", input_shape=[1, 3, 8, 8])


# --- SavedModel ---------------------------------------------------------------------------------
def _load_sm(path: Path, **opts):
    from edgekit.sources.savedmodel import load

    return load(path, LoadOptions(**opts), "savedmodel")


def test_savedmodel_loads_and_predicts_like_keras(files, probe) -> None:
    src = _load_sm(files["tiny_sm"])
    assert (src.family, src.kind, src.layout, src.model) == ("savedmodel", "savedmodel", "NHWC", files["tiny_sm"])
    assert (src.input_name, src.input_shape, src.output_names) == ("pixels", [-1, 8, 8, 3], ["output_0"])
    assert src.signature == "serving_default"
    assert len(src.sha256) == 64
    np.testing.assert_allclose(src.predict(probe), _expected(probe), rtol=0, atol=1e-6)


def test_savedmodel_signature_choice_and_static_batch(files) -> None:
    x = np.random.default_rng(0).random((5, 4), dtype=np.float32)  # 5 rows through a batch-2 signature
    w = np.arange(4, dtype=np.float32)
    plain = _load_sm(files["two_sigs"])
    np.testing.assert_allclose(plain.predict(x), x * w, rtol=1e-6)
    double = _load_sm(files["two_sigs"], signature="double")
    assert double.signature == "double" and double.input_shape == [2, 4]
    np.testing.assert_allclose(double.predict(x), 2 * x * w, rtol=1e-6)
    with pytest.raises(UsageError, match="no signature 'serve'.*double, serving_default") as exc:
        _load_sm(files["two_sigs"], signature="serve")
    assert "--signature" in exc.value.hint


@pytest.mark.parametrize(("name", "text"), [("broken_sm", "could not be loaded"),
                                            ("not_sm", "not a TensorFlow SavedModel")])
def test_broken_savedmodels(files, name: str, text: str) -> None:
    with pytest.raises(UnsupportedModel, match=text):
        _load_sm(files[name])


def test_tree_digest_changes_with_content(files, tmp_path: Path) -> None:
    import shutil

    from edgekit.core.fsutil import sha256_tree

    copy = tmp_path / "copy"
    shutil.copytree(files["tiny_sm"], copy)
    assert sha256_tree(copy) == sha256_tree(files["tiny_sm"])
    (copy / "assets" / "extra.txt").write_text("x")
    assert sha256_tree(copy) != sha256_tree(files["tiny_sm"])


def test_a_savedmodel_source_digest_is_the_one_folder_digest(files) -> None:
    from edgekit.core.fsutil import sha256_tree

    assert _load_sm(files["tiny_sm"]).sha256 == sha256_tree(files["tiny_sm"])  # as profile hashes the folder


def test_manifest_json_of_a_keras_source_is_plain_data(files) -> None:
    src = _load(files["tiny.keras"], "keras")
    assert json.loads(json.dumps(src.describe().to_dict()))["input"]["shape"] == [-1, 8, 8, 3]
