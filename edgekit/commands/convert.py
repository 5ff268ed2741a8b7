"""`edgekit convert`: PyTorch, Keras, SavedModel or ONNX in; validated artifacts and manifest.json out."""

from __future__ import annotations

from pathlib import Path

import typer

from edgekit.errors import EXIT_NOT_COMPILED, EXIT_PARTIAL
from edgekit.parse import parse_floats

HELP = """Convert a model to the targets and precisions listed below, validate every artifact against the
source, and write them with a manifest.json.

Each artifact succeeds or fails on its own: a failed one is recorded in manifest.json and the others
are published (--strict stops at the first failure instead).

Exit codes: 0 success; 1 internal error (a bug in edgekit); 2 bad input; 3 missing dependency; 4
conversion failed; 5 fidelity miss with --strict; 6 runtime failure; 8 some artifacts failed, the
others were published; 10 Edge TPU model written but not compiled (no edgetpu_compiler here)."""


def _help() -> str:
    from edgekit.precisions import PRECISIONS
    from edgekit.targets import get_target, target_names

    targets = "\n".join(f"  {n}: {get_target(n).help}" for n in target_names())
    precisions = "\n".join(f"  {p.name}: {p.help}" for p in PRECISIONS.values())
    # "\b" keeps click from re-wrapping a paragraph: one line per target and precision
    return f"{HELP}\n\n\b\nTargets:\n{targets}\n\n\b\nPrecisions:\n{precisions}"


def register(app: typer.Typer) -> None:
    from edgekit.options import ConvertOptions as O  # noqa: N814 - read as "the option's help/default"
    from edgekit.precisions import cli_help as precision_names
    from edgekit.targets import target_names

    @app.command("convert", help=_help())
    def convert_cmd(
        source: Path | None = typer.Argument(None, help="Model: .pt2, TorchScript .pt, state_dict .pt (+ --model), "
                                             ".onnx, .keras, .h5 or a SavedModel folder; leave out to build the "
                                             "model with --model alone."),
        target: str = typer.Option("onnx", "--target", "-t", help=f"Comma list of: {', '.join(target_names())}."),
        quantize: str = typer.Option("fp32", "--quantize", "-q", help=f"Comma list of: {precision_names()}."),
        calib: str | None = typer.Option(O.default("calib"), help=O.help("calib")),
        calib_size: int = typer.Option(O.default("calib_size"), help=O.help("calib_size")),
        val_size: int = typer.Option(O.default("val_size"), help=O.help("val_size")),
        input_shape: list[str] | None = typer.Option(None, help=O.help("input_shape") + " For a model with several "
                                                      "inputs, once per input: --input-shape name:1,3,320,320."),
        batch: int = typer.Option(O.default("batch"), help=O.help("batch")),
        io_dtype: str | None = typer.Option(O.default("io_dtype"), help=O.help("io_dtype")),
        mean: str | None = typer.Option(None, help=O.help("mean")),
        std: str | None = typer.Option(None, help=O.help("std")),
        model: str | None = typer.Option(O.default("factory"), "--model", help=O.help("factory")),
        trust_model: bool = typer.Option(O.default("trust_model"), help=O.help("trust_model")),
        signature: str = typer.Option(O.default("signature"), help=O.help("signature")),
        layout: str | None = typer.Option(O.default("layout"), help=O.help("layout")),
        opset: int = typer.Option(O.default("opset"), help=O.help("opset")),
        out: Path | None = typer.Option(None, "--out", "-o", help=O.help("out_dir")),
        force: bool = typer.Option(O.default("force"), help=O.help("force")),
        strict: bool = typer.Option(O.default("strict"), help=O.help("strict")),
        json_out: bool = typer.Option(False, "--json", help="Print the manifest JSON on stdout instead of the table."),
        edgetpu_compiler: str | None = typer.Option(O.default("edgetpu_compiler"), help=O.help("edgetpu_compiler")),
        edgetpu_min_runtime: str | None = typer.Option(O.default("edgetpu_min_runtime"),
                                                       help=O.help("edgetpu_min_runtime")),
        edgetpu_timeout: float = typer.Option(O.default("edgetpu_timeout"), help=O.help("edgetpu_timeout")),
        int8_recipe: str = typer.Option(O.default("int8_recipe"), help=O.help("int8_recipe")),
        explain: bool = typer.Option(O.default("explain"), help=O.help("explain")),
        edgetpu_fixes: bool = typer.Option(O.default("edgetpu_fixes"), "--edgetpu-fixes/--no-edgetpu-fixes",
                                           help=O.help("edgetpu_fixes")),
        output_kind: list[str] | None = typer.Option(None, help=O.help("output_kinds") + " Repeat per output."),
    ) -> int:
        from edgekit.console import err, progress, quiet_stdout
        from edgekit.errors import FidelityError
        from edgekit.fidelity.kinds import parse_output_kinds
        from edgekit.parse import parse_input_shapes
        from edgekit.pipeline import convert

        shape, shapes = parse_input_shapes(input_shape)
        try:
            with quiet_stdout():
                result = convert(
                    source, target, quantize, out_dir=out, calib=calib, calib_size=calib_size, val_size=val_size,
                    input_shape=shape, input_shapes=shapes, output_kinds=parse_output_kinds(output_kind),
                    batch=batch, io_dtype=io_dtype,
                    mean=parse_floats(mean, "--mean"), std=parse_floats(std, "--std"), factory=model,
                    trust_model=trust_model, signature=signature, layout=layout, opset=opset, force=force,
                    strict=strict,
                    edgetpu_compiler=edgetpu_compiler, edgetpu_min_runtime=edgetpu_min_runtime,
                    edgetpu_timeout=edgetpu_timeout, int8_recipe=int8_recipe, explain=explain,
                    edgetpu_fixes=edgetpu_fixes, progress=progress,
                )
        except FidelityError as exc:
            result = getattr(exc, "result", None)
            if result is not None:
                _show(result, json_out)
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

    def _show(result: object, json_out: bool) -> None:
        from edgekit.console import out as console_out
        from edgekit.console import print_json, warn
        from edgekit.report import convert_table
        from edgekit.report.convert import run_line

        if json_out:
            print_json(result.manifest.to_dict())  # type: ignore[attr-defined]
        else:
            console_out.print(convert_table(result.manifest))  # type: ignore[attr-defined]
            console_out.print(f"manifest: {result.manifest_path}")  # type: ignore[attr-defined]
            line = run_line(result.manifest)  # type: ignore[attr-defined]
            if line:
                console_out.print(line, highlight=False)
        for w in result.warnings:  # type: ignore[attr-defined]
            warn(w)
