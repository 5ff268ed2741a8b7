"""The server's log, read from a real `edgekit serve` process's stderr: a line per failed request at warning (4xx)
or error (5xx), the runtime's traceback of a 500, nothing of a request's body, and --log-level obeyed.

The 500 is a real one: an ONNX model that declares a dynamic batch but reshapes to batch 1 fails inside
onnxruntime on any batch above 1 (tests/serve/conftest.py), so nothing is patched in the server.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from edgekit.serve.logs import clean
from edgekit.testing.server import EDGEKIT, REPO, ServerProcess

MARK = 0.123456789  # a value only the request bodies hold


def _body(batch: int, value: float = MARK) -> dict:
    return {"inputs": [{"name": "x", "shape": [batch, 4], "datatype": "FP32", "data": [value] * (4 * batch)}]}


def _serve(tmp_path: Path, broken: Path, level: str | None) -> ServerProcess:
    args = [str(broken), *(["--log-level", level] if level else [])]
    return ServerProcess(args, tmp_path / f"server-{level}.log")


def _settled(server: ServerProcess, pattern: str) -> str:
    """The log once PATTERN is in it (the server writes after it answers), or as it is after 10 s."""
    deadline = time.monotonic() + 10
    while not re.search(pattern, server.text()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return server.text()


def test_a_500_logs_its_line_and_the_runtimes_traceback_and_a_4xx_its_line(tmp_path, broken_onnx) -> None:
    server = _serve(tmp_path, broken_onnx, None)  # the default: info
    try:
        r = httpx.post(f"{server.base}/v2/models/broken/infer", json=_body(2), timeout=30)
        assert r.status_code == 500, r.text
        assert httpx.post(f"{server.base}/v2/models/broken/infer", json=_body(1, 0.987654321)).status_code == 200
        bad = _body(1)
        bad["inputs"][0]["shape"] = [1, 5]
        assert httpx.post(f"{server.base}/v2/models/broken/infer", json=bad).status_code == 400
        assert httpx.get(f"{server.base}/v2/models/nope").status_code == 404
        assert httpx.post(f"{server.base}/v2/models/broken/infer", content=b"0" * (17 * 1024 * 1024)).status_code \
            == 413  # refused by the guard before routing: logged too
        text = _settled(server, r"413 model=")
    finally:
        assert server.stop() == 0
    line = re.search(r"^.* ERROR edgekit\.serve\.\w+: POST /v2/models/broken/infer 500 model=broken: "
                     r"inference failed: .*$", text, re.M)
    assert line, text
    after = text[line.end():]
    # the traceback follows the line: the runtime's own frames (edgekit's onnxruntime wrapper), then the answer
    assert after.lstrip().startswith("Traceback (most recent call last):"), after[:400]
    assert "edgekit/runtimes/" in after and "The above exception was the direct cause" in after
    assert "RequestError: inference failed" in after
    assert re.search(r" WARNING edgekit\.serve\.\w+: POST /v2/models/broken/infer 400 model=broken: input 'x' has "
                     r"shape", text), text
    assert re.search(r" WARNING edgekit\.serve\.\w+: GET /v2/models/nope 404 model=nope: no model named", text), text
    assert re.search(r" WARNING edgekit\.serve\.\w+: POST /v2/models/broken/infer 413 model=-: the body is", text)
    assert "0.123456789" not in text and "0.987654321" not in text  # nothing of a body
    assert text.count(" 500 model=") == 1 and " 200 " not in text  # one line per failed request, none for others
    assert "uvicorn.access" not in text  # the access log only at debug


@pytest.mark.parametrize("level", ["error", "debug"])
def test_the_log_level_is_obeyed_by_edgekit_and_uvicorn(tmp_path, broken_onnx, level: str) -> None:
    server = _serve(tmp_path, broken_onnx, level)
    try:
        assert httpx.get(f"{server.base}/v2/models/nope").status_code == 404
        assert httpx.post(f"{server.base}/v2/models/broken/infer", json=_body(2)).status_code == 500
        text = _settled(server, r"500 model=")
    finally:
        assert server.stop() == 0
    assert "Traceback (most recent call last):" in text
    if level == "error":  # no 4xx lines, no uvicorn info
        assert " 404 " not in text and " INFO " not in text
    else:  # uvicorn's access log, every request, in the same format
        assert re.search(r" INFO uvicorn\.access: .*\"GET /v2/models/nope HTTP/1\.1\" 404", text), text
        assert " WARNING edgekit.serve." in text


def test_a_mistyped_log_level_gets_a_did_you_mean(tmp_path) -> None:
    out = subprocess.run([*EDGEKIT, "serve", str(tmp_path), "--log-level", "wraning"], capture_output=True,
                         text=True, cwd=REPO, timeout=60)
    assert out.returncode != 0 and "did you mean 'warning'" in out.stderr, out.stderr


def test_clean_keeps_a_line_a_line() -> None:
    assert clean("/v2/models/a\nERROR forged") == "/v2/models/a\\nERROR forged"
    assert clean("x" * 500, 10) == "xxxxxxx..."


def test_the_serve_modules_log_through_their_own_loggers() -> None:
    code = ("import logging, edgekit.serve.app, edgekit.serve.server, edgekit.serve.logs\n"
            "print(sorted(n for n in logging.root.manager.loggerDict if n.startswith('edgekit.serve')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert {"edgekit.serve.app", "edgekit.serve.server", "edgekit.serve.logs"} <= set(eval(out.stdout))
