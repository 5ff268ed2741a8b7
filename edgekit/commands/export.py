"""`edgekit export PATH --triton DIR`: a Triton model repository and a KServe InferenceService."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from edgekit.commands.declared import argument, command
from edgekit.core import flags
from edgekit.core.option_field import option

HELP = """Write the artifacts of a conversion that Triton serves (ONNX, OpenVINO IR) as a Triton model repository:
DIR/<stem>-<precision>/1/model.onnx (DIR/<stem>-openvino-<precision>/1/model.xml + model.bin) and config.pbtxt
(inputs, outputs, max_batch_size and dynamic batching where the batch is dynamic), plus DIR/inferenceservice.yaml,
a KServe InferenceService running Triton on it. Triton, KServe and `edgekit serve` speak the same KServe v2
protocol: a client written against one works against the others."""


@dataclass
class ExportOptions:
    """Every option of `edgekit export`, in the order its --help shows them."""

    triton: Path = option(..., "The model repository folder to write.", flags=("--triton",))
    max_batch: int = flags.MAX_BATCH(8, help="max_batch_size for models with a dynamic batch.")
    storage_uri: str | None = option(None, "Where the cluster finds DIR (s3://..., gs://..., pvc://...); default "
                                     "pvc://models/<DIR name>.")
    force: bool = flags.FORCE(help="Replace models already in DIR.")


def register(app: typer.Typer) -> None:
    path = argument("path", Path, "An `edgekit convert` output folder (or its manifest.json, or one artifact beside "
                    "it).")

    @command(app.command, ExportOptions, path, name="export", help=HELP)
    def export_cmd(o: ExportOptions, path: Path) -> None:
        from edgekit.core.console import out
        from edgekit.core.errors import UsageError
        from edgekit.export.triton import plan_repository, write_repository

        if o.max_batch < 1:
            raise UsageError(f"--max-batch must be at least 1, got {o.max_batch}.")
        models = plan_repository(path, max_batch=o.max_batch)
        for f in write_repository(models, o.triton, storage_uri=o.storage_uri, force=o.force):
            out.print(str(f))
