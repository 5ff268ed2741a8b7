"""Coral's per-op limitations and general requirements, each on a small flatbuffer graph built for it."""

from __future__ import annotations

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as fb
from tflite_builder import Graph, conv_chain

from edgekit.edgetpu import preflight
from edgekit.edgetpu.rules import ACTIVATION_FIXES, REQUIREMENTS, RULES, STATUS


def single(tmp_path, build) -> dict:
    """Pre-flight a graph with one op under test; return that op's entry."""
    g = Graph()
    inputs, outputs = build(g)
    pf = preflight(g.write(tmp_path / "g.tflite", inputs, outputs))
    return pf.ops[-1] if pf.ops else pf


def test_every_rule_names_its_source_and_statuses_are_the_compilers():
    for rule in RULES.values():
        assert rule.source.startswith("https://coral.ai/docs/edgetpu/models-intro/")
        assert rule.op == rule.op.upper()
    assert all(r.source.startswith("https://") for r in REQUIREMENTS)
    assert all(src.startswith("https://") for _, src in ACTIVATION_FIXES.values())
    assert STATUS["mapped"] == "Mapped to Edge TPU"


def test_strided_slice_with_stride_two(tmp_path):
    def build(g):
        x = g.tensor("x", [1, 8, 8, 4])
        c = [
            g.tensor(n, [4], "int32", data=np.array(v), scale=None)
            for n, v in (("begin", [0, 0, 0, 0]), ("end", [1, 8, 8, 4]), ("strides", [1, 2, 2, 1]))
        ]
        y = g.tensor("y", [1, 4, 4, 4])
        g.op("STRIDED_SLICE", [x, *c], [y])
        return [x], [y]

    e = single(tmp_path, build)
    assert not e.mapped and e.code == "limitation" and "strides [1, 2, 2, 1]" in e.reason


def test_strided_slice_with_unit_strides_maps(tmp_path):
    def build(g):
        x = g.tensor("x", [1, 8, 8, 4])
        c = [
            g.tensor(n, [4], "int32", data=np.array(v), scale=None)
            for n, v in (("begin", [0, 1, 1, 0]), ("end", [1, 7, 7, 4]), ("strides", [1, 1, 1, 1]))
        ]
        y = g.tensor("y", [1, 6, 6, 4])
        g.op("STRIDED_SLICE", [x, *c], [y])
        return [x], [y]

    assert single(tmp_path, build).mapped


@pytest.mark.parametrize(("const", "ok"), [(0, True), (3, False)])
def test_concatenation_constant_must_be_zero_padding(tmp_path, const, ok):
    def build(g):
        x = g.tensor("x", [1, 4, 4, 2])
        pad = g.tensor("pad", [1, 4, 4, 2], data=np.full((1, 4, 4, 2), const))
        y = g.tensor("y", [1, 4, 4, 4])
        g.op("CONCATENATION", [x, pad], [y], axis=3)
        return [x], [y]

    e = single(tmp_path, build)
    assert e.mapped is ok
    if not ok:
        assert "not all zeros" in e.reason


@pytest.mark.parametrize(
    ("axes", "channels", "why"),
    [
        ([1, 2], 6, None),
        ([3], 8, None),
        ([3], 6, "multiple of 4"),
        ([0], 8, "batch"),
    ],
)
def test_mean_axes(tmp_path, axes, channels, why):
    def build(g):
        x = g.tensor("x", [1, 4, 4, channels])
        a = g.tensor("axes", [len(axes)], "int32", data=np.array(axes), scale=None)
        shape = [1 if i in axes else d for i, d in enumerate([1, 4, 4, channels])]
        y = g.tensor("y", shape)
        g.op("MEAN", [x, a], [y], keepDims=True)
        return [x], [y]

    e = single(tmp_path, build)
    assert e.mapped is (why is None)
    if why:
        assert why in e.reason


