"""The example CI files run as written: the GitHub workflow's steps (conftest.ci_run) and GitLab's JUnit job."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from workflow_steps import REPO, run_step, step_named, workflow

pytestmark = pytest.mark.slow


def test_github_workflow_steps_pass_on_the_bundled_model(ci_run) -> None:
    names = list(ci_run.steps)
    assert names == ["Convert", "Bench", "Write the new baseline", "Check against the base branch"]
    for name, proc in ci_run.steps.items():
        assert proc.returncode == 0, (name, proc.stdout[-2000:], proc.stderr[-2000:])
    baseline = json.loads((ci_run.root / ci_run.env["BASELINE"]).read_text())
    assert baseline["kind"] == "edgekit-baseline" and [a["key"] for a in baseline["artifacts"]] == [
        "onnx fp32", "onnx int8"]
    assert (ci_run.out / "bench" / "bench.png").is_file()  # what the upload step publishes
    check = ci_run.steps["Check against the base branch"].stdout
    assert "no models/edgekit-baseline.json on main" not in check  # it read the baseline with git show
    assert "baseline: git:origin/main:models/edgekit-baseline.json" in check
    assert "budgets: edgekit-budget.toml" in check and "edgekit check passed" in check
    assert "::error" not in check
    summary = ci_run.summary.read_text()
    assert summary.startswith("### edgekit check passed") and "| onnx int8 | size growth |" in summary


def test_github_workflow_check_fails_a_regression(ci_run, wide_run, tmp_path) -> None:
    """The workflow's check step on the wider model: ::error annotations on the budget file's line, exit 7."""
    step = step_named("Check against the base branch")
    summary = tmp_path / "summary.md"
    proc = run_step(ci_run, "check wide", step["run"], {"BASE_REF": "main", "OUT": str(wide_run),
                                                        "GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 7, proc.stderr[-2000:]
    errors = [line for line in proc.stdout.splitlines() if line.startswith("::error ")]
    budget_line = next(n for n, line in enumerate((ci_run.root / "edgekit-budget.toml").read_text().splitlines(), 1)
                       if line.startswith("max_growth"))
    assert any(f"file=edgekit-budget.toml,line={budget_line}," in e and "onnx fp32 size growth" in e for e in errors)
    assert "❌ fail" in summary.read_text()


def test_gitlab_job_writes_junit_with_one_testcase_per_check(ci_run) -> None:
    import yaml

    spec = yaml.safe_load((REPO / "examples" / "gitlab-ci" / ".gitlab-ci.yml").read_text())
    job = spec["edgekit-check"]
    assert job["artifacts"]["reports"]["junit"] == "edgekit-check.xml"
    script = job["script"]
    # install, convert and bench are the GitHub workflow's commands, which ci_run ran on this model already
    assert script[0].startswith("pip install") and "edgekit convert" in script[1] and "edgekit bench" in script[2]
    # every variable the job's scripts read is set in `variables` (GitLab's own CI_* aside, and BASE, which the script
    # sets), and holds what the GitHub workflow's env holds: a variable renamed on one side fails here
    used = set(re.findall(r"\$\{?([A-Z][A-Z0-9_]*)", "\n".join(script + spec["edgekit-baseline"]["script"])))
    used -= {v for v in used if v.startswith("CI_")} | {"BASE"}
    assert used == {"MODEL", "OUT", "BASELINE", "BUDGET", "CONVERT_ARGS"}, used
    assert used <= set(spec["variables"]), used - set(spec["variables"])
    github_env = workflow()["env"]
    assert {k: str(spec["variables"][k]) for k in used} == {k: str(github_env[k]) for k in used}
    for i, line in enumerate(script[3:]):
        proc = run_step(ci_run, f"gitlab {i}", line, {"CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main"})
        assert proc.returncode == 0, (line, proc.stderr[-2000:])
    xml = ci_run.root / "edgekit-check.xml"
    root = ET.parse(xml).getroot()
    cases = root.findall(".//testcase")
    report = json.loads(run_step(ci_run, "json", 'edgekit check "$OUT" --baseline '
                                 '"git:origin/main:$BASELINE" --budget "$BUDGET" --format json').stdout)
    assert len(cases) == len(report["checks"]) == int(root.get("tests"))
    assert {c.get("name") for c in cases} == {f"{r['metric']} [{r['budget_key']}]" for r in report["checks"]}
    assert root.get("failures") == "0" and not root.findall(".//failure")
    assert {s.get("name") for s in root.findall("testsuite")} == {"onnx fp32", "onnx int8"}
    assert Path(xml).stat().st_size > 0
