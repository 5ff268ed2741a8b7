"""`edgekit convert`: PyTorch, Keras, SavedModel or ONNX in; validated artifacts and manifest.json out."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from edgekit.core import flags
from edgekit.core.errors import EXIT_NOT_COMPILED, EXIT_PARTIAL

if TYPE_CHECKING:
    from edgekit.conversion.execute import ConvertResult

HELP = """Convert a model to the targets and precisions listed below, validate every artifact against the
source, and write them with a manifest.json.

Each artifact succeeds or fails on its own: a failed one is recorded in manifest.json and the others
are published (--strict stops at the first failure instead).

Exit codes: 0 success; 1 internal error (a bug in edgekit); 2 bad input; 3 missing dependency; 4
conversion failed; 5 fidelity miss with --strict; 6 runtime failure; 8 some artifacts failed, the
others were published; 10 Edge TPU model written but not compiled (no edgetpu_compiler here)."""


def _help() -> str:
    from edgekit.core.precisions import PRECISIONS
    from edgekit.targets import get_target, target_names

    targets = "\n".join(f"  {n}: {get_target(n).help}" for n in target_names())
    precisions = "\n".join(f"  {p.name}: {p.help}" for p in PRECISIONS.values())
    # "\b" keeps click from re-wrapping a paragraph: one line per target and precision
    return f"{HELP}\n\n\b\nTargets:\n{targets}\n\n\b\nPrecisions:\n{precisions}"


@dataclass
class ShowOptions:
    """convert's options that are the command's, not the conversion's (those are ConvertOptions')."""

    json_out: bool = flags.JSON(help="Print the manifest JSON on stdout instead of the table.")


def register(app: typer.Typer) -> None:
    """`edgekit convert`, its options generated from their declarations (edgekit.conversion.options for the common
    ones, each target's file for its own): a flag, its help and its API keyword are written once."""
    from edgekit.commands.declared import option_values, parameter, parameters, with_signature
    from edgekit.conversion.options import OPTIONS, TARGET_OPTIONS
    from edgekit.core.option_field import declared

    own = {d.name for cls in TARGET_OPTIONS for d in declared(cls)}  # the targets' own, listed after the others
    flagged = [d for d in OPTIONS.values() if d.form.cli]
    source = inspect.Parameter("source", inspect.Parameter.KEYWORD_ONLY, annotation=Path | None, default=typer.Argument(
        None, help="Model: .pt2, TorchScript .pt, state_dict .pt (+ --model), .onnx, .keras, .h5 or a SavedModel "
        "folder; leave out to build the model with --model alone."))
    params = [source, *(parameter(d) for d in flagged if d.name not in own), *parameters(ShowOptions),
              *(parameter(d) for d in flagged if d.name in own)]

    def convert_cmd(**values: Any) -> int:
        from edgekit.conversion.execute import ConvertResult
        from edgekit.conversion.pipeline import convert
        from edgekit.core.console import err, progress, quiet_stdout
        from edgekit.core.errors import FidelityError

        json_out = bool(values.pop("json_out"))
        fields = option_values(OPTIONS.values(), values)  # each option's one parser: UsageError for a bad value
        try:
            with quiet_stdout():
                result = convert(values["source"], progress=progress, **fields)
        except FidelityError as exc:
            if isinstance(exc.result, ConvertResult):  # --strict: what was written, shown before the error
                _show(exc.result, json_out)
            raise
        _show(result, json_out)
        if result.failed:
            names = ", ".join(a.path for a in result.failed)
            err.print(f"[bold red]{len(result.failed)} of {len(result.artifacts)} artifacts failed[/bold red] "
                      f"({names}); the others were validated and published. Each failure is in manifest.json "
                      "(status, failure); --strict stops at the first one instead.", highlight=False)
            return EXIT_PARTIAL
        if result.not_compiled:
            err.print("[bold yellow]Edge TPU model written and pre-flighted, but not compiled:[/bold yellow] "
                      "no edgetpu_compiler here.")
            if result.how_to_finish:
                err.print(result.how_to_finish, markup=False)
            return EXIT_NOT_COMPILED
        return 0

    app.command("convert", help=_help())(with_signature(convert_cmd, params, [*flagged, *declared(ShowOptions)]))

    def _show(result: ConvertResult, json_out: bool) -> None:
        from edgekit.core.console import out as console_out
        from edgekit.core.console import print_json, warn
        from edgekit.report import convert_table
        from edgekit.report.convert import run_line

        if json_out:
            print_json(result.manifest.to_dict())
        else:
            console_out.print(convert_table(result.manifest))
            console_out.print(f"manifest: {result.manifest_path}")
            line = run_line(result.manifest)
            if line:
                console_out.print(line, highlight=False)
        for w in result.warnings:
            warn(w)
