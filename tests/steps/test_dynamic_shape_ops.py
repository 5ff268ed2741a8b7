"""The dynamic-shape detector can fail: it finds SHAPE/STRIDED_SLICE/PACK in a real .tflite that has them.

Without this, the suite's "no dynamic-shape ops" assertions could not fail: the detector used to
swallow every error and return [], and no test fed it a model that holds such ops.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from edgekit.steps.tflite_convert import dynamic_shape_ops


@pytest.mark.slow
def test_finds_the_ops_a_dynamic_batch_leaves_and_not_a_static_slice(tmp_path: Path) -> None:
    tf = pytest.importorskip("tensorflow")
    pytest.importorskip("ai_edge_litert")

    @tf.function(input_signature=[tf.TensorSpec([None, 4, 4, 3], tf.float32)])
    def flatten(x: Any) -> Any:  # a Flatten with the batch left dynamic: SHAPE -> STRIDED_SLICE -> PACK
        return tf.reshape(x, [tf.shape(x)[0], -1])

    blob = tf.lite.TFLiteConverter.from_concrete_functions([flatten.get_concrete_function()], flatten).convert()
    path = tmp_path / "dynamic.tflite"
    path.write_bytes(blob)
    assert {"SHAPE", "STRIDED_SLICE", "PACK"} & set(dynamic_shape_ops(path))

    @tf.function(input_signature=[tf.TensorSpec([1, 7, 84], tf.float32)])
    def split(x: Any) -> Any:  # YOLOv8's boxes and scores split apart: static STRIDED_SLICEs, nothing dynamic
        return tf.concat([x[:, :4] * 2.0, tf.sigmoid(x[:, 4:])], 1)

    blob = tf.lite.TFLiteConverter.from_concrete_functions([split.get_concrete_function()], split).convert()
    path.write_bytes(blob)
    assert dynamic_shape_ops(path) == []


def test_an_unreadable_file_is_tolerated(tmp_path: Path) -> None:
    pytest.importorskip("ai_edge_litert")
    garbage = tmp_path / "garbage.tflite"
    garbage.write_bytes(b"not a flatbuffer")
    assert dynamic_shape_ops(garbage) == []
    assert dynamic_shape_ops(tmp_path / "missing.tflite") == []


def test_a_bug_is_not_swallowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import edgekit.runtimes.litert_io as litert

    class Broken:  # an interpreter whose op list cannot be read: a changed API, not a bad file
        def __init__(self, **_k: Any) -> None:
            pass

    monkeypatch.setattr(litert, "interpreter_class", lambda: Broken)
    with pytest.raises(AttributeError):
        dynamic_shape_ops(tmp_path / "m.tflite")
