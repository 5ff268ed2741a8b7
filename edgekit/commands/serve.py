"""`edgekit serve PATH...`: artifacts behind the KServe v2 REST protocol, on this device."""

from __future__ import annotations

import os
from pathlib import Path

import typer

HELP = """Serve artifacts over HTTP with the KServe v2 (Open Inference Protocol) REST API: health, metadata,
/infer with JSON tensors or the binary tensor data extension (tritonclient works as is), /classify for a
JPEG/PNG picture (preprocessed as the manifest records), /detect for a detector (letterboxed; boxes after
NMS in the picture's pixels), Prometheus /metrics.

PATH: an .onnx / .tflite / _edgetpu.tflite artifact, or an `edgekit convert` output folder (the artifact
that suits --device, or --precision, is served). Several PATHs serve several models, each as <stem> (or
<stem>-<precision>). Binds 127.0.0.1; any other address needs --allow-remote and a token (--token-file or
EDGEKIT_TOKEN). SIGTERM/SIGINT: readiness turns false, requests in flight finish, exit 0.

From a conversion folder (or an artifact with its manifest beside it) every artifact answers with the source
model's tensor names, and takes the artifact's own names too: one client works against each of them. Where
`edgekit bench` measured the folder on this machine, the fastest row that passed validation is served (--bench)."""


def register(app: typer.Typer) -> None:
    @app.command("serve", help=HELP)
    def serve_cmd(
        paths: list[Path] = typer.Argument(..., help="Artifacts or conversion output folders."),
        host: str = typer.Option("127.0.0.1", help="Address to bind; not loopback: needs --allow-remote."),
        port: int = typer.Option(8000, help="Port (0: a free one, printed on start)."),
        device: str = typer.Option("auto", "--device", "-d", help="auto|cpu|gpu|edgetpu, a device name or a .toml."),
        precision: str | None = typer.Option(None, help="From a folder: serve this precision (fp32, fp16, dynamic, "
                                             "int8)."),
        runtime: str | None = typer.Option(None, "--runtime", "-r", help="onnxruntime or litert (default: the "
                                           "format's)."),
        threads: int | None = typer.Option(None, help="Threads per runtime instance."),
        workers: int = typer.Option(1, help="Runtime instances per model, each on its own thread."),
        max_batch: int = typer.Option(1, help="Dynamic batching: run up to N queued requests together (models "
                                      "with a dynamic batch only)."),
        batch_timeout_ms: float = typer.Option(2.0, help="How long a worker waits to fill a batch."),
        max_queue: int = typer.Option(32, help="Requests waiting per model; beyond: 503 with Retry-After."),
        max_body_mb: float = typer.Option(16.0, help="Largest request body; beyond: 413 before it is read."),
        max_image_mpix: float = typer.Option(24.0, help="Largest decoded picture for /classify, in megapixels."),
        timeout_s: float = typer.Option(30.0, help="A request without a result after this gets 504."),
        drain_s: float = typer.Option(10.0, help="On SIGTERM/SIGINT: time given to requests in flight."),
        token_file: Path | None = typer.Option(None, help="File holding the bearer token (else EDGEKIT_TOKEN)."),
        allow_remote: bool = typer.Option(False, help="Allow binding a non-loopback address (needs a token)."),
        labels: Path | None = typer.Option(None, help="Class names, one a line, for /classify and /detect."),
        top_k: int = typer.Option(5, help="Classes /classify returns by default (?top_k=N)."),
        option: list[str] | None = typer.Option(None, "--option", "-O", help="Runtime option KEY=VALUE (repeat), "
                                                "as for `edgekit profile`."),
        log_level: str = typer.Option("info", help="debug|info|warning|error: the server's log on stderr (a line "
                                      "per failed request, the traceback of a 500; debug adds uvicorn's access "
                                      "log)."),
        bench: str = typer.Option("auto", help="A bench.json measured on this machine: from a folder, serve the "
                                  "fastest row that passed validation (auto: FOLDER/bench/bench.json where `edgekit "
                                  "bench` wrote one; off: the format table's ranks)."),
    ) -> None:
        from edgekit.commands.profile import parse_options
        from edgekit.serve.config import ServeConfig, read_token
        from edgekit.serve.logs import check_level
        from edgekit.serve.server import serve

        config = ServeConfig(
            paths=tuple(paths), host=host, port=port, device=device, precision=precision, runtime=runtime,
            threads=threads, workers=workers, max_batch=max_batch, batch_timeout_ms=batch_timeout_ms,
            max_queue=max_queue, max_body_mb=max_body_mb, max_image_mpix=max_image_mpix, timeout_s=timeout_s,
            drain_s=drain_s, token=read_token(token_file, os.environ.get("EDGEKIT_TOKEN")),
            allow_remote=allow_remote, labels=labels, top_k=top_k, options=parse_options(option),
            log_level=check_level(log_level), bench=bench,
        )
        raise typer.Exit(serve(config))
