"""The check report for CI systems: GitHub Actions annotations and JUnit XML.

GitHub: one `::error` / `::warning` workflow command per broken budget, pointing at the budget file
line that set it (or at the source model when a default budget broke), and the Markdown table
appended to $GITHUB_STEP_SUMMARY when that is set. JUnit: one testcase per budget check, a
<failure> for a broken budget; GitLab, Jenkins and Azure Pipelines read it.
"""

from __future__ import annotations

import os

from edgekit.check.records import CheckReport, CheckResult
from edgekit.check.render import cells, footer, markdown, summary_line


def _escape_data(s: str) -> str:
    """A workflow command's message, escaped as GitHub's toolkit does (% first)."""
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def annotation(r: CheckResult) -> str:
    """`::error file=F,line=N,title=T::message` for a failed check, `::warning ...` for a warning."""
    level = "error" if r.verdict == "fail" else "warning"
    props = []
    if r.file:
        props.append(f"file={_escape_property(r.file)}")
        if r.line:
            props.append(f"line={r.line}")
    props.append(f"title={_escape_property(f'edgekit check: {r.artifact} {r.metric}')}")
    message = f"{r.message} (budget {r.budget_key} from {r.budget_from})"
    return f"::{level} {','.join(props)}::{_escape_data(message)}"


def github(report: CheckReport, summary_path: str | None = None) -> str:
    """What to print in a GitHub Actions step: annotations, the plain table, the verdict. Appends the
    Markdown table to SUMMARY_PATH (default: $GITHUB_STEP_SUMMARY) when one is set."""
    lines = [annotation(r) for r in report.failed + report.warned]
    lines.append("::group::edgekit check: every budget check")
    lines += ["  ".join(cells(r)) for r in report.checks]
    lines.append("::endgroup::")
    lines += footer(report)
    lines.append(summary_line(report))
    target = summary_path if summary_path is not None else os.environ.get("GITHUB_STEP_SUMMARY")
    if target:
        with open(target, "a", encoding="utf-8") as fh:  # GitHub's own contract: append to the file
            fh.write(markdown(report) + "\n")
    return "\n".join(lines) + "\n"


def junit(report: CheckReport) -> str:
    """JUnit XML: one <testsuite> per artifact, one <testcase> per budget check, <failure> where broken."""
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites", name="edgekit check", tests=str(len(report.checks)),
                      failures=str(len(report.failed)))
    suites: dict[str, ET.Element] = {}
    for r in report.checks:
        suite = suites.get(r.artifact)
        if suite is None:
            suite = suites[r.artifact] = ET.SubElement(root, "testsuite", name=r.artifact)
        case = ET.SubElement(suite, "testcase", name=f"{r.metric} [{r.budget_key}]",
                             classname=f"edgekit.check.{r.artifact}")
        if r.file:
            case.set("file", r.file)
        detail = " | ".join(f"{k}: {v}" for k, v in zip(("artifact", "metric", "baseline", "now", "change", "budget"),
                                                          cells(r)[:6], strict=True))
        if r.verdict == "fail":
            ET.SubElement(case, "failure", message=r.message, type=r.budget_key).text = \
                f"{detail}\nbudget from {r.budget_from}"
        else:
            ET.SubElement(case, "system-out").text = f"{r.verdict}: {r.message}\n{detail}"
    for suite in suites.values():
        cases = suite.findall("testcase")
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


__all__ = ["annotation", "github", "junit"]
