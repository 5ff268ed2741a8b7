"""ONNX artifacts from a PyTorch source carry no path of the converting machine.

torch.onnx's dynamo exporter records each node's Python stack with absolute file paths; edgekit drops that one
field (edgekit.steps.torch_to_onnx.strip_stack_traces) and keeps the layer names and class hierarchy.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from edgekit.steps.torch_to_onnx import STACK_TRACE_KEY, strip_stack_traces

onnx = pytest.importorskip("onnx")
ROOT = Path(__file__).resolve().parents[2]


def _node(name: str, **meta: str):
    node = onnx.helper.make_node("Relu", ["x"], ["y"], name=name)
    for key, value in meta.items():
        node.metadata_props.add(key=key, value=value)
    return node


def test_stack_traces_go_everywhere_other_metadata_stays() -> None:
    inner = onnx.helper.make_graph([_node("in", namespace="m/inner")], "body", [], [])
    inner.node[0].metadata_props.add(key=STACK_TRACE_KEY, value='File "/home/u/m.py", line 3')
    outer = _node("out", namespace="m/outer")
    outer.metadata_props.add(key=STACK_TRACE_KEY, value='File "/home/u/m.py", line 9')
    outer.attribute.append(onnx.helper.make_attribute("then_branch", inner))
    graph = onnx.helper.make_graph([outer], "g", [], [])
    assert strip_stack_traces(graph) == 2
    for node in (graph.node[0], graph.node[0].attribute[0].g.node[0]):
        assert [p.key for p in node.metadata_props] == ["namespace"]
    assert strip_stack_traces(graph) == 0


@pytest.mark.slow  # reads the suite's shared conversion of the bundled model
def test_bundled_onnx_artifacts_hold_no_machine_path(bundled_conversion) -> None:
    folder = bundled_conversion.manifest_path.parent
    onnx_files = sorted(folder.glob("*.onnx"))
    assert onnx_files
    for path in onnx_files:
        assert str(ROOT).encode() not in path.read_bytes(), path.name
        model = onnx.load(str(path))
        keys = {p.key for n in model.graph.node for p in n.metadata_props}
        assert STACK_TRACE_KEY not in keys, path.name
