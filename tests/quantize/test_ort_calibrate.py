"""Bounded-memory onnxruntime calibration (edgekit.quantize.onnx.calibrate) and the streamed float-vs-int8 layer
comparison (edgekit.quantize.onnx.layers): the figures of the whole-array versions, memory that does not grow with
the number of samples."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx_models import conv_chain, images

from edgekit.quantize.onnx.calibrate import ChunkedReader, chunked_reader, run_bytes, strided_options
from edgekit.quantize.onnx.ort import Reader


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return conv_chain(tmp_path_factory.mktemp("ortcal") / "chain.onnx", spread=8.0)


def _static(src: Path, dst: Path, reader: object, method: str = "MinMax", extra: dict | None = None) -> None:
    """onnxruntime's quantize_static with edgekit's settings (QDQ, per-channel int8)."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    quantize_static(str(src), str(dst), reader, quant_format=QuantFormat.QDQ, per_channel=True, reduce_range=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    calibrate_method=getattr(CalibrationMethod, method),
                    extra_options={"ActivationSymmetric": False, "WeightSymmetric": True, **(extra or {})})


def _qparams(path: Path) -> dict[str, np.ndarray]:
    import onnx
    from onnx import numpy_helper

    m = onnx.load(str(path))
    return {i.name: numpy_helper.to_array(i) for i in m.graph.initializer
            if i.name.endswith(("_scale", "_zero_point"))}


def _folds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Samples' worth of outputs each calibrator held when it folded them (one entry per collect_data)."""
    from onnxruntime.quantization import calibrate

    held: list[int] = []
    for cls in (calibrate.MinMaxCalibrater, calibrate.HistogramCalibrater):
        clear = cls.clear_collected_data

        def spy(self: object, _clear: object = clear) -> None:
            held.append(len(self.intermediate_outputs))  # type: ignore[attr-defined]
            _clear(self)  # type: ignore[operator]

        monkeypatch.setattr(cls, "clear_collected_data", spy)
    return held


def test_minmax_scales_equal_onnxruntimes_own_calibrator(chain: Path, tmp_path: Path) -> None:
    x = images(40)
    _static(chain, tmp_path / "stock.onnx", Reader("x", x, 1))
    reader = ChunkedReader("x", x, 1, chunk=6)  # 7 chunks, the last one short
    assert len(reader) == 7
    _static(chain, tmp_path / "chunked.onnx", reader, extra=strided_options())
    stock, chunked = _qparams(tmp_path / "stock.onnx"), _qparams(tmp_path / "chunked.onnx")
    assert len(stock) > 10 and stock.keys() == chunked.keys()
    for name, value in stock.items():
        np.testing.assert_array_equal(chunked[name], value, err_msg=name)


@pytest.mark.parametrize("method", ["MinMax", "Percentile"])
def test_held_outputs_do_not_grow_with_the_samples(chain: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   method: str) -> None:
    held = _folds(monkeypatch)
    for n in (8, 32):
        held.clear()
        _static(chain, tmp_path / f"{n}.onnx", ChunkedReader("x", images(n), 1, chunk=4), method, strided_options())
        assert held and max(held) == 4, (n, held)  # four samples' outputs at most, whatever the number of samples
        assert len(held) >= n // 4
    held.clear()  # onnxruntime's own path holds them all: what the chunks avoid
    _static(chain, tmp_path / "stock.onnx", Reader("x", images(32), 1), method)
    assert max(held) == 32


def test_percentile_stays_near_the_one_pass_histogram(chain: Path, tmp_path: Path) -> None:
    x = images(48)
    _static(chain, tmp_path / "stock.onnx", Reader("x", x, 1), "Percentile")
    _static(chain, tmp_path / "chunked.onnx", ChunkedReader("x", x, 1, chunk=8), "Percentile", strided_options())
    stock, chunked = _qparams(tmp_path / "stock.onnx"), _qparams(tmp_path / "chunked.onnx")
    for name, value in stock.items():
        if name.endswith("_scale") and value.ndim == 0:  # activations (weights are per-channel and not calibrated)
            assert abs(float(chunked[name]) / float(value) - 1) < 0.02, name


def test_chunks_are_sized_by_the_models_intermediate_bytes(chain: Path) -> None:
    per = run_bytes(chain)
    # conv 8x16x16, act, depthwise 8x16x16, act, conv 16x16x16, act, pooled 16, flat 16, scores 10 (float32)
    assert per == 4 * (4 * 8 * 256 + 2 * 16 * 256 + 16 + 16 + 10)
    assert chunked_reader(chain, "x", images(40), 1, chunk_bytes=5 * per).chunk == 5
    assert chunked_reader(chain, "x", images(40), 1, chunk_bytes=1).chunk == 1
    r = ChunkedReader("x", images(10), 2, chunk=5)  # rounded down to whole batches (of a static batch of 2)
    assert r.chunk == 4 and len(r) == 3
    r.set_range(2, 3)
    assert [len(b["x"]) for b in iter(r.get_next, None)] == [2]


