"""`edgekit serve` as a child process, for tests and bench/serve.py: started as a user would start it.

The port is read from the server's own "serving ... on http://127.0.0.1:PORT" line (`--port 0`, so
no race for a free port); `stop()` sends SIGTERM and returns the exit code.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EDGEKIT = [sys.executable, "-m", "edgekit.cli"]


class ServerProcess:
    def __init__(self, args: list[str], log: Path, env: dict[str, str] | None = None, timeout: float = 60.0,
                 on: str | None = None) -> None:
        """ON: an emulated core to serve on (`edgekit emulate run --on ON serve ...`: pi3, pi4, pi5)."""
        self.log = Path(log)
        self.started = time.perf_counter()
        emulated = ["emulate", "run", "--on", on] if on else []
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen([*EDGEKIT, *emulated, "serve", *args, "--port", "0"], stdout=out,
                                         stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}, cwd=REPO)
        self.port = self._wait_port(timeout)
        self.ready_s = time.perf_counter() - self.started  # process start to listening (models loaded)
        self.url = f"127.0.0.1:{self.port}"
        self.base = f"http://{self.url}"

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def _wait_port(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.search(r"serving .* on http://127\.0\.0\.1:(\d+)", self.text())
            if m:
                return int(m.group(1))
            if self.proc.poll() is not None:
                raise RuntimeError(f"edgekit serve exited {self.proc.returncode}:\n{self.text()}")
            time.sleep(0.01)
        self.proc.kill()
        raise RuntimeError(f"edgekit serve did not start in {timeout} s:\n{self.text()}")

    def rss_bytes(self) -> int | None:
        """The server's resident memory now (Linux /proc), or None where it cannot be read."""
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            return None
        return None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise



def mnist_digits_right(url: str, model: str = "mnist_cnn", n: int = 20, timeout: float = 120) -> int:
    """How many of the first N real MNIST test digits the served MODEL classifies right, asked by tritonclient
    (the KServe v2 client nobody here wrote) at URL ("127.0.0.1:PORT"), each as float pixels in [0, 1]."""
    import numpy as np
    import tritonclient.http as httpclient

    from edgekit.data.calibration import mnist_split

    _, _, x_test, y_test = mnist_split()
    client = httpclient.InferenceServerClient(url, network_timeout=timeout)
    meta = client.get_model_metadata(model)
    inp, out = meta["inputs"][0], meta["outputs"][0]
    right = 0
    for image, label in zip(x_test[:n], y_test[:n], strict=True):
        x = (image.astype(np.float32) / 255).reshape([1 if d < 0 else d for d in inp["shape"]])
        tensor = httpclient.InferInput(inp["name"], list(x.shape), inp["datatype"])
        tensor.set_data_from_numpy(x)
        right += int(client.infer(model, [tensor]).as_numpy(out["name"]).argmax()) == int(label)
    return right

__all__ = ["mnist_digits_right", "EDGEKIT", "REPO", "ServerProcess"]
