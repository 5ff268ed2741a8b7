"""`edgekit inspect ARTIFACT`: ops, shapes, MACs, parameters and the Edge TPU pre-flight of a model file."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command("inspect")
    def inspect_cmd(
        artifact: Path = typer.Argument(..., help="A .tflite or .onnx file."),
        as_json: bool = typer.Option(False, "--json", help="Print the report as JSON on stdout (nothing else)."),
        min_runtime: int = typer.Option(
            None,
            "--edgetpu-min-runtime",
            min=10,
            help="Edge TPU runtime version to pre-flight against (default 14, as edgetpu_compiler 16).",
        ),
    ) -> None:
        """Show a model's operators, shapes, MACs and parameters; for .tflite, what the Edge TPU would run.

        Runs without TensorFlow: a device install (edgekit[runtime]) is enough.
        """
        from edgekit.inspect import inspect  # edgekit.inspect(), the Python API's

        report = inspect(artifact, min_runtime=min_runtime)
        if as_json:
            from edgekit.core.console import print_json

            print_json(report.to_dict())
            return
        from edgekit.core.console import out
        from edgekit.report.inspect import render

        render(report, out)
