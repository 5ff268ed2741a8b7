"""`edgekit check CURRENT`: the CI gate: a conversion against a baseline and budgets, pass / warn / fail."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from edgekit.commands.declared import argument, command
from edgekit.core import flags
from edgekit.core.option_field import option

HELP = """Check a conversion's output folder (manifest.json, bench/bench.json) against a baseline and budgets:
size, fidelity (a detector's box recall, precision and mAP50 too), Edge TPU coverage, compute, new
operators and latency (relative to the source model measured in the same bench run). Prints a table,
worst first.

\b
Baseline (--baseline): a baseline JSON written by --update-baseline, another output folder, or
git:REV:PATH (read with `git show`, e.g. git:origin/main:models/edgekit-baseline.json).
Budgets (--budget): a TOML file, or a pyproject.toml's [tool.edgekit.check]; without --budget, the
[tool.edgekit.check] of ./pyproject.toml where there is one, else the defaults.

\b
Exit codes: 0 every budget holds (warnings allowed); 7 a budget is broken; 2 bad input (missing or
malformed file, unknown budget key)."""


@dataclass
class CheckOptions:
    """Every option of `edgekit check`, in the order its --help shows them."""

    baseline: str | None = option(None, "Baseline JSON, output folder, or git:REV:PATH.", flags=("--baseline", "-b"))
    budget: Path | None = option(None, "Budget TOML file, or a pyproject.toml.", flags=("--budget",))
    fmt: str = option("text", "text, json, github, junit or markdown.", flags=("--format", "-f"))
    output: Path | None = flags.OUTPUT(help="Write the report (in --format) to this file instead of stdout; the "
                                       "verdict line goes to stderr.")
    update: bool = option(False, "Write CURRENT's facts to the --baseline file (to commit) instead of checking.",
                          flags=("--update-baseline",))


def register(app: typer.Typer) -> None:
    current = argument("current", Path, "Output folder of `edgekit convert`, or its manifest.json.")

    @command(app.command, CheckOptions, current, name="check", help=HELP)
    def check_cmd(o: CheckOptions, current: Path) -> int:
        from edgekit.check import FORMATS, check, format_report, update_baseline
        from edgekit.core.console import err, out
        from edgekit.core.errors import UsageError
        from edgekit.core.registry import check_choice

        baseline, output = o.baseline, o.output
        fmt = check_choice(o.fmt, FORMATS, "--format")
        if o.update:
            if not baseline:
                raise UsageError("--update-baseline needs --baseline FILE: the baseline file to write.",
                                 hint="e.g. edgekit check OUT --baseline models/edgekit-baseline.json "
                                      "--update-baseline")
            path, n = update_baseline(current, baseline)
            err.print(f"wrote baseline {path} ({n} artifacts): commit it so pull requests are checked against it",
                      highlight=False)
            return 0
        report = check(current, baseline, o.budget)  # edgekit.check(), the Python API's
        if output is None and fmt == "text":
            from edgekit.check.render import text as print_table

            print_table(report, out)
            return report.exit_code
        text = format_report(report, fmt)
        if output is not None:
            from edgekit.check.render import summary_line
            from edgekit.core.fsutil import atomic_write_text

            atomic_write_text(output, text)
            err.print(f"{summary_line(report)}; report: {output}", highlight=False)
        else:
            import sys

            sys.stdout.write(text)
            sys.stdout.flush()
        return report.exit_code
