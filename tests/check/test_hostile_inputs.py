"""check reads files as hostile input: anything malformed, mistyped or oversized is exit 2 with a clear message."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from edgekit.check.files import MAX_BYTES
from edgekit.cli import main
from edgekit.core.errors import EXIT_CHECK, EXIT_USAGE

ARTIFACT = {"path": "m.fp32.onnx", "format": "onnx", "precision": "fp32", "size_bytes": 4, "sha256": "x",
            "fidelity": {"top1_agreement": 1.0, "accuracy": 0.9, "reference_accuracy": 0.9, "passed": True}}


def _out(tmp_path: Path, manifest: object, name: str = "out") -> Path:
    out = tmp_path / name
    out.mkdir()
    (out / "manifest.json").write_text(manifest if isinstance(manifest, str) else json.dumps(manifest))
    (out / "m.fp32.onnx").write_bytes(b"not a model at all")  # not a model: inspect says so in a note, check goes on
    return out


def _fails(capsys, args: list[str], pattern: str) -> None:
    assert main(["check", *args]) == EXIT_USAGE
    err = " ".join(capsys.readouterr().err.split())
    assert re.search(pattern, err), err
    assert "Traceback" not in err


@pytest.mark.parametrize(("manifest", "pattern"), [
    ("{not json", r"is not valid JSON: .* \(line 1, column 2\)"),
    ("[1, 2]", "is not an edgekit manifest"),
    ({"artifacts": "all of them"}, "is not an edgekit manifest"),
    ({"artifacts": [17]}, "artifact #1 is not an edgekit artifact entry"),
    ({"artifacts": [{"format": ["onnx"], "precision": "fp32"}]}, "artifact #1 is not an edgekit artifact entry"),
    ({"manifest_version": 99, "artifacts": []}, "manifest version 99, newer"),
    ("[" * 200_000 + "]" * 200_000, "nested too deeply"),
    ("\udcff".encode("utf-8", "surrogateescape").decode("latin-1"), "not valid JSON|not UTF-8"),
])
def test_malformed_manifest(tmp_path: Path, capsys, manifest: object, pattern: str) -> None:
    _fails(capsys, [str(_out(tmp_path, manifest))], pattern)


def test_wrong_types_inside_an_entry_are_not_figures(tmp_path: Path, capsys) -> None:
    art = {**ARTIFACT, "size_bytes": "huge", "fidelity": {"passed": "yes", "accuracy": [1]},
           "extra": {"edgetpu": "none"}}
    out = _out(tmp_path, {"artifacts": [art]})
    assert main(["check", str(out), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["metric"] for r in report["checks"]] == ["present"]  # nothing else is known, nothing made up
    assert any("operators and MACs not read" in n for n in report["notes"])


def test_an_edgetpu_table_without_a_readable_preflight_is_no_coverage(tmp_path: Path, capsys) -> None:
    """A table that EdgeTpuReport cannot read (no ops_total: a hand-edited manifest) is no facts: it once crashed
    check with an AttributeError on the None the reader gives for it."""
    art = {**ARTIFACT, "extra": {"edgetpu": {"ops_total": "many", "compiler": {}}}}
    out = _out(tmp_path, {"artifacts": [art]})
    budget = tmp_path / "budget.toml"
    budget.write_text("min_ops_on_tpu_fraction = 0.9\n")
    assert main(["check", str(out), "--budget", str(budget), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["metric"] for r in report["checks"]] == ["present", "fidelity"]  # no Edge TPU figure made up


def test_missing_and_huge_files(tmp_path: Path, capsys) -> None:
    _fails(capsys, [str(tmp_path / "nowhere")], "No manifest at")
    (tmp_path / "empty").mkdir()
    _fails(capsys, [str(tmp_path / "empty")], "holds no manifest.json")
    out = _out(tmp_path, {"artifacts": [ARTIFACT]})
    with open(out / "manifest.json", "r+b") as f:  # sparse: no disk is spent on it
        f.truncate(MAX_BYTES + 1)
    _fails(capsys, [str(out)], r"is 33,554,433 bytes: larger than any edgekit file")


def test_bad_bench_report_and_baselines(tmp_path: Path, capsys) -> None:
    out = _out(tmp_path, {"artifacts": [ARTIFACT]})
    (out / "bench").mkdir()
    (out / "bench" / "bench.json").write_text('{"rows": 3}')
    _fails(capsys, [str(out)], "is not an edgekit bench report")
    (out / "bench" / "bench.json").write_text('{"schema_version": 7, "rows": []}')
    _fails(capsys, [str(out)], "bench schema 7, newer")
    (out / "bench" / "bench.json").unlink()
    bad = tmp_path / "b.json"
    for text, pattern in (('{"hello": 1}', "neither an edgekit baseline nor a manifest"),
                          ('{"kind": "edgekit-baseline", "version": 9, "artifacts": []}', "baseline version 9"),
                          ('{"kind": "edgekit-baseline", "version": 1, "artifacts": [{}]}', "#1 has no key"),
                          ('{"kind": "edgekit-baseline", "version": 1, "artifacts": {}}', "without an 'artifacts'")):
        bad.write_text(text)
        _fails(capsys, [str(out), "--baseline", str(bad)], pattern)
    _fails(capsys, [str(out), "--baseline", str(tmp_path / "none.json")], "No baseline at")
    _fails(capsys, [str(out), "--baseline", "git:main"], "is not git:REV:PATH")
    _fails(capsys, [str(out), "--format", "junti"], "did you mean 'junit'")
    _fails(capsys, [str(out), "--baseline", "git:HEAD:x.json", "--update-baseline"], "is a git revision")
    _fails(capsys, [str(out), "--update-baseline"], "needs --baseline FILE")


def test_baseline_from_git_revision(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    out = _out(tmp_path, {"artifacts": [ARTIFACT]}, "repo")
    assert main(["check", str(out), "--baseline", str(repo / "base.json"), "--update-baseline"]) == 0
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for cmd in (["init", "-q", "-b", "main"], ["add", "base.json"], ["commit", "-q", "-m", "b"]):
        subprocess.run(["git", *cmd], cwd=repo, check=True, capture_output=True, env={**env, "PATH": "/usr/bin:/bin"})
    monkeypatch.chdir(repo)
    big = json.loads((repo / "manifest.json").read_text())
    big["artifacts"][0]["size_bytes"] = 5  # 25% larger than the committed baseline
    (repo / "manifest.json").write_text(json.dumps(big))
    assert main(["check", ".", "--baseline", "git:main:base.json", "--format", "json"]) == EXIT_CHECK
    report = json.loads(capsys.readouterr().out)
    assert report["baseline"] == "git:main:base.json"
    (r,) = [r for r in report["checks"] if r["verdict"] == "fail"]
    assert (r["metric"], r["baseline"], r["now"]) == ("size growth", 4, 5)
    _fails(capsys, [".", "--baseline", "git:nosuchrev:base.json"], "Cannot read git:nosuchrev:base.json: git says")


def test_edgetpu_coverage_from_the_compiler_where_it_ran(tmp_path: Path, capsys) -> None:
    """A compiled artifact's manifest entry (the shape edgetpu_compile writes): the compiler's counts win."""
    preflight = {"predicted": True, "compiled": True, "ops_total": 10, "ops_on_tpu": 10, "ops_on_tpu_fraction": 1.0,
                 "macs_on_tpu_fraction": 1.0, "first_unsupported": None,
                 "compiler": {"ops_total": 10, "ops_on_tpu": 8, "ops_on_cpu": 2}}
    art = {**ARTIFACT, "path": "m_edgetpu.tflite", "format": "edgetpu", "precision": "int8",
           "extra": {"edgetpu": preflight}}
    out = _out(tmp_path, {"artifacts": [art]})
    (out / "m_edgetpu.tflite").write_bytes(b"not a model")
    budget = tmp_path / "b.toml"
    budget.write_text('["edgetpu *"]\nmin_ops_on_tpu_fraction = 0.9\n')
    assert main(["check", str(out), "--budget", str(budget), "--format", "json"]) == EXIT_CHECK
    (r,) = [r for r in json.loads(capsys.readouterr().out)["checks"] if r["verdict"] == "fail"]
    assert (r["artifact"], r["now"]) == ("edgetpu int8", 0.8) and "(edgetpu_compiler)" in r["message"]


def test_an_artifact_that_failed_in_the_baseline_too_is_not_gone(tmp_path: Path, capsys) -> None:
    failed = {"path": "", "format": "tflite", "precision": "int8", "status": "failed",
              "failure": {"step": "tflite_convert", "message": "boom"}}
    base = _out(tmp_path, {"artifacts": [ARTIFACT, failed]}, "base")
    now = _out(tmp_path, {"artifacts": [ARTIFACT]}, "now")
    assert main(["check", str(now), "--baseline", str(base), "--format", "json"]) == 0
    assert "tflite int8" not in {r["artifact"] for r in json.loads(capsys.readouterr().out)["checks"]}
    assert main(["check", str(base), "--format", "json"]) == EXIT_CHECK  # failing now is a failure
    (r,) = [r for r in json.loads(capsys.readouterr().out)["checks"] if r["verdict"] == "fail"]
    assert (r["artifact"], r["now"]) == ("tflite int8", "failed to convert") and "boom" in r["message"]


def test_a_model_file_that_crashes_inspect_is_a_note(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    """inspect runs in a child (edgekit.core.isolate): its crash on a crafted file is a note, check goes on."""
    import edgekit.core.isolate
    from edgekit.core.errors import RuntimeFailure

    def crashed(*_a: object, **_k: object) -> None:
        raise RuntimeFailure("edgekit inspect crashed (SIGSEGV) while reading the artifacts' operators and MACs")

    monkeypatch.delenv("EDGEKIT_NO_ISOLATION", raising=False)
    monkeypatch.setattr(edgekit.core.isolate, "run_isolated", crashed)
    out = _out(tmp_path, {"artifacts": [ARTIFACT]})
    assert main(["check", str(out), "--format", "json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any("onnx fp32: operators and MACs not read (edgekit inspect crashed (SIGSEGV)" in n for n in notes)
