"""`edgekit serve`: artifacts behind the KServe v2 (Open Inference Protocol) REST API, on the device.

One module per job: `models` picks and describes what is served, `names` gives its tensors the
source's names (the artifact's own stay aliases), `tensors` maps the wire's tensors to the model's
(quantization included), `protocol` reads and writes v2 requests (JSON and
the binary tensor data extension), `image` turns a picture into an input as the manifest says,
`detect` letterboxes a picture for a detector and turns its head into boxes in the picture's pixels,
`pool` runs a fixed set of Runtime instances behind a bounded queue, `metrics` counts, `app` is the
ASGI application and `server` runs it (bind rules, token, graceful drain on SIGTERM/SIGINT), `logs`
sets up the log (a line per failed request, the traceback of a 500) and writes those lines.
Nothing here imports starlette, uvicorn or a runtime library at module level except `app`/`server`,
which only `edgekit serve` imports.
"""
