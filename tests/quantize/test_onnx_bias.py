"""ONNX bias correction per kernel tap: the shift it removes is what the actual int8 weights (onnxruntime's, read
from the QDQ model) do to each layer's mean output in the float model, with ONNX's pads, auto_pad, strides,
dilations and groups; the channel mean it used before is measurably off at the borders."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from onnx_models import images, save_checked  # noqa: E402

# (name, input, weight shape, attributes): every way ONNX places zero padding, on small maps where borders matter
LAYERS = (
    ("dw5", "x", (3, 1, 5, 5), {"group": 3, "pads": [2, 2, 2, 2]}),  # depthwise 5x5 "same" on 16x16
    ("s2", "a1", (6, 3, 3, 3), {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),  # 16 -> 8, the odd pad after
    ("lo", "a2", (6, 2, 3, 3), {"group": 3, "auto_pad": "SAME_LOWER", "strides": [2, 2]}),  # 8 -> 4, pad before
    ("dil", "a3", (8, 6, 3, 3), {"dilations": [2, 2], "pads": [1, 0, 2, 1]}),  # asymmetric, dilated
)


def _model(path: Path, scale: dict[str, float] | None = None) -> Path:
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(3)
    nodes, inits = [], []
    for k, (name, src, shape, attrs) in enumerate(LAYERS):
        w = rng.standard_normal(shape).astype(np.float32) * 0.4
        inits += [numpy_helper.from_array(w, f"w_{name}"),
                  numpy_helper.from_array(rng.standard_normal(shape[0]).astype(np.float32) * 0.1, f"b_{name}")]
        nodes += [helper.make_node("Conv", [src, f"w_{name}", f"b_{name}"], [f"h{k + 1}"], name=name, **attrs),
                  helper.make_node("Tanh", [f"h{k + 1}"], [f"a{k + 1}"], name=f"tanh{k + 1}")]
    nodes += [helper.make_node("GlobalAveragePool", ["a4"], ["p"], name="gap"),
              helper.make_node("Flatten", ["p"], ["y"], name="flat")]
    return save_checked(path, "taps", nodes, inits, [1, 3, 16, 16], [1, 8])


@pytest.fixture(scope="module")
def tapped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, np.ndarray]:
    from edgekit.quantize.onnx.recipes import Plain, QuantData

    work = tmp_path_factory.mktemp("taps")
    src, x = _model(work / "f.onnx"), images(48) + 0.5  # inputs away from zero: the borders' zeros matter
    Plain().build(src, work / "q.onnx", QuantData("x", x, 1, work))
    return src, work / "q.onnx", x


def test_the_shift_is_what_the_int8_weights_do_to_each_layers_mean_output(tapped: tuple[Path, Path, np.ndarray]
                                                                         ) -> None:
    import onnx
    from onnx import numpy_helper

    from edgekit.quantize.onnx.bias_correct import _dequantized_weight, _shift
    from edgekit.quantize.onnx.graph import Graph, run_batches, session, with_outputs

    src, qpath, x = tapped
    model, qdq = onnx.load(str(src)), onnx.load(str(qpath))
    g, qg = Graph(model), Graph(qdq)
    qnodes = {n.name: n for n in qdq.graph.node}
    ins = ["x", "a1", "a2", "a3"]
    outs = ["h1", "h2", "h3", "h4"]
    seen = dict(zip(ins + outs, run_batches(session(with_outputs(model, ins + outs)), x, ins + outs), strict=True))
    off = {}
    for k, (name, src_name, _, _) in enumerate(LAYERS):
        node = next(n for n in model.graph.node if n.name == name)
        w = g.inits[f"w_{name}"].astype(np.float64)
        wq = _dequantized_weight(qdq, qg, qnodes[name])
        assert wq is not None and not np.allclose(wq, w)  # onnxruntime's int8 grid, read from the QDQ model
        moved = onnx.load(str(src))  # only this layer's weights int8: its output's mean change, on the same input
        init = next(i for i in moved.graph.initializer if i.name == f"w_{name}")
        init.CopyFrom(numpy_helper.from_array(wq.astype(np.float32), init.name))
        y = run_batches(session(with_outputs(moved, [outs[k]])), x, [outs[k]])[0].astype(np.float64)
        actual = (y - seen[outs[k]]).mean(axis=(0, 2, 3))
        total = seen[src_name].astype(np.float64).sum(axis=0)
        predicted = _shift(node, g, wq - w, total, len(x))
        assert predicted is not None
        np.testing.assert_allclose(predicted, actual, rtol=2e-3, atol=1e-4 * np.abs(actual).max())
        groups = int(g.attr(node, "group", 1))  # what the channel means predicted instead
        channel = total.reshape(total.shape[0], -1).mean(axis=1) / len(x)
        per = (wq - w).reshape(w.shape[0], w.shape[1], -1).sum(axis=2)
        cin_g, per_group = w.shape[1], w.shape[0] // groups
        old = np.array([per[o] @ channel[(o // per_group) * cin_g:(o // per_group + 1) * cin_g]
                        for o in range(w.shape[0])])
        off[name] = float(np.abs(old - actual).sum() / np.abs(actual).sum())
    # measured: 22% (5x5 on 16x16), 21%, 37% (3x3 on 8x8, pad before), 186% (dilated, asymmetric pads)
    assert min(off.values()) > 0.1, off


def test_the_bias_recipe_corrects_every_layer_and_lowers_the_mean_error(tapped: tuple[Path, Path, np.ndarray],
                                                                        tmp_path: Path) -> None:
    from edgekit.quantize.onnx.graph import run_batches, session
    from edgekit.quantize.onnx.recipes import ONNX_RECIPES, QuantData

    src, plain, x = tapped
    data = QuantData("x", x, 1, tmp_path)
    ONNX_RECIPES["bias"]().build(src, tmp_path / "b.onnx", data)
    assert any(n.startswith("bias correction: 4 layers") for n in data.notes), data.notes
    held = images(48, seed=7) + 0.5
    y = run_batches(session(str(src)), held)[0]
    err = {k: float(np.abs((run_batches(session(str(p)), held)[0] - y).mean(axis=0)).mean())
           for k, p in (("plain", plain), ("bias", tmp_path / "b.onnx"))}
    assert err["bias"] < 0.35 * err["plain"], err  # measured: 0.0136 -> 0.0030