def test_edgekit_quantize_calibrates_in_chunks(chain: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from edgekit.quantize.onnx import calibrate as ort_calibrate
    from edgekit.quantize.onnx.ort import quantize
    from edgekit.quantize.onnx.recipes import OnnxRecipeConfig, QuantData

    held = _folds(monkeypatch)
    monkeypatch.setattr(ort_calibrate, "CHUNK_BYTES", 3 * run_bytes(chain))
    quantize(chain, tmp_path / "q.onnx", QuantData("x", images(12), 1, tmp_path), OnnxRecipeConfig())
    assert held == [3, 3, 3, 3]
    assert (tmp_path / "q.onnx").is_file()


def test_streamed_layer_figures_equal_the_whole_arrays(chain: Path, tmp_path: Path) -> None:
    import onnx

    from edgekit.quantize.diagnose import channel_spread, cosine, outlier_ratio, sqnr_db
    from edgekit.quantize.onnx.graph import run_batches, session, with_outputs
    from edgekit.quantize.onnx.layers import compare_layers

    x = images(24)
    _static(chain, tmp_path / "q.onnx", Reader("x", x, 1))
    fm, qm = onnx.load(str(chain)), onnx.load(str(tmp_path / "q.onnx"))
    qnodes = {n.name: n for n in qm.graph.node}
    layers = [(n, qnodes[n.name]) for n in fm.graph.node if n.op_type in ("Conv", "Gemm")]
    pairs = [((f.input[0], f.output[0]), (q.input[0], q.output[0])) for f, q in layers]
    stats = compare_layers(fm, qm, pairs, x, chunk_bytes=1)  # one sample a chunk: 24 folds
    for ((fi, fo), (qi, qo)), s in zip(pairs, stats, strict=True):
        f_in, f_out = run_batches(session(with_outputs(fm, [fi, fo]), optimize=False), x, [fi, fo], 8)
        q_in, q_out = run_batches(session(with_outputs(qm, [qi, qo]), optimize=False), x, [qi, qo], 8)
        assert s.out.sqnr_db() == pytest.approx(sqnr_db(f_out, q_out), rel=1e-9)
        assert s.out.cosine() == pytest.approx(cosine(f_out, q_out), rel=1e-9)
        assert s.inp.sqnr_db() == pytest.approx(sqnr_db(f_in, q_in), rel=1e-9)
        assert s.act.spread() == pytest.approx(channel_spread(f_in, 1), rel=1e-12)
        expected = outlier_ratio(f_out)
        assert (s.top.ratio() is None) == (expected is None)
        if expected is not None:
            assert s.top.ratio() == pytest.approx(expected, rel=1e-12)
            assert s.top.kept.size <= s.top.keep  # the top 0.1% only, not the tensor


def test_layernorm_scales_are_one_note_not_a_warning_per_node(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    """onnxruntime asks a LayerNormalization's 1-D scale for per-channel axis 1 and warns on the root logger, per node
    and per quantization; edgekit's quantize says it once, as a note, and the scale is still quantized per tensor."""
    import logging

    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from edgekit.quantize.onnx.recipes import Plain, QuantData

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), "w")]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h0"], name="mm")]
    for k in range(2):
        inits += [numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), f"g{k}"),
                  numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), f"b{k}")]
        nodes.append(helper.make_node("LayerNormalization", [f"h{k}", f"g{k}", f"b{k}"], [f"h{k + 1}"], axis=-1,
                                      name=f"ln{k}"))
    graph = helper.make_graph(nodes, "ln", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])],
                              [helper.make_tensor_value_info("h2", TensorProto.FLOAT, [1, 4, 8])], inits)
    src = tmp_path / "ln.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(src))
    data = QuantData(name="x", samples=rng.standard_normal((8, 4, 8)).astype(np.float32), batch=1, work=tmp_path)
    with caplog.at_level(logging.WARNING):
        Plain().build(src, tmp_path / "ln.int8.onnx", data)
    assert not [r for r in caplog.records if "out-of-range" in r.getMessage()]
    assert data.notes == ["2 normalization scale(s) quantized per tensor: onnxruntime's per-channel axis 1 does not "
                          "exist on a 1-D LayerNormalization scale"]
    scales = {i.name: i for i in onnx.load(str(tmp_path / "ln.int8.onnx")).graph.initializer}
    assert any(n.startswith("g0") and n.endswith("_scale") for n in scales)  # quantized all the same
