"""The ASGI application: KServe v2 REST endpoints, /classify, /detect, /metrics, and the guard in front of them.

The guard (a plain ASGI middleware, cheap on every request) enforces, in order: the bearer token
(compared in constant time; /v2/health/* stays open for probes), the body limit from Content-Length
(413 before a byte of the body is read; bodies without a length are counted as they stream), and
the drain (after SIGTERM/SIGINT new requests get 503 while those in flight finish). It also writes the
one log line of every failed request, its own refusals included (edgekit.serve.logs).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from edgekit._version import __version__
from edgekit.runtimes.base import quantize
from edgekit.serve import detect as det
from edgekit.serve import logs
from edgekit.serve.config import ServeConfig
from edgekit.serve.errors import RequestError, bad_request
from edgekit.serve.image import color_of, image_input, input_size, open_picture, to_input, top_k
from edgekit.serve.metrics import Metrics
from edgekit.serve.protocol import HEADER_LENGTH, encode_infer, parse_infer
from edgekit.serve.served import VERSION, ServedModel
from edgekit.serve.tensors import WireTensor

EXTENSIONS = ["binary_tensor_data", "classification", "edgekit_classify", "edgekit_detect"]
OPEN_PREFIX = "/v2/health/"

log = logging.getLogger(__name__)


@dataclass
class ServerState:
    """What the guard and the endpoints share: the models by every name, draining, requests in flight."""

    config: ServeConfig
    models: dict[str, ServedModel]
    metrics: Metrics
    draining: bool = False
    in_flight: int = 0
    started: float = field(default_factory=time.monotonic)

    @property
    def ready(self) -> bool:
        return not self.draining and all(m.ready for m in self.models.values())

    def model(self, name: str) -> ServedModel:
        m = self.models.get(name)
        if m is None:
            raise RequestError(404, f"no model named '{name}'; this server has {sorted(self.unique())}.", "model")
        return m

    def unique(self) -> list[str]:
        return sorted({m.name for m in self.models.values()})


def _error(exc: RequestError) -> Response:
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)


class Guard:
    """Token, body limit, drain and in-flight count, before any routing."""

    def __init__(self, app: Any, state: ServerState) -> None:
        self.app = app
        self.state = state
        token = state.config.token
        self.token = f"Bearer {token}".encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path: str = scope.get("path", "")
        headers = dict(scope.get("headers") or [])
        status = 0

        async def watched(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        refusal = self._refuse(path, headers, scope)
        if refusal is not None:
            await refusal(scope, receive, watched)
            logs.failed(scope, status, logger=log)
            return None
        counted = not path.startswith(OPEN_PREFIX) and path != "/metrics"
        if counted:
            self.state.in_flight += 1
            self.state.metrics.in_flight.inc()
        try:
            await self.app(scope, receive, watched)
        except Exception as exc:  # past the routes' own catch: Starlette answers 500; the log keeps the traceback
            logs.failed(scope, 500, exc, logger=log)
            raise
        finally:
            if counted:
                self.state.in_flight -= 1
                self.state.metrics.in_flight.dec()
        if status >= 400:
            logs.failed(scope, status, logger=log)
        return None

    def _refuse(self, path: str, headers: dict[bytes, bytes], scope: Scope) -> Response | None:
        refusal = self._refusal(path, headers)
        if refusal is not None:
            logs.note(scope, reason=json.loads(bytes(refusal.body)).get("error"))
        return refusal

    def _refusal(self, path: str, headers: dict[bytes, bytes]) -> Response | None:
        if self.token is not None and not path.startswith(OPEN_PREFIX):
            given = headers.get(b"authorization", b"")
            if not hmac.compare_digest(given, self.token):
                return JSONResponse({"error": "a valid bearer token is needed (Authorization: Bearer <token>)."},
                                    status_code=401, headers={"WWW-Authenticate": "Bearer"})
        length = headers.get(b"content-length")
        limit = self.state.config.max_body_bytes
        if length is not None:
            if not length.isdigit():
                return _error(bad_request("Content-Length is not a number.", "Content-Length"))
            if int(length) > limit:
                return _error(RequestError(413, f"the body is {int(length)} bytes; at most {limit} are accepted "
                                           f"(--max-body-mb {self.state.config.max_body_mb:g}).", "body"))
        encoding = headers.get(b"content-encoding", b"identity").strip().lower()
        if encoding not in (b"identity", b""):
            return _error(RequestError(415, f"Content-Encoding {encoding.decode(errors='replace')} is not "
                                       "accepted: send the body uncompressed.", "Content-Encoding"))
        if self.state.draining and not path.startswith(OPEN_PREFIX) and path != "/metrics":
            return _error(RequestError(503, "the server is shutting down.", headers={"Retry-After": "5"}))
        return None


async def read_body(request: Request, limit: int, timeout_s: float) -> bytes:
    """The body; 413 as soon as it passes LIMIT (bodies without Content-Length), 408 after TIMEOUT_S.

    The deadline matters because a request holds one of its model's admission places while its body
    arrives: a client trickling bytes must not keep that place for ever (slowloris)."""
    chunks: list[bytes] = []
    size = 0

    async def read() -> None:
        nonlocal size
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise RequestError(413, f"the body passes {limit} bytes (--max-body-mb).", "body")
            chunks.append(chunk)

    try:
        await asyncio.wait_for(read(), timeout_s)
    except asyncio.TimeoutError:
        raise RequestError(408, f"the body did not arrive within {timeout_s:g} s (--timeout-s).", "body") from None
    return b"".join(chunks)


Endpoint = Callable[[Request, ServerState], Awaitable[Response]]


def _route(path: str, endpoint: Endpoint, state: ServerState, label: str, methods: list[str]) -> Route:
    """A route whose RequestErrors become JSON answers, with requests counted and timed per model."""

    async def handle(request: Request) -> Response:
        t0 = time.perf_counter()
        try:
            response = await endpoint(request, state)
        except RequestError as exc:
            response = _error(exc)
            # the error itself only for a 5xx: its __cause__ is what raised in the runtime or the code
            logs.note(request.scope, reason=exc.message, error=exc if exc.status >= 500 else None)
        except Exception as exc:  # noqa: BLE001 - a bug here is a 500 for this request, never a dead server
            response = _error(RequestError(500, f"internal error: {type(exc).__name__}: {exc}"))
            logs.note(request.scope, reason=f"internal error: {type(exc).__name__}: {exc}", error=exc)
        asked = model = request.path_params.get("name", "")
        if model:
            model = state.models[model].name if model in state.models else "unknown"  # bounded metric labels
            logs.note(request.scope, model=model if model != "unknown" else asked)
            state.metrics.request_seconds.labels(model, label).observe(time.perf_counter() - t0)
        state.metrics.requests.labels(model, label, str(response.status_code)).inc()
        return response

    return Route(path, handle, methods=methods)


# ---------------------------------------------------------------------------------------------- endpoints
async def live(request: Request, state: ServerState) -> Response:
    return JSONResponse({"live": True})


async def ready(request: Request, state: ServerState) -> Response:
    return JSONResponse({"ready": state.ready}, status_code=200 if state.ready else 503)


async def server_metadata(request: Request, state: ServerState) -> Response:
    return JSONResponse({"name": "edgekit", "version": __version__, "extensions": EXTENSIONS,
                         "models": state.unique()})


async def model_metadata(request: Request, state: ServerState) -> Response:
    _check_version(request)
    return JSONResponse(state.model(request.path_params["name"]).metadata())


async def model_config(request: Request, state: ServerState) -> Response:
    _check_version(request)
    return JSONResponse(state.model(request.path_params["name"]).triton_config())


async def model_ready(request: Request, state: ServerState) -> Response:
    _check_version(request)
    m = state.model(request.path_params["name"])
    ok = m.ready and not state.draining
    return JSONResponse({"name": m.name, "ready": ok}, status_code=200 if ok else 503)


def _check_version(request: Request) -> None:
    version = request.path_params.get("version")
    if version is not None and version != VERSION:
        raise RequestError(404, f"version {version!r} does not exist; this model has version {VERSION}.", "version")


async def infer(request: Request, state: ServerState) -> Response:
    _check_version(request)
    m = state.model(request.path_params["name"])
    with m.admitted():
        body = await read_body(request, state.config.max_body_bytes, state.config.timeout_s)
        req = parse_infer(body, request.headers.get(HEADER_LENGTH), m.inputs, m.outputs)
        results = await m.run(req.inputs)
    # --labels name a detector's classes, not the anchors of its raw tensor: no labels in its classification
    content, header_length = encode_infer(m.name, VERSION, req, results, m.labels if m.detector is None else None)
    if header_length is None:
        return Response(content, media_type="application/json")
    return Response(content, media_type="application/octet-stream",
                    headers={"Inference-Header-Content-Length": str(header_length)})


async def _image_bytes(request: Request, config: ServeConfig) -> bytes:
    body = await read_body(request, config.max_body_bytes, config.timeout_s)
    if not request.headers.get("content-type", "").lower().startswith("multipart/form-data"):
        return body
    request._body = body  # the form parser reads the body already read (and limited), not the socket again
    async with request.form(max_files=1, max_fields=8) as form:
        for value in form.values():
            if hasattr(value, "read"):
                return await value.read()
    raise bad_request("the multipart form holds no file: send the picture as a file field (e.g. 'image').",
                      "image")


async def classify(request: Request, state: ServerState) -> Response:
    m = state.model(request.path_params["name"])
    wire = _one_image_input(m, "classify")
    raw_k = request.query_params.get("top_k", str(state.config.top_k))
    if not raw_k.isdigit() or not 1 <= int(raw_k) <= 1000:
        raise bad_request(f"top_k must be an integer 1..1000, got {raw_k!r}.", "top_k")
    with m.admitted():
        data = await _image_bytes(request, state.config)
        # decoding a photo takes milliseconds: off the event loop, which keeps answering the others
        x = await asyncio.to_thread(image_input, data, wire.spec, m.choice.preprocessing, state.config.max_pixels)
        results = await m.run({wire.name: quantize(x, wire.spec)})
    answer = top_k(results[m.outputs[0].name], int(raw_k), m.labels)
    pre = m.choice.preprocessing
    how = ("as the manifest records" if pre is not None and pre.known else
           "pixels/255: the manifest does not say how this model was calibrated" if pre is not None else
           "pixels/255: no manifest beside the artifact says otherwise")
    return JSONResponse({"model_name": m.name, "model_version": VERSION, **answer, "preprocessing": how})


def _one_image_input(m: ServedModel, endpoint: str) -> WireTensor:
    if len(m.inputs) != 1 or not m.outputs:
        raise bad_request(f"model '{m.name}' takes {len(m.inputs)} inputs: /{endpoint} serves one-image models; "
                          "use /infer.", "model")
    wire = m.inputs[0]
    if wire.shape[0] > 1:
        raise bad_request(f"model '{m.name}' has a static batch of {wire.shape[0]}: one image cannot fill it.",
                          "model")
    return wire


async def detect(request: Request, state: ServerState) -> Response:
    """Boxes in the picture's own pixels (edgekit.serve.detect): letterbox, run, decode + NMS, undo the letterbox."""
    m = state.model(request.path_params["name"])
    if m.detector is None:
        raise bad_request(det.not_a_detector(m.name, m.choice.artifact is not None), "model")
    wire = _one_image_input(m, "detect")
    cuts = det.parse_cuts(dict(request.query_params), m.detector.head)
    in_h, in_w = input_size(wire.spec)
    with m.admitted():
        data = await _image_bytes(request, state.config)
        t0 = time.perf_counter()

        def prepare() -> tuple[np.ndarray, det.Letterbox]:
            with open_picture(data, color_of(wire.spec), state.config.max_pixels) as im:
                pixels, box = det.letterbox(im, in_w, in_h)
            return quantize(to_input(pixels, wire.spec, m.choice.preprocessing), wire.spec), box

        x, box = await asyncio.to_thread(prepare)  # decoding takes milliseconds: off the event loop
        t1 = time.perf_counter()
        results = await m.run({wire.name: x})
        t2 = time.perf_counter()
    # NMS is a Python loop over the candidates (thousands at a low conf): off the event loop too
    found = await asyncio.to_thread(det.detections, results, m.detector, cuts, box, in_w, in_h, m.labels)
    t3 = time.perf_counter()
    return JSONResponse({
        "model_name": m.name, "model_version": VERSION, "detections": found,
        "image": {"width": box.width, "height": box.height}, "input": {"width": in_w, "height": in_h},
        "letterbox": box.to_dict(), "head": m.detector.head.format, "thresholds": cuts.to_dict(),
        "time_ms": {"preprocess": round((t1 - t0) * 1e3, 3), "inference": round((t2 - t1) * 1e3, 3),
                    "postprocess": round((t3 - t2) * 1e3, 3)}})


