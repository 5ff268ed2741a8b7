"""The zoo's timm rows (issue 41, bench/zoo_timm.py) without timm: which Python builds them, what it is told to do,
what happens when none is named or the one named is no interpreter with timm, and the child's preparation itself
on a stand-in `timm` module (a small BatchNorm CNN), so no test here needs timm.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def bench() -> Iterator[SimpleNamespace]:
    sys.path.insert(0, str(BENCH))
    try:
        yield SimpleNamespace(zoo=importlib.import_module("zoo"), timm=importlib.import_module("zoo_timm"),
                              models=importlib.import_module("zoo_models"))
    finally:
        sys.path.remove(str(BENCH))


def _script(path: Path, body: str, mode: int = 0o755) -> Path:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(mode)
    return path


def test_no_interpreter_named_gives_none_and_the_flag_beats_the_variable(bench: SimpleNamespace,
                                                                          tmp_path: Path) -> None:
    py = _script(tmp_path / "python", "exit 0")
    other = _script(tmp_path / "python-env", "exit 0")
    assert bench.timm.timm_python(None, env={}) is None
    assert bench.timm.timm_python(None, env={"ZOO_TIMM_PYTHON": ""}) is None
    assert bench.timm.timm_python(None, env={"ZOO_TIMM_PYTHON": str(other)}) == other
    assert bench.timm.timm_python(str(py), env={"ZOO_TIMM_PYTHON": str(other)}) == py


@pytest.mark.parametrize("case", ["does not exist", "a folder, not an interpreter", "is not executable"])
def test_a_bad_path_names_itself_its_source_and_the_fix(bench: SimpleNamespace, tmp_path: Path, case: str) -> None:
    path = {"does not exist": tmp_path / "nope" / "python", "a folder, not an interpreter": tmp_path,
            "is not executable": _script(tmp_path / "python", "exit 0", mode=0o644)}[case]
    with pytest.raises(bench.timm.TimmPythonError) as err:
        bench.timm.timm_python(None, env={"ZOO_TIMM_PYTHON": str(path)})
    text = str(err.value)
    assert f"$ZOO_TIMM_PYTHON names {path}, {'which ' if case[0] != 'a' else ''}{case}" in text
    assert "timm and torch" in text  # the fix
    with pytest.raises(bench.timm.TimmPythonError, match="--timm-python names"):
        bench.timm.timm_python(str(path), env={})


def test_the_probe_reads_versions_and_says_why_an_interpreter_cannot_build(bench: SimpleNamespace,
                                                                           tmp_path: Path) -> None:
    answers = _script(tmp_path / "ok", """echo '{"timm": "1.0.31", "torch": "2.13.0+cpu"}'""")
    assert bench.timm.probe(answers) == {"timm": "1.0.31", "torch": "2.13.0+cpu"}
    # this test's own Python has no timm (edgekit does not depend on it): the import error is the reason given
    assert importlib.util.find_spec("timm") is None
    with pytest.raises(bench.timm.TimmPythonError, match=r"cannot import timm and torch \(.*No module named 'timm'"):
        bench.timm.probe(Path(sys.executable))
    with pytest.raises(bench.timm.TimmPythonError, match="did not answer the version probe"):
        bench.timm.probe(_script(tmp_path / "mute", "echo hello"))


def test_the_build_child_runs_zoo_timm_in_the_named_python_at_the_rows_size(bench: SimpleNamespace, tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    sizes: list[int] = []
    monkeypatch.setattr(bench.zoo, "head_digits_npz", lambda size: sizes.append(size) or tmp_path / f"d{size}.npz")
    py = _script(tmp_path / "python", "exit 0")
    by_name = bench.models.BY_NAME
    cmd = bench.zoo.build_command(by_name["timm_mobileone_s0"], py)
    assert cmd == [str(py), str(BENCH / "zoo_timm.py"), "timm_mobileone_s0", "mobileone_s0", "160",
                   str(tmp_path / "d160.npz"), str(bench.models.RESULTS / "src")]
    assert bench.zoo.build_command(by_name["timm_efficientformer_l1"], py)[4:6] == ["224", str(tmp_path / "d224.npz")]
    assert sizes == [160, 224]
    # the other rows build in this interpreter, as before
    assert bench.zoo.build_command(by_name["hf_resnet18"], None)[0] == sys.executable
    with pytest.raises(bench.timm.TimmPythonError, match="timm_mobileone_s0: needs a Python that imports timm"):
        bench.zoo.build_command(by_name["timm_mobileone_s0"], None)


def test_classifier_rows_convert_at_plain_and_task_rows_at_the_default(bench: SimpleNamespace) -> None:
    assert bench.models.CLASSIFIER_FLAGS == ("--int8-recipe", "plain")
    cmd = bench.zoo.convert_command("m.pt2", "c.npz", Path("out"), extra=list(bench.models.CLASSIFIER_FLAGS))
    assert cmd[cmd.index("--int8-recipe") + 1] == "plain"
    assert "--int8-recipe" not in bench.zoo.convert_command("m.pt2", "c.npz", Path("out"), extra=["--output-kind"])


def test_without_an_interpreter_the_rows_are_skipped_and_stay_planned_with_the_reason(
        bench: SimpleNamespace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        zoo_report: ModuleType) -> None:
    monkeypatch.delenv("ZOO_TIMM_PYTHON", raising=False)
    monkeypatch.setattr(bench.zoo, "RESULTS", tmp_path)

    def no_run(*_a: Any) -> dict[str, Any]:
        raise AssertionError("a timm row ran without an interpreter")

    monkeypatch.setattr(bench.zoo, "run_one", no_run)
    monkeypatch.setattr(bench.zoo, "report", lambda: "page")
    assert bench.zoo.main(["run", "--only", "timm_fastvit_t8,timm_repvit_m0_9"]) == 0
    out = capsys.readouterr().out
    assert "timm_fastvit_t8: skipped, planned, not run: needs a Python that imports timm and torch" in out
    assert "timm_repvit_m0_9: skipped" in out and not list(tmp_path.glob("*.json"))
    # and the page lists them as planned, with the same reason
    results = tmp_path / "results"
    results.mkdir()
    text = zoo_report.report(results, tmp_path / "zoo.md", use_commit=False).read_text()
    planned = text.split("## Planned, not run yet")[1]
    assert ("- `timm_fastvit_t8`: timm `fastvit_t8` (FastViT-T8, unfused): needs a Python that imports timm and "
            "torch: `python bench/zoo.py run --timm-python PATH` or ZOO_TIMM_PYTHON=PATH") in planned


def test_a_bad_interpreter_stops_the_run_before_any_row(bench: SimpleNamespace, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(bench.zoo, "run_one", lambda *_a: pytest.fail("a row ran"))
    with pytest.raises(SystemExit) as done:
        bench.zoo.main(["run", "--only", "mnist_cnn,timm_ghostnetv3_050", "--timm-python", str(tmp_path / "py")])
    assert done.value.code == 2
    assert f"--timm-python names {tmp_path / 'py'}, which does not exist" in capsys.readouterr().err
    monkeypatch.setenv("ZOO_TIMM_PYTHON", sys.executable)  # a Python, but without timm
    with pytest.raises(SystemExit):
        bench.zoo.main(["run", "--only", "timm_ghostnetv3_050"])
    assert "cannot import timm and torch" in capsys.readouterr().err


class _Backbone:
    """What timm.create_model(..., num_classes=0) gives: a BatchNorm CNN whose output is its pooled features."""

    @staticmethod
    def create_model(name: str, pretrained: bool, num_classes: int) -> Any:
        import torch

        assert (name, pretrained, num_classes) == ("tiny", False, 0)
        return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=2), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                                   torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())


@pytest.mark.slow  # torch.export: about 7 s on 2 shared cores
def test_the_child_fits_a_head_on_pooled_features_and_exports_a_dynamic_batch(
        bench: SimpleNamespace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setitem(sys.modules, "timm", ModuleType("timm"))
    monkeypatch.setattr(sys.modules["timm"], "create_model", _Backbone.create_model, raising=False)
    monkeypatch.setattr(sys.modules["timm"], "__version__", "0-stand-in", raising=False)
    rng = np.random.default_rng(0)
    y = np.arange(80) % 10
    x = rng.integers(0, 60, (80, 16, 16, 3)).astype(np.uint8)
    x[np.arange(80), y, :, :] = 250  # the label is a bright row: learnable from pooled features
    np.savez(tmp_path / "d.npz", x=x, y=y)
    rec = bench.timm.build("row", "tiny", 16, tmp_path / "d.npz", tmp_path / "src")
    assert rec["batch"] == "dynamic" and rec["bn_layers"] == 1 and rec["timm"] == "0-stand-in"
    assert rec["head"].startswith("Linear 8->10") and rec["layout"] == "NCHW" and rec["pixels"] == "0-1"
    assert json.loads((tmp_path / "src" / "row.build.json").read_text()) == rec
    program = torch.export.load(str(tmp_path / "src" / "row.pt2")).module()
    bn = next(m for n, m in program.named_buffers() if n.endswith("running_var"))
    assert not torch.allclose(bn, torch.ones_like(bn))  # set from the digits, not a random init's 1
    xt = torch.from_numpy(x.transpose(0, 3, 1, 2).astype(np.float32) / 255.0)
    logits = program(xt[:3])
    assert logits.shape == (3, 10)  # not the batch of 2 it was exported with
    acc = float((program(xt).argmax(1).numpy() == y).mean())
    assert acc == pytest.approx(rec["head_train_accuracy"], abs=1e-6)
    with pytest.raises(SystemExit, match="not 24x24x3"):
        bench.timm.build("row", "tiny", 24, tmp_path / "d.npz", tmp_path / "src")


def test_every_row_is_at_the_zoo_size_but_the_one_fixed_to_224(bench: SimpleNamespace) -> None:
    timm_rows = [m for m in bench.models.ZOO if m.package == "timm"]
    assert len(timm_rows) == 8 and all(m.name == f"timm_{m.cls}" for m in timm_rows)
    assert [m.name for m in bench.models.ZOO if m.size != bench.models.SIZE] == ["timm_efficientformer_l1"]
