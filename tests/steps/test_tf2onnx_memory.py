"""tf2onnx's optimizer copies the whole graph before each pass; edgekit collects the dropped copies.

Why: on Keras ResNet50 the copies that tf2onnx drops sat in reference cycles and took the convert from
2.6 GB to 6.9 GB resident (issue 8's zoo killed it at its cap). The figures come from the zoo; here the
mechanism is checked: inside `collected_optimizer_copies` the optimizer's deepcopy collects first and
still copies, and the module is restored afterwards, also when the conversion raises.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from edgekit.steps import keras_to_onnx

tf2onnx_optimizer = pytest.importorskip("tf2onnx.optimizer")


class _Counter:
    def __init__(self) -> None:
        self.calls = 0

    def collect(self) -> int:
        self.calls += 1
        return 0


def test_optimizer_copies_collect_first_and_module_is_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = _Counter()
    monkeypatch.setattr(keras_to_onnx, "gc", counter)
    monkeypatch.setattr(keras_to_onnx, "COLLECT_AFTER_BYTES", -1)  # as if memory had grown past the threshold
    graph: dict[str, Any] = {"nodes": [[1.0, 2.0]], "name": "g"}
    with keras_to_onnx.collected_optimizer_copies():
        assert tf2onnx_optimizer.copy is not copy
        dup = tf2onnx_optimizer.copy.deepcopy(graph)
        assert counter.calls == 1
    assert dup == graph and dup["nodes"] is not graph["nodes"]  # still a deep copy
    assert tf2onnx_optimizer.copy is copy


def test_no_collection_while_memory_has_not_grown(monkeypatch: pytest.MonkeyPatch) -> None:
    """A collection walks every object: a graph of many small layers paid seconds for little memory."""
    counter = _Counter()
    monkeypatch.setattr(keras_to_onnx, "gc", counter)
    monkeypatch.setattr(keras_to_onnx, "COLLECT_AFTER_BYTES", 2**50)
    with keras_to_onnx.collected_optimizer_copies():
        for _ in range(5):
            tf2onnx_optimizer.copy.deepcopy({"a": [1]})
    assert counter.calls == 1  # only the one on leaving


def test_module_restored_when_the_conversion_raises() -> None:
    with pytest.raises(RuntimeError), keras_to_onnx.collected_optimizer_copies():
        raise RuntimeError("tf2onnx failed")
    assert tf2onnx_optimizer.copy is copy