async def metrics(request: Request, state: ServerState) -> Response:
    state.metrics.refresh({m.name: m.pool.depth for m in state.models.values() if m.pool is not None})
    body, content_type = state.metrics.exposition()
    return Response(body, media_type=content_type)


def build_app(state: ServerState) -> Any:
    """The ASGI app for STATE's models (loaded), wrapped in the guard."""
    routes = [
        _route("/v2/health/live", live, state, "live", ["GET"]),
        _route("/v2/health/ready", ready, state, "ready", ["GET"]),
        _route("/v2", server_metadata, state, "server_metadata", ["GET"]),
        _route("/metrics", metrics, state, "metrics", ["GET"]),
    ]
    for base in ("/v2/models/{name}", "/v2/models/{name}/versions/{version}"):
        routes += [
            _route(base, model_metadata, state, "model_metadata", ["GET"]),
            _route(base + "/ready", model_ready, state, "model_ready", ["GET"]),
            _route(base + "/config", model_config, state, "model_config", ["GET"]),
            _route(base + "/infer", infer, state, "infer", ["POST"]),
        ]
    routes.append(_route("/v2/models/{name}/classify", classify, state, "classify", ["POST"]))
    routes.append(_route("/v2/models/{name}/detect", detect, state, "detect", ["POST"]))
    app = Starlette(routes=routes)
    app.state.edgekit = state
    return Guard(app, state)


__all__ = ["Guard", "ServerState", "build_app"]
