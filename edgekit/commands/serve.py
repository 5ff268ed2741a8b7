"""`edgekit serve PATH...`: artifacts behind the KServe v2 REST protocol, on this device."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

import typer

from edgekit.commands.declared import argument, command
from edgekit.core import flags
from edgekit.core.option_field import option
from edgekit.serve.config import ServeConfig

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


C = ServeConfig  # what the server runs on: the options read their defaults from it


@dataclass
class ServeOptions:
    """Every option of `edgekit serve`, in the order its --help shows them."""

    host: str = option(C.host, "Address to bind; not loopback: needs --allow-remote.")
    port: int = option(C.port, "Port (0: a free one, printed on start).")
    device: str = flags.DEVICE(C.device, help="auto|cpu|gpu|edgetpu, a device name or a .toml.")
    precision: str | None = option(C.precision, "From a folder: serve this precision (fp32, fp16, dynamic, int8).")
    runtime: str | None = flags.RUNTIME(C.runtime, help="onnxruntime or litert (default: the format's).")
    threads: int | None = flags.THREADS(C.threads, help="Threads per runtime instance.")
    workers: int = option(C.workers, "Runtime instances per model, each on its own thread.")
    max_batch: int = flags.MAX_BATCH(C.max_batch, help="Dynamic batching: run up to N queued requests together "
                                     "(models with a dynamic batch only).")
    batch_timeout_ms: float = option(C.batch_timeout_ms, "How long a worker waits to fill a batch.")
    max_queue: int = option(C.max_queue, "Requests waiting per model; beyond: 503 with Retry-After.")
    max_body_mb: float = option(C.max_body_mb, "Largest request body; beyond: 413 before it is read.")
    max_image_mpix: float = option(C.max_image_mpix, "Largest decoded picture for /classify, in megapixels.")
    timeout_s: float = option(C.timeout_s, "A request without a result after this gets 504.")
    drain_s: float = option(C.drain_s, "On SIGTERM/SIGINT: time given to requests in flight.")
    token_file: Path | None = option(None, "File holding the bearer token (else EDGEKIT_TOKEN).")
    allow_remote: bool = option(C.allow_remote, "Allow binding a non-loopback address (needs a token).")
    labels: Path | None = option(C.labels, "Class names, one a line, for /classify and /detect.")
    top_k: int = option(C.top_k, "Classes /classify returns by default (?top_k=N).")
    options: dict[str, object] | None = flags.RUNTIME_OPTION()
    log_level: str = option(C.log_level, "debug|info|warning|error: the server's log on stderr (a line per failed "
                            "request, the traceback of a 500; debug adds uvicorn's access log).")
    bench: str = option(C.bench, "A bench.json measured on this machine: from a folder, serve the fastest row that "
                        "passed validation (auto: FOLDER/bench/bench.json where `edgekit bench` wrote one; off: the "
                        "format table's ranks).")


def register(app: typer.Typer) -> None:
    paths = argument("paths", list[Path], "Artifacts or conversion output folders.")

    @command(app.command, ServeOptions, paths, name="serve", help=HELP)
    def serve_cmd(o: ServeOptions, paths: list[Path]) -> None:
        from edgekit.serve.config import read_token
        from edgekit.serve.logs import check_level
        from edgekit.serve.server import serve

        given = dataclasses.asdict(o)
        token_file, options = given.pop("token_file"), given.pop("options")
        config = ServeConfig(paths=tuple(paths), token=read_token(token_file, os.environ.get("EDGEKIT_TOKEN")),
                             options=dict(options or {}), **{**given, "log_level": check_level(o.log_level)})
        raise typer.Exit(serve(config))
