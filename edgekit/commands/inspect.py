"""`edgekit inspect ARTIFACT`: ops, shapes, MACs, parameters and the Edge TPU pre-flight of a model file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from edgekit.commands.declared import argument, command
from edgekit.core import flags


@dataclass
class InspectOptions:
    """Every option of `edgekit inspect`."""

    as_json: bool = flags.JSON(help="Print the report as JSON on stdout (nothing else).")
    min_runtime: int | None = flags.EDGETPU_MIN_RUNTIME()  # convert's too: one version, checked by one parser


def register(app: typer.Typer) -> None:
    @command(app.command, InspectOptions, argument("artifact", Path, "A .tflite or .onnx file."), name="inspect")
    def inspect_cmd(o: InspectOptions, artifact: Path) -> None:
        """Show a model's operators, shapes, MACs and parameters; for .tflite, what the Edge TPU would run.

        Runs without TensorFlow: a device install (edgekit[runtime]) is enough.
        """
        from edgekit.inspect import inspect  # edgekit.inspect(), the Python API's

        report = inspect(artifact, min_runtime=o.min_runtime)
        if o.as_json:
            from edgekit.core.console import print_json

            print_json(report.to_dict())
            return
        from edgekit.core.console import out
        from edgekit.report.inspect import render

        render(report, out)
