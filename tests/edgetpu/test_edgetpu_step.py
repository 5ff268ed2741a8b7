"""The edgetpu_compile step: pre-flight, then compile where a compiler is, else "ready, not compiled"."""

from __future__ import annotations

from pathlib import Path

import pytest
from edgetpu_standin import FIX, write_standin

from edgekit.conversion.options import ConvertOptions
from edgekit.core.errors import ConversionError
from edgekit.steps import get_step
from edgekit.steps.base import Intermediate, StepContext


def make_ctx(tmp_path: Path, **opts) -> StepContext:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    options = ConvertOptions(targets=["edgetpu"], precisions=["int8"], out_dir=tmp_path / "out", **opts)
    logs: list[str] = []
    ctx = StepContext(
        work=work,
        stem="mnist",
        source=None,
        options=options,  # type: ignore[arg-type]
        calibration=lambda: None,
        log=logs.append,
    )  # type: ignore[arg-type,return-value]
    ctx.logs = logs  # type: ignore[attr-defined]
    return ctx


def tflite_in(path: Path, precision: str = "int8") -> Intermediate:
    return Intermediate(kind="tflite", path=path, layout="NHWC", precision=precision, io_dtype="int8")


def test_step_is_registered():
    cls = get_step("edgetpu_compile")
    assert (cls.name, cls.consumes, cls.produces) == ("edgetpu_compile", "tflite", "edgetpu")


def test_not_compiled_is_a_result_with_instructions(tf_models, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no edgetpu_compiler anywhere
    ctx = make_ctx(tmp_path)
    out = get_step("edgetpu_compile")().run(tflite_in(tf_models["int8io"]), ctx)
    assert out.kind == "edgetpu" and out.path is None and out.precision == "int8" and out.layout == "NHWC"
    e = out.report.to_dict()  # the manifest's extra.edgetpu, as it is written
    assert e["compiled"] is False and e["compiler"] is None and e["disagreements"] == []
    assert e["predicted"] is True and e["ops_on_tpu_fraction"] == 1.0 and e["first_unsupported"] is None
    assert "docker build --target edgetpu" in e["how_to_finish"]
    assert out.io_dtype == "int8" and out.report_key == "edgetpu"
    assert any("pre-flight" in line for line in ctx.logs)


def test_compiled_with_a_compiler_named_by_option(tf_models, tmp_path, monkeypatch):
    exe = write_standin(tmp_path / "edgetpu_compiler")
    monkeypatch.setenv("FAKE_STDOUT", str(FIX / "reconstructed_v16_mnist_all_mapped_stdout.txt"))
    monkeypatch.setenv("FAKE_LOG", str(FIX / "nrf20_mnist7_edgetpu.log"))
    monkeypatch.setenv("FAKE_ARGV", str(tmp_path / "argv.txt"))
    ctx = make_ctx(tmp_path, edgetpu_compiler=str(exe), edgetpu_min_runtime="14", edgetpu_timeout=60.0)
    out = get_step("edgetpu_compile")().run(tflite_in(tf_models["int8io"]), ctx)
    assert out.path == ctx.work / "mnist_edgetpu.tflite" and out.path.is_file()
    e = out.report.to_dict()  # the manifest's extra.edgetpu, as it is written
    assert e["compiled"] is True and e["how_to_finish"] is None
    assert e["compiler"]["ops_on_tpu"] == 8 and "Compilation succeeded!" in e["compiler"]["stdout"]
    assert e["compiler"]["log_path"] == "mnist_edgetpu.log" and (ctx.work / "mnist_edgetpu.log").is_file()
    assert e["disagreements"] == []  # the same CNN as the real nrf20 log: prediction and verdict agree
    assert out.side_files == {"compiler_log": ctx.work / "mnist_edgetpu.log"}  # published beside the model
    argv = (tmp_path / "argv.txt").read_text().splitlines()
    assert argv[argv.index("-m") + 1] == "14"


def test_a_failing_compiler_fails_the_step(tf_models, tmp_path, monkeypatch):
    exe = write_standin(tmp_path / "edgetpu_compiler")
    monkeypatch.setenv("FAKE_MODE", "fail")
    monkeypatch.setenv("FAKE_STDOUT", str(FIX / "coral_edgetpu_issue49_internal_error.txt"))
    ctx = make_ctx(tmp_path, edgetpu_compiler=str(exe))
    with pytest.raises(ConversionError, match="Internal compiler error"):
        get_step("edgetpu_compile")().run(tflite_in(tf_models["int8io"]), ctx)


def test_float_model_is_refused(tf_models, tmp_path):
    with pytest.raises(ConversionError, match="full-integer int8"):
        get_step("edgetpu_compile")().run(tflite_in(tf_models["int8io"], precision="fp32"), make_ctx(tmp_path))
