"""`edgekit export PATH --triton DIR`: a Triton model repository and a KServe InferenceService."""

from __future__ import annotations

from pathlib import Path

import typer

HELP = """Write the artifacts of a conversion that Triton serves (ONNX, OpenVINO IR) as a Triton model repository:
DIR/<stem>-<precision>/1/model.onnx (DIR/<stem>-openvino-<precision>/1/model.xml + model.bin) and config.pbtxt
(inputs, outputs, max_batch_size and dynamic batching where the batch is dynamic), plus DIR/inferenceservice.yaml,
a KServe InferenceService running Triton on it. Triton, KServe and `edgekit serve` speak the same KServe v2
protocol: a client written against one works against the others."""


def register(app: typer.Typer) -> None:
    @app.command("export", help=HELP)
    def export_cmd(
        path: Path = typer.Argument(..., help="An `edgekit convert` output folder (or its manifest.json, or one "
                                    "artifact beside it)."),
        triton: Path = typer.Option(..., "--triton", help="The model repository folder to write."),
        max_batch: int = typer.Option(8, help="max_batch_size for models with a dynamic batch."),
        storage_uri: str | None = typer.Option(None, help="Where the cluster finds DIR (s3://..., gs://..., "
                                               "pvc://...); default pvc://models/<DIR name>."),
        force: bool = typer.Option(False, help="Replace models already in DIR."),
    ) -> None:
        from edgekit.core.console import out
        from edgekit.core.errors import UsageError
        from edgekit.export.triton import plan_repository, write_repository

        if max_batch < 1:
            raise UsageError(f"--max-batch must be at least 1, got {max_batch}.")
        models = plan_repository(path, max_batch=max_batch)
        for f in write_repository(models, triton, storage_uri=storage_uri, force=force):
            out.print(str(f))
