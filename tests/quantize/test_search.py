"""The recipe search: auto stops at the first recipe that meets the thresholds; mixed precision meets one plain
misses; the diagnosis names the layer and the pattern; the records round-trip."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgekit.errors import UsageError
from edgekit.quantize.diagnose_onnx import diagnose
from edgekit.quantize.onnx_recipes import Plain, QuantData
from edgekit.quantize.onnx_search import check_name, quantize_onnx
from edgekit.quantize.records import Diagnosis, RecipeChoice
from edgekit.quantize.search import float_sets, judge


def _search(model: Path, samples: np.ndarray, tmp_path: Path, requested: str) -> RecipeChoice:
    work = tmp_path / requested
    work.mkdir()
    return quantize_onnx(model, tmp_path / f"{requested}.int8.onnx", QuantData("x", samples, 1, work), requested,
                         lambda _m: None)


def test_auto_stops_at_equalization_on_the_channel_range_problem(spread_model: Path, samples: np.ndarray,
                                                                 tmp_path: Path) -> None:
    choice = _search(spread_model, samples, tmp_path, "auto")
    assert [t.recipe for t in choice.trials] == ["plain", "equalize"]
    assert not choice.trials[0].passed and choice.trials[1].passed
    assert choice.chosen == "equalize" and choice.met and choice.float_nodes == ()


def test_mixed_precision_meets_what_plain_misses(head_model: Path, samples: np.ndarray, tmp_path: Path) -> None:
    plain = _search(head_model, samples, tmp_path, "plain")
    assert not plain.met and plain.trials[0].failures
    mixed = _search(head_model, samples, tmp_path, "mixed")
    assert mixed.met and mixed.chosen == "mixed[plain]"
    assert "fc" in mixed.float_nodes and "conv1" not in mixed.float_nodes  # the layers at the wide tensor only
    assert 0 < mixed.macs_float_fraction < 0.5
    # what the search judged is what was written
    from edgekit.quantize.onnx_graph import run_batches, session

    y = run_batches(session(str(head_model)), samples)[0]
    q = run_batches(session(str(tmp_path / "mixed.int8.onnx")), samples)[0]
    assert judge(y, q).passed


def test_float_sets_grow_smallest_first_and_stop_at_the_macs_limit() -> None:
    macs = {"a": 10, "b": 10, "c": 60, "d": 20}
    sets = float_sets([("a",), ("a", "b"), ("c",), ("d",)], macs, limit=0.5)
    assert sets == [("a",), ("a", "b")]  # adding c would leave 80% of the MACs in float


def test_diagnosis_names_the_wide_channels_and_the_fix(spread_model: Path, samples: np.ndarray,
                                                       tmp_path: Path) -> None:
    out = tmp_path / "plain.onnx"
    Plain().build(spread_model, out, QuantData("x", samples, 1, tmp_path))
    diag = diagnose(spread_model, out, samples, "calibration")
    by_name = {layer.name: layer for layer in diag.layers}
    assert by_name["dw2"].pattern == "channel ranges differ widely" and "equalize" in by_name["dw2"].fix
    assert by_name["dw2"].act_spread is not None and by_name["dw2"].act_spread > 20
    assert diag.layers_total == 4 and diag.layers[0].added_db >= diag.layers[-1].added_db
    assert "dw2" in [layer.name for layer in diag.layers[:2]]  # among the two that lose most
    assert Diagnosis.from_dict(json.loads(json.dumps(diag.to_dict()))) == diag
    assert any("dw2" in line for line in diag.lines())


def test_choice_round_trips_without_its_staging_path(spread_model: Path, samples: np.ndarray, tmp_path: Path) -> None:
    choice = _search(spread_model, samples, tmp_path, "equalize")
    d = json.loads(json.dumps(choice.to_dict()))
    assert "float_model" not in d and d["config"]["equalize"] is True
    assert RecipeChoice.from_dict(d) == choice  # float_model is not part of equality
    assert choice.cost_words() == "equalize"


def test_unknown_recipe_is_a_usage_error_with_a_suggestion() -> None:
    with pytest.raises(UsageError) as exc:
        check_name("equalise")
    assert "equalize" in (exc.value.hint or "") + exc.value.message