def test_softmax_2d_and_fully_connected_batch_two(tmp_path):
    def build(g):
        x = g.tensor("x", [2, 16])
        w = g.tensor("w", [10, 16], data=np.ones((10, 16)))
        h = g.tensor("h", [2, 10])
        g.op("FULLY_CONNECTED", [x, w, -1], [h])
        y = g.tensor("y", [2, 10])
        g.op("SOFTMAX", [h], [y], beta=1.0)
        return [x], [y]

    g = Graph()
    pf = preflight(g.write(tmp_path / "g.tflite", *build(g)))
    fc, sm = pf.ops
    assert fc.code == "limitation" and "output must be one-dimensional" in fc.reason
    assert sm.code == "after_partition" and "1-D" in sm.own_reason


def test_rank_more_than_three_non_trivial_dimensions(tmp_path):
    pf = preflight(conv_chain(tmp_path / "b2.tflite", batch=2))
    first = pf.first_unsupported
    assert first.index == 0 and first.code == "rank"
    assert "3 innermost" in first.reason


def test_dilation_must_match(tmp_path):
    def build(g):
        x = g.tensor("x", [1, 9, 9, 2])
        w = g.tensor("w", [4, 3, 3, 2], data=np.ones((4, 3, 3, 2)))
        y = g.tensor("y", [1, 5, 3, 4])
        g.op(
            "CONV_2D",
            [x, w, -1],
            [y],
            padding=fb.Padding.VALID,
            strideW=1,
            strideH=1,
            dilationWFactor=3,
            dilationHFactor=2,
        )
        return [x], [y]

    e = single(tmp_path, build)
    assert e.code == "limitation" and "different dilations" in e.reason


def test_fused_activation_on_pooling(tmp_path):
    def build(g):
        x = g.tensor("x", [1, 4, 4, 2])
        y = g.tensor("y", [1, 2, 2, 2])
        g.op(
            "MAX_POOL_2D",
            [x],
            [y],
            padding=fb.Padding.VALID,
            strideW=2,
            strideH=2,
            filterWidth=2,
            filterHeight=2,
            fusedActivationFunction=fb.ActivationFunctionType.RELU,
        )
        return [x], [y]

    e = single(tmp_path, build)
    assert e.code == "limitation" and "fused RELU" in e.reason


def test_float_and_non_constant_weights(tmp_path):
    def build(g):
        x = g.tensor("x", [1, 4, 4, 2], "float32", scale=None)
        w = g.tensor("w", [4, 1, 1, 2], "float32", data=np.ones((4, 1, 1, 2)), scale=None)
        y = g.tensor("y", [1, 4, 4, 4], "float32", scale=None)
        g.op(
            "CONV_2D",
            [x, w, -1],
            [y],
            padding=fb.Padding.VALID,
            strideW=1,
            strideH=1,
            dilationWFactor=1,
            dilationHFactor=1,
        )
        return [x], [y]

    g = Graph()
    pf = preflight(g.write(tmp_path / "f.tflite", *build(g)))
    assert pf.ops[0].code == "dtype"
    assert [p.kind for p in pf.problems] == ["not_quantized"]

    def build2(g):
        x = g.tensor("x", [1, 4, 4, 2])
        w = g.tensor("w", [4, 1, 1, 2])  # a graph input, not a constant
        y = g.tensor("y", [1, 4, 4, 4])
        g.op(
            "CONV_2D",
            [x, w, -1],
            [y],
            padding=fb.Padding.VALID,
            strideW=1,
            strideH=1,
            dilationWFactor=1,
            dilationHFactor=1,
        )
        return [x, w], [y]

    assert single(tmp_path, build2).code == "nonconst_params"


def test_custom_op_is_never_mapped(tmp_path):
    pf = preflight(conv_chain(tmp_path / "c.tflite", middle="MyCustomOp"))
    assert pf.first_unsupported.op == "MyCustomOp"
    assert pf.first_unsupported.index == 1
    assert [p.kind for p in pf.problems] == ["unsupported_op"]
