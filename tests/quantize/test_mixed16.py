"""Mixed int8/int16 (`mixed16`): where int8 activations lose the most, the fewest layer groups get 16-bit
activations (weights stay int8), found by the same ranking and bisection as float layers; recorded, shown, and run
by onnxruntime."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from onnx_models import save_checked  # noqa: E402

from edgekit.quantize.onnx.recipes import QuantData  # noqa: E402
from edgekit.quantize.onnx.search import quantize_onnx  # noqa: E402
from edgekit.quantize.records import RecipeChoice, RecipeTrial  # noqa: E402


def wide_activation(path: Path, spread: float = 300.0, seed: int = 0) -> Path:
    """1x1 conv 8->8 -> ReLU -> depthwise 3x3 -> ReLU -> 1x1 conv 8->32 -> ReLU -> GAP -> Gemm 32->10, where two
    channels of the first conv are SPREAD times wider and the depthwise weights reading them SPREAD times smaller:
    the same function, and an activation no int8 scale holds (the depthwise weights are per channel, so int8 weights
    lose nothing). The wide tensor's layers hold about a third of the MACs."""
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(seed)
    w1 = rng.standard_normal((8, 8, 1, 1)).astype(np.float32) * 0.4
    b1 = rng.standard_normal(8).astype(np.float32) * 0.1
    w2 = rng.standard_normal((8, 1, 3, 3)).astype(np.float32) * 0.5
    w3 = rng.standard_normal((32, 8, 1, 1)).astype(np.float32) * 0.4
    wf = rng.standard_normal((10, 32)).astype(np.float32) * 0.5
    for k in (0, 5):
        w1[k] *= spread
        b1[k] *= spread
        w2[k] /= spread
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["h1"], name="pw1"),
        helper.make_node("Relu", ["h1"], ["a1"], name="act1"),
        helper.make_node("Conv", ["a1", "w2", "b2"], ["h2"], name="dw2", pads=[1, 1, 1, 1], group=8),
        helper.make_node("Relu", ["h2"], ["a2"], name="act2"),
        helper.make_node("Conv", ["a2", "w3", "b3"], ["h3"], name="pw3"),
        helper.make_node("Relu", ["h3"], ["a3"], name="act3"),
        helper.make_node("GlobalAveragePool", ["a3"], ["p"], name="gap"),
        helper.make_node("Flatten", ["p"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], name="fc", transB=1),
    ]
    zeros = {"b2": np.zeros(8, np.float32), "b3": np.zeros(32, np.float32), "bf": np.zeros(10, np.float32)}
    inits = [numpy_helper.from_array(v, n) for n, v in {"w1": w1, "b1": b1, "w2": w2, "w3": w3, "wf": wf,
                                                           **zeros}.items()]
    return save_checked(path, "wide", nodes, inits, [1, 8, 16, 16], [1, 10])


@pytest.fixture(scope="module")
def wide_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return wide_activation(tmp_path_factory.mktemp("m16") / "wide.onnx")


@pytest.fixture(scope="module")
def wide_samples() -> np.ndarray:
    return np.random.default_rng(2).standard_normal((320, 8, 16, 16)).astype(np.float32)


def _search(model: Path, x: np.ndarray, tmp_path: Path, requested: str) -> tuple[RecipeChoice, Path, list[str]]:
    work, log = tmp_path / requested, []
    work.mkdir()
    dst = tmp_path / f"{requested}.int8.onnx"
    return quantize_onnx(model, dst, QuantData("x", x, 1, work), requested, log.append), dst, log


def test_mixed16_meets_what_plain_misses_with_16_bit_activations_on_the_wide_tensor_only(
        wide_model: Path, wide_samples: np.ndarray, tmp_path: Path) -> None:
    import onnx

    from edgekit.quantize.onnx.graph import run_batches, session

    choice, dst, log = _search(wide_model, wide_samples, tmp_path, "mixed16")
    assert choice.trials[0].recipe == "plain" and not choice.trials[0].passed  # int8 misses
    assert choice.met and choice.chosen == "mixed16[plain]" and not choice.float_nodes
    assert "dw2" in choice.int16_nodes and "pw3" not in choice.int16_nodes and "fc" not in choice.int16_nodes
    assert 0 < choice.macs_int16_fraction < 0.5 and choice.macs_float_fraction == 0.0
    assert choice.config["int16_nodes"] == list(choice.int16_nodes)
    assert any("16-bit activations" in line for line in log)
    model = onnx.load(str(dst))  # what was written: int16 on the wide tensor, int8 elsewhere, int8 weights
    zp = {i.name: i.data_type for i in model.graph.initializer if i.name.endswith("zero_point")}
    a1 = [t for n, t in zp.items() if n.startswith("a1")]
    assert a1 and set(a1) == {onnx.TensorProto.INT16}
    assert zp.get("a3_zero_point") == onnx.TensorProto.INT8 and onnx.TensorProto.FLOAT not in zp.values()
    assert all(t == onnx.TensorProto.INT8 for n, t in zp.items() if n.startswith("w"))
    assert not any(n.op_type in ("Conv", "Gemm") and n.name in choice.float_nodes for n in model.graph.node)
    y = run_batches(session(str(dst)), wide_samples[:64])[0]  # onnxruntime's CPU provider runs it
    y_ref = run_batches(session(str(wide_model)), wide_samples[:64])[0]
    assert (y.argmax(1) == y_ref.argmax(1)).mean() >= 0.97
    assert "16-bit" in choice.cost_words() and "% of MACs" in choice.cost_words()


