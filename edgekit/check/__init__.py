"""`edgekit check`: the CI gate. A conversion's files against a baseline and budgets -> pass / warn / fail.

    current  = snapshot.from_folder(OUT)            # manifest.json, bench/bench.json, the artifact files
    baseline = snapshot.load_baseline(SPEC)          # a baseline JSON, another output folder, or git:REV:PATH
    budgets  = budgets.load_budgets(FILE)            # a TOML file or [tool.edgekit.check]; defaults without
    report   = evaluate.evaluate(current, baseline, budgets)

`check` reads files only, never live objects, and treats each one as hostile (edgekit.check.files):
a malformed, mistyped or oversized file is bad input (exit 2). A broken budget exits EXIT_CHECK (7).
Output formats: text and markdown (edgekit.check.render), github and junit (edgekit.check.ci), json
(the CheckReport's to_dict(), with its schema_version).

`edgekit.check(current, baseline=..., budget=...)` is `check` below: this package is callable as it
(edgekit.core.handles.callable_package), since the name is both a subpackage and a public function.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgekit.check.records import CheckReport
from edgekit.core.errors import UsageError
from edgekit.core.handles import callable_package, run_folder, run_manifest

FORMATS: tuple[str, ...] = ("text", "json", "github", "junit", "markdown")


def run_check(current: str | Path, baseline: str | None = None, budget: str | Path | None = None) -> CheckReport:
    """Check the conversion output CURRENT (a folder or its manifest.json) against BASELINE and BUDGET."""
    from edgekit.check.budgets import load_budgets
    from edgekit.check.evaluate import evaluate
    from edgekit.check.snapshot import from_folder, load_baseline

    budgets = load_budgets(budget)
    now = from_folder(Path(current))
    base = load_baseline(baseline) if baseline else None
    return evaluate(now, base, budgets)


def check(current: str | Path | Any, baseline: str | Path | Any | None = None,
          budget: str | Path | None = None) -> CheckReport:
    """The CI gate from Python: a conversion's files against BASELINE and BUDGET, as `edgekit check` runs it.

    CURRENT: a run's output folder, its manifest.json, or the Conversion `edgekit.convert()` returned (its
    bench/bench.json is read where a bench wrote one). BASELINE: a baseline JSON, another run (its folder
    or Conversion), or git:REV:PATH; None checks the absolute budgets alone. BUDGET: a TOML file or a
    pyproject.toml (default: ./pyproject.toml's [tool.edgekit.check], else the defaults). Returns the
    CheckReport: `verdict` ("pass", "warn" or "fail"), `exit_code`, and `checks`, worst first.
    """
    base = baseline if baseline is None or isinstance(baseline, str) else str(run_folder(baseline))  # as typed
    return run_check(run_manifest(current), base, budget)


def update_baseline(current: str | Path, baseline: str) -> tuple[Path, int]:
    """Write CURRENT's facts as the baseline JSON file BASELINE; (its path, how many artifacts it holds)."""
    from edgekit.check.snapshot import from_folder
    from edgekit.core.fsutil import atomic_write_text

    if baseline.startswith("git:") or Path(baseline).is_dir():
        raise UsageError(f"--update-baseline writes a baseline file, and '{baseline}' is "
                         f"{'a git revision' if baseline.startswith('git:') else 'a folder'}.",
                         hint="Pass the file to write, e.g. --baseline models/edgekit-baseline.json, and commit it.")
    side = from_folder(Path(current))
    path = Path(baseline)
    if not path.parent.is_dir():  # (a bare file name's parent is ".")
        raise UsageError(f"The folder of {path} does not exist.", hint="Create it, or choose another path.")
    atomic_write_text(path, side.snapshot.to_json())
    return path, len(side.snapshot.artifacts)


def format_report(report: CheckReport, fmt: str) -> str:
    """REPORT as FMT text ("text": the table without colours, as a file or a CI log gets it)."""
    if fmt == "json":
        import json

        return json.dumps(report.to_dict(), indent=2) + "\n"
    if fmt == "markdown":
        from edgekit.check.render import markdown

        return markdown(report)
    if fmt == "github":
        from edgekit.check.ci import github

        return github(report)
    if fmt == "junit":
        from edgekit.check.ci import junit

        return junit(report)
    import io

    from rich.console import Console

    from edgekit.check.render import text

    buf = io.StringIO()
    text(report, Console(file=buf, width=160, color_system=None, highlight=False))
    return buf.getvalue()


__all__ = ["FORMATS", "check", "format_report", "run_check", "update_baseline"]

callable_package(__name__, check)  # edgekit.check(...) calls check(...)
