"""`edgekit convert`: PyTorch, Keras, SavedModel or ONNX in; validated artifacts and manifest.json out."""

from __future__ import annotations

from pathlib import Path

import typer

from edgekit.errors import EXIT_NOT_COMPILED, UsageError

HELP = """Convert a model to ONNX / TFLite / Edge TPU artifacts at fp32, fp16, dynamic or int8, validate
every artifact against the source, and write them with a manifest.json.

Exit codes: 0 success; 2 bad input; 3 missing dependency; 4 conversion failed; 5 fidelity miss with
--strict; 10 Edge TPU model written but not compiled (no edgetpu_compiler here)."""


def parse_ints(value: str | None, what: str) -> list[int] | None:
    if value is None:
        return None
    try:
        return [int(v) for v in value.replace("x", ",").split(",") if v.strip()]
    except ValueError as exc:
        raise UsageError(f"{what} '{value}' is not a list of integers.", hint=f"For example: {what} 1,1,28,28") from exc


def parse_floats(value: str | None, what: str) -> list[float] | None:
    if value is None:
        return None
    try:
        return [float(v) for v in value.split(",") if v.strip()]
    except ValueError as exc:
        raise UsageError(f"{what} '{value}' is not a list of numbers.", hint=f"For example: {what} 0.485,0.456,0.406")\
            from exc


def register(app: typer.Typer) -> None:
    @app.command("convert", help=HELP)
    def convert_cmd(
        source: Path | None = typer.Argument(None, help="Model: .pt2, TorchScript .pt, state_dict .pt (+ --model), "
                                             ".onnx, .keras, .h5 or a SavedModel folder; leave out to build the "
                                             "model with --model alone."),
        target: str = typer.Option("onnx", "--target", "-t", help="Comma list of: onnx, tflite, edgetpu."),
        quantize: str = typer.Option("fp32", "--quantize", "-q", help="Comma list of: fp32, fp16, dynamic, int8."),
        calib: str | None = typer.Option(None, help="Calibration data: image folder, .npy/.npz, or 'mnist'."),
        calib_size: int = typer.Option(200, help="Calibration samples to use."),
        val_size: int = typer.Option(1000, help="Held-out samples to validate on (at most)."),
        input_shape: str | None = typer.Option(
            None, help="Input shape, batch first, in the source's layout: 1,1,28,28."
        ),
        batch: int = typer.Option(1, help="Static batch for TFLite / Edge TPU artifacts."),
        io_dtype: str | None = typer.Option(None, help="I/O type of int8 TFLite: int8 (default), uint8 (Edge TPU "
                                            "default) or float32."),
        mean: str | None = typer.Option(None, help="Per-channel mean for image calibration data, e.g. 0.5 or "
                                        "0.485,0.456,0.406."),
        std: str | None = typer.Option(None, help="Per-channel std for image calibration data."),
        model: str | None = typer.Option(None, "--model", help="package.module:factory that builds the network "
                                         "(for state_dict checkpoints and Keras weights)."),
        trust_model: bool = typer.Option(False, help="Allow formats whose loading runs code (pickled modules, "
                                         "Lambda layers)."),
        signature: str = typer.Option("serving_default", help="SavedModel signature to convert."),
        opset: int = typer.Option(18, help="ONNX opset of the PyTorch, Keras and TF exports."),
        out: Path | None = typer.Option(None, "--out", "-o", help="Output folder (default edgekit-out/<stem>)."),
        force: bool = typer.Option(False, help="Replace outputs of an earlier run."),
        strict: bool = typer.Option(False, help="Exit 5 when an artifact misses its fidelity thresholds."),
        json_out: bool = typer.Option(False, "--json", help="Print the manifest JSON on stdout instead of the table."),
        edgetpu_compiler: str | None = typer.Option(None, help="Path of edgetpu_compiler (default: found on PATH)."),
        edgetpu_min_runtime: str | None = typer.Option(None, help="edgetpu_compiler --min_runtime_version."),
        edgetpu_timeout: float = typer.Option(180.0, help="Seconds before the Edge TPU compiler is stopped."),
    ) -> int:
        from edgekit.console import err, progress, quiet_stdout
        from edgekit.errors import FidelityError
        from edgekit.pipeline import convert

        try:
            with quiet_stdout():
                result = convert(
                    source, target, quantize, out=out, calib=calib, calib_size=calib_size, val_size=val_size,
                    input_shape=parse_ints(input_shape, "--input-shape"), batch=batch, io_dtype=io_dtype,
                    mean=parse_floats(mean, "--mean"), std=parse_floats(std, "--std"), model=model,
                    trust_model=trust_model, signature=signature, opset=opset, force=force, strict=strict,
                    edgetpu_compiler=edgetpu_compiler, edgetpu_min_runtime=edgetpu_min_runtime,
                    edgetpu_timeout=edgetpu_timeout, progress=progress,
                )
        except FidelityError as exc:
            result = getattr(exc, "result", None)
            if result is not None:
                _show(result, json_out)
            raise
        _show(result, json_out)
        if result.not_compiled:
            err.print("[bold yellow]Edge TPU model written and pre-flighted, but not compiled:[/bold yellow] "
                      "no edgetpu_compiler here.")
            if result.how_to_finish:
                err.print(result.how_to_finish, markup=False)
            return EXIT_NOT_COMPILED
        return 0

    def _show(result: object, json_out: bool) -> None:
        from edgekit.console import out as console_out
        from edgekit.console import print_json, warn
        from edgekit.report import convert_table

        if json_out:
            print_json(result.manifest.to_dict())  # type: ignore[attr-defined]
        else:
            console_out.print(convert_table(result.manifest))  # type: ignore[attr-defined]
            console_out.print(f"manifest: {result.manifest_path}")  # type: ignore[attr-defined]
        for w in result.warnings:  # type: ignore[attr-defined]
            warn(w)