def test_auto_tries_mixed16_before_float_layers(wide_model: Path, wide_samples: np.ndarray, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """auto: the float-free recipes, then mixed16 on the best of them, float layers only where that misses. (NNCF's
    recipe meets this model on its own, so auto's float-free list is cut to two that miss.)"""
    import edgekit.quantize.onnx.search as search

    monkeypatch.setattr(search, "AUTO_ORDER", ("plain", "uint8"))
    choice, _, _ = _search(wide_model, wide_samples, tmp_path, "auto")
    names = [t.recipe for t in choice.trials]
    assert names[:2] == ["plain", "uint8"] and not any(t.passed for t in choice.trials[:2])
    assert choice.met and choice.chosen == names[-1] and choice.chosen.startswith("mixed16[")
    assert not any(n.startswith("mixed[") for n in names)  # no float layer was needed, none was tried
    assert choice.int16_nodes and not choice.float_nodes and choice.cost and choice.cost["latency_ms"] > 0


def test_the_record_round_trips_and_an_older_manifest_reads() -> None:
    rec = RecipeChoice(requested="auto", chosen="mixed16[plain]", config={}, met=True, judged_on="x",
                       int16_nodes=("dw2", "act1"), macs_int16_fraction=0.18)
    back = RecipeChoice.from_dict(rec.to_dict())
    assert back == rec and back.cost_words() == "mixed16[plain] (2 ops 16-bit, 18.0% of MACs, over the 10% budget)"
    assert "16-bit activations on 18% of its MACs" in back.why_words()
    old = {k: v for k, v in rec.to_dict().items() if k not in ("int16_nodes", "macs_int16_fraction")}
    assert RecipeChoice.from_dict(old).int16_nodes == ()  # a manifest written before mixed16
    trial = {"recipe": "plain", "passed": True, "cosine": 1.0, "top1_agreement": 1.0, "float_nodes": 0,
             "macs_float_fraction": 0.0, "seconds": 0.1, "from_a_newer_writer": 1}
    assert RecipeTrial.from_dict(trial).recipe == "plain"  # a key this reader does not know is ignored


def test_auto_on_tflite_says_it_cannot_mix() -> None:
    from types import SimpleNamespace

    from edgekit.quantize.tflite.w8a16 import NO_MIXED16, auto_notes

    job = SimpleNamespace(notes=[])
    auto_notes(job, "plain")  # type: ignore[arg-type]
    assert job.notes == []
    auto_notes(job, "auto")  # type: ignore[arg-type]
    assert job.notes == [NO_MIXED16] and "one activation type for the whole model" in NO_MIXED16


def test_a_trial_without_a_kind_agreement_writes_no_agreement_key() -> None:
    """A classifier's (or a detector's) trial is written as before `agreement` existed, so a reader that predates it
    (`RecipeTrial(**d)`, which refuses unknown keys) still reads it; a sequence's or a map's keeps its figure."""
    import dataclasses

    top1 = RecipeTrial("plain", True, 0.99, 0.98, 0, 0.0, 0.1)
    steps = dataclasses.replace(top1, top1_agreement=None, agreement=0.96)
    rec = RecipeChoice(requested="auto", chosen="plain", config={}, met=True, judged_on="x", trials=(top1, steps))
    d = rec.to_dict()
    assert "agreement" not in d["trials"][0] and d["trials"][1]["agreement"] == 0.96
    older = {f.name for f in dataclasses.fields(RecipeTrial)} - {"agreement"}
    assert set(d["trials"][0]) <= older
    assert RecipeChoice.from_dict(d) == rec
