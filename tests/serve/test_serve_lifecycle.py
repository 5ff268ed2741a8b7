"""Start, token and stop: a server with a token enforces it (health stays open), and SIGTERM under load
drains the requests in flight, refuses new ones, and exits 0. A non-loopback bind without a token is refused."""

from __future__ import annotations

import concurrent.futures
import json
import re
import signal
import subprocess
import time

import httpx
import numpy as np
import pytest

from edgekit.testing.server import EDGEKIT, REPO, ServerProcess

TOKEN = "s3cret-token-0123456789abcdef"


def _in_flight(base: str) -> float:
    return _started(base)[0]


def _started(base: str) -> tuple[float, float]:
    """(inference requests in flight, inference requests answered 200): each one taken so far is one or the other."""
    text = httpx.get(f"{base}/metrics", headers={"authorization": f"Bearer {TOKEN}"}).text
    m = re.search(r"^edgekit_in_flight_requests (\S+)$", text, re.M)
    answered = r'^edgekit_requests_total\{(?=[^}]*code="200")(?=[^}]*endpoint="infer")[^}]*\} (\S+)$'
    done = re.findall(answered, text, re.M)
    return (float(m.group(1)) if m else 0.0), sum(float(v) for v in done)


@pytest.fixture(scope="module")
def onnx_fp32(bundled_conversion):
    return bundled_conversion.manifest_path.parent / "mnist_cnn.fp32.onnx"


def test_token_enforced_then_sigterm_under_load_drains_and_exits_0(onnx_fp32, tmp_path) -> None:
    server = ServerProcess([str(onnx_fp32), "--drain-s", "30"], tmp_path / "server.log", env={"EDGEKIT_TOKEN": TOKEN})
    try:
        auth = {"authorization": f"Bearer {TOKEN}"}
        assert httpx.get(f"{server.base}/v2/health/ready").status_code == 200  # probes need no token
        assert httpx.get(f"{server.base}/v2").status_code == 401
        assert httpx.get(f"{server.base}/v2", headers={"authorization": f"Bearer {TOKEN}x"}).status_code == 401
        assert httpx.get(f"{server.base}/metrics").status_code == 401
        assert httpx.get(f"{server.base}/v2", headers=auth).status_code == 200

        x = np.random.default_rng(0).random((1500, 1, 28, 28), dtype=np.float32)
        head = json.dumps({"inputs": [{"name": "input", "shape": list(x.shape), "datatype": "FP32",
                                       "parameters": {"binary_data_size": x.nbytes}}]}).encode()
        headers = {**auth, "Inference-Header-Content-Length": str(len(head))}

        def one(_: int) -> int:
            r = httpx.post(f"{server.base}/v2/models/mnist_cnn/infer", content=head + x.tobytes(), headers=headers,
                           timeout=60)
            return r.status_code

        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            futures = [pool.submit(one, i) for i in range(6)]
            # every request taken and some still computing (on a busy machine the first may be answered before the
            # last is read: that is not the case under test, a SIGTERM with requests in flight is)
            deadline = time.monotonic() + 20
            answered_before = _started(server.base)[1]
            while time.monotonic() < deadline:
                flying, answered = _started(server.base)
                if flying >= 1 and flying + answered - answered_before == 6:
                    break
                time.sleep(0.01)
            assert flying >= 1 and flying + answered - answered_before == 6, (flying, answered)
            server.proc.send_signal(signal.SIGTERM)
            time.sleep(0.05)
            if server.proc.poll() is None:  # while draining: not ready, new work refused with 503
                try:
                    assert httpx.get(f"{server.base}/v2/health/ready").status_code == 503
                    late = httpx.post(f"{server.base}/v2/models/mnist_cnn/infer", content=head + x.tobytes(),
                                      headers=headers, timeout=60)
                    assert late.status_code == 503 and late.headers["retry-after"]
                except httpx.ConnectError:
                    pass  # the drain finished first: the port is closed, which is as good
            codes = [f.result() for f in futures]
        assert codes == [200] * 6  # every request in flight was answered
        assert server.proc.wait(30) == 0, server.text()
        assert "SIGTERM" in server.text() and "every request in flight was answered" in server.text()
    finally:
        if server.proc.poll() is None:
            server.proc.kill()


@pytest.mark.parametrize(("args", "env", "message"), [
    (["--host", "0.0.0.0"], {}, "--allow-remote"),
    (["--host", "0.0.0.0", "--allow-remote"], {"EDGEKIT_TOKEN": ""}, "needs a token"),
])
def test_non_loopback_bind_without_a_token_is_refused(args, env, message, tmp_path) -> None:
    import os

    proc = subprocess.run([*EDGEKIT, "serve", str(tmp_path / "any.onnx"), *args], capture_output=True, text=True,
                          env={**os.environ, **env}, cwd=REPO, timeout=60)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr


def test_a_model_that_aborts_litert_is_an_error_not_a_dead_server(tmp_path) -> None:
    """LiteRT's kernels SIGABRT on some badly quantized models: the first run happens in a child, so serve
    exits 6 with a message naming the crash instead of dying by the signal."""
    import sys

    sys.path.insert(0, str(REPO / "tests" / "runtimes"))
    try:
        from bad_tflite import aborts_everywhere
    finally:
        sys.path.pop(0)
    bad = aborts_everywhere(tmp_path / "bad.tflite")
    proc = subprocess.run([*EDGEKIT, "serve", str(bad), "--port", "0"], capture_output=True, text=True, cwd=REPO,
                          timeout=120)
    assert proc.returncode == 6, proc.stderr
    assert "crashed (SIGABRT)" in proc.stderr and "Traceback" not in proc.stderr
