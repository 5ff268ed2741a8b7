"""The report formats: GitHub annotations and step summary, JUnit XML, Markdown, JSON, text."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from edgekit.check import format_report
from edgekit.check.ci import annotation, github, junit
from edgekit.check.records import CheckReport, CheckResult

SIZE = CheckResult(artifact="tflite int8", metric="size growth", budget_key="max_growth", unit="bytes",
                   baseline=235248, now=335248, change=335248 / 235248 - 1, budget="<= +5.0%", verdict="fail",
                   message="tflite int8: size 229.7 KB -> 327.4 KB (+42.5%), budget +5.0%",
                   budget_from="ci/budget.toml:3", file="ci/budget.toml", line=3)
ACC = CheckResult(artifact="tflite int8", metric="accuracy drop vs source", budget_key="max_accuracy_drop",
                  unit="fraction", baseline=0.98, now=0.975, change=-0.005, budget="drop <= 1.00 pt", verdict="pass",
                  message="ok")
OPS = CheckResult(artifact="onnx fp32", metric="new operators", budget_key="new_ops", unit="text", baseline=5,
                  now="Erf, 100%, a:b", verdict="warn", message="onnx fp32: operators not in the baseline: Erf,\nx",
                  file="models/m.pt2")
REPORT = CheckReport(verdict="fail", exit_code=7, current="out", baseline="git:origin/main:b.json",
                     budgets="ci/budget.toml", latency_compared=["p50 relative to the source model"],
                     counts={"fail": 1, "warn": 1, "pass": 1}, checks=[SIZE, OPS, ACC], notes=["a note"])


def test_github_annotations_point_at_the_budget_line_and_escape(tmp_path: Path) -> None:
    assert annotation(SIZE) == ("::error file=ci/budget.toml,line=3,title=edgekit check%3A tflite int8 size growth::"
                                "tflite int8: size 229.7 KB -> 327.4 KB (+42.5%25), budget +5.0%25 (budget max_growth "
                                "from ci/budget.toml:3)")
    warn = annotation(OPS)
    assert warn.startswith("::warning file=models/m.pt2,title=") and "Erf,%0Ax" in warn and "\n" not in warn
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    text = github(REPORT, str(summary))
    assert text.splitlines()[:2] == [annotation(SIZE), annotation(OPS)]
    assert "edgekit check FAILED: 1 failed, 1 warnings, 1 passed (exit 7)" in text
    md = summary.read_text()
    assert md.startswith("earlier step\n### edgekit check FAILED")  # appended, as GitHub asks


def test_junit_one_testcase_per_check() -> None:
    root = ET.fromstring(junit(REPORT).split("\n", 1)[1])
    cases = root.findall(".//testcase")
    assert len(cases) == 3 and root.get("tests") == "3" and root.get("failures") == "1"
    failure = root.find(".//testcase[@name='size growth [max_growth]']/failure")
    assert failure is not None and failure.get("type") == "max_growth" and "229.7 KB" in failure.text
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert suites["tflite int8"].get("tests") == "2" and suites["onnx fp32"].get("failures") == "0"


def test_markdown_sizes_in_kb_with_change() -> None:
    md = format_report(REPORT, "markdown")
    assert "| tflite int8 | size growth | 229.7 KB | 327.4 KB | +42.5% | <= +5.0% | ❌ fail |" in md
    assert "| tflite int8 | accuracy drop vs source | 98.00% | 97.50% | -0.50 pt |" in md
    assert "Erf, 100%, a:b" in md and "- latency compared: p50 relative to the source model" in md
    big = CheckResult(artifact="onnx fp32", metric="size", unit="bytes", baseline=914746, now=1327022)
    md = format_report(CheckReport(checks=[big]), "markdown")
    assert "| onnx fp32 | size | 893.3 KB | 1,295.9 KB |" in md  # KB, not MB, so the column compares


def test_json_and_text() -> None:
    data = json.loads(format_report(REPORT, "json"))
    assert data["schema_version"] == 1 and list(data)[0] == "schema_version"
    assert data["checks"][0]["verdict"] == "fail" and CheckReport.from_dict(data).checks[0] == SIZE
    text = format_report(REPORT, "text")
    assert "size growth" in text and "fail: tflite int8: size" in text and "\x1b[" not in text
