"""Shapes carried through an ncnn graph from its Input, and the MACs of its convolutions and inner products."""

from __future__ import annotations

from edgekit.ncnn.param import Layer, parse_text, rename
from edgekit.ncnn.shapes import layer_macs, out_shapes, propagate
from tests.ncnn.tiny_ncnn import PARAM


def test_shapes_and_macs_of_the_small_cnn() -> None:
    p = parse_text(rename(PARAM, {}, {"in0": [1, 1, 28, 28]}))
    shapes = propagate(p)
    assert shapes["1"] == [1, 4, 26, 26] and shapes["3"] == [1, 4, 13, 13] and shapes["4"] == [1, 676]
    assert shapes["out0"] == [1, 10]
    conv = p.layers[1]
    assert layer_macs(conv, [shapes["in0"]], [shapes["1"]]) == 36 * 26 * 26


def test_padding_stride_groups_same_and_global() -> None:
    dw = Layer("ConvolutionDepthWise", "dw", ["x"], ["y"], {0: 8, 1: 3, 3: 2, 4: 1, 5: 1, 6: 72, 7: 8})
    assert out_shapes(dw, [[1, 8, 32, 32]]) == [[1, 8, 16, 16]]
    assert layer_macs(dw, [[1, 8, 32, 32]], [[1, 8, 16, 16]]) == 72 * 256
    same = Layer("Convolution", "c", ["x"], ["y"], {0: 4, 1: 3, 3: 2, 4: -233, 6: 36})
    assert out_shapes(same, [[1, 1, 7, 7]]) == [[1, 4, 4, 4]]
    gap = Layer("Pooling", "g", ["x"], ["y"], {0: 1, 4: 1})
    assert out_shapes(gap, [[1, 8, 7, 7]]) == [[1, 8]]
    cat = Layer("Concat", "cat", ["a", "b"], ["y"], {0: 0})
    assert out_shapes(cat, [[1, 3, 4, 4], [1, 5, 4, 4]]) == [[1, 8, 4, 4]]
    reshape = Layer("Reshape", "r", ["x"], ["y"], {0: -1, 1: 4})
    assert out_shapes(reshape, [[1, 2, 4, 4]]) == [[1, 4, 8]]


def test_unknown_layers_leave_shapes_unknown_and_macs_uncounted() -> None:
    odd = Layer("Permute", "p", ["x"], ["y"], {0: 3})
    assert out_shapes(odd, [[1, 3, 4, 4]]) == [None]
    conv = Layer("Convolution", "c", ["y"], ["z"], {0: 4, 1: 3, 6: 108})
    assert out_shapes(conv, [None]) == [None] and layer_macs(conv, [None], [None]) is None
