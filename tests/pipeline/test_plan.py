"""The planner rejects impossible requests before anything runs (no framework needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgekit.conversion.options import ConvertOptions
from edgekit.conversion.plan import check_outputs, make_plan, route
from edgekit.core.errors import MissingDependency, UsageError
from edgekit.sources.base import Source


def _source(family: str = "torch", layout: str = "NCHW") -> Source:
    return Source(path=Path("m.pt2"), kind="torch-exported", family=family, layout=layout, input_name="x",
                  input_shape=[-1, 1, 28, 28], input_dtype="float32", predict=lambda x: np.zeros((len(x), 10)))


def _opts(tmp_path: Path, **kw: object) -> ConvertOptions:
    base: dict[str, object] = {"targets": ["onnx"], "precisions": ["fp32"], "out_dir": tmp_path / "out"}
    base.update(kw)
    return ConvertOptions(**base)  # type: ignore[arg-type]


def test_routes() -> None:
    assert route("torch", "savedmodel") == ["torch_to_onnx", "onnx_to_savedmodel"]
    assert route("keras", "savedmodel") == ["keras_to_savedmodel"]
    assert route("onnx", "onnx") == []


def test_plan_chains_share_prefixes(tmp_path: Path) -> None:
    plan = make_plan(_source(), _opts(tmp_path, targets=["onnx", "tflite"], precisions=["fp32", "int8"], calib="mnist"))
    labels = [c.label for c in plan.chains]
    assert labels == ["onnx fp32", "onnx int8", "tflite fp32", "tflite int8"]
    assert plan.outputs == ["m.fp32.onnx", "m.int8.onnx", "m.fp32.tflite", "m.int8.tflite"]
    assert [s.name for s in plan.chains[3].steps] == ["torch_to_onnx", "onnx_to_savedmodel", "tflite_convert"]
    assert plan.chains[0].steps[0].key() == plan.chains[3].steps[0].key()


def test_edgetpu_is_int8_with_uint8_io(tmp_path: Path) -> None:
    plan = make_plan(_source(), _opts(tmp_path, targets=["edgetpu"], calib="mnist"))
    (chain,) = plan.chains
    assert chain.precision == "int8" and chain.io_dtype == "uint8"
    assert [s.name for s in chain.steps][-1] == "tflite_convert"
    assert [s.name for s in chain.post_steps] == ["edgetpu_compile"] and chain.format == "tflite"
    assert plan.outputs == ["m.int8-uint8io.tflite", "m_edgetpu.tflite", "m_edgetpu.log"]


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"targets": ["tflit"]}, "did you mean 'tflite'"),
        ({"precisions": ["int4"]}, "Choose one of"),
        ({"precisions": ["int8"]}, "calibration data"),
        ({"targets": ["edgetpu"]}, "calibration data"),
        ({"io_dtype": "int16", "precisions": ["int8"], "calib": "mnist"}, "io-dtype"),
    ],
)
def test_plan_rejects(tmp_path: Path, kw: dict[str, object], match: str) -> None:
    with pytest.raises(UsageError) as exc:
        make_plan(_source(), _opts(tmp_path, **kw))
    assert match in f"{exc.value.message} {exc.value.hint}"


def test_missing_dependency_is_reported_before_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import edgekit.conversion.plan as plan

    monkeypatch.setattr(plan, "available", lambda m: m != "onnx2tf")
    with pytest.raises(MissingDependency) as exc:
        make_plan(_source(), _opts(tmp_path, targets=["tflite"]))
    assert "onnx2tf" in exc.value.message and "edgekit[convert]" in (exc.value.hint or "")


def test_existing_outputs_need_force(tmp_path: Path) -> None:
    plan = make_plan(_source(), _opts(tmp_path))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "m.fp32.onnx").write_bytes(b"earlier")
    with pytest.raises(UsageError, match="--force"):
        check_outputs(plan, tmp_path / "out")
    plan.options.force = True
    check_outputs(plan, tmp_path / "out")


@pytest.mark.parametrize("value", ["abc", "9", "1.5", "99"])
def test_option_values_are_checked_when_the_plan_is_made(tmp_path: Path, value: str) -> None:
    with pytest.raises(UsageError, match="--edgetpu-min-runtime") as exc:
        make_plan(_source(), _opts(tmp_path, targets=["edgetpu"], calib="mnist", edgetpu_min_runtime=value))
    assert "integer from 10 to 16" in (exc.value.hint or "")


def test_bad_option_value_exits_2_before_the_model_is_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    import edgekit.sources.detect as detect
    from edgekit.cli import main

    def never(*_a: object) -> None:
        raise AssertionError("the source was read before the options were checked")

    monkeypatch.setattr(detect, "detect", never)
    rc = main(["convert", "models/mnist_cnn.pt2", "--target", "edgetpu", "--calib", "mnist",
               "--edgetpu-min-runtime", "abc", "--out", str(tmp_path / "o")])
    assert rc == 2 and "--edgetpu-min-runtime 'abc'" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_precision_aliases_and_table_order(tmp_path: Path) -> None:
    plan = make_plan(_source(), _opts(tmp_path, precisions=["float16", "fp16", "float32"]))
    assert [c.precision for c in plan.chains] == ["fp16", "fp32"]


def test_every_registered_target_is_a_consistent_spec() -> None:
    from edgekit.core.formats import FORMATS
    from edgekit.core.precisions import PRECISIONS
    from edgekit.steps import get_step
    from edgekit.targets import get_target, target_names

    for name in target_names():
        spec = get_target(name)
        assert spec.name == name and spec.format in FORMATS and set(spec.precisions) <= set(PRECISIONS)
        assert get_step(spec.steps[-1]).produces == spec.format  # its last own step writes its artifact's format
        for post in spec.post_steps:
            assert get_step(post).consumes == spec.format and get_step(post).produces in FORMATS
