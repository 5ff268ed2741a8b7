"""`edgekit serve` under load, side by side with `edgekit profile`'s in-process loop on the same artifact.

    python bench/serve.py [--folder edgekit-out/mnist_cnn] [--json bench/results/serve.json]

Without --folder the bundled MNIST CNN is converted once (ONNX + TFLite, fp32 + int8, calibrated on
MNIST) into a temporary folder. For each artifact measured (default: the int8 TFLite a Pi serves,
and the fp32 ONNX), one server process serves it (CLI defaults: 1 worker, --max-queue 32) and:
- closed loop: throughput and p50/p99 latency at concurrency 1, 4 and 16 (keep-alive clients sending
  binary tensors, as tritonclient does), next to `edgekit profile --json` on the same file;
- open loop at 2x the best closed-loop throughput: the share of 503s and the p99 of what was accepted;
- server RSS before and after 10,000 requests (a leak shows as growth), time from process start to
  listening, and the RSS of a server with just the int8 TFLite loaded (target: under 150 MB).
The client runs on the same 2 cores as the server: the figures are what one box does, clients included.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from edgekit.testing.server import EDGEKIT, ServerProcess  # noqa: E402


def _pct(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 3) if values else None


class Client:
    """One keep-alive connection posting one pre-encoded binary v2 request."""

    def __init__(self, port: int, path: str, body: bytes, header_length: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.conn.connect()
        # http.client writes the headers and the body in two sends: without TCP_NODELAY the body waits
        # for the delayed ACK of the headers (40 ms on Linux), which would be measured as server latency
        self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.path, self.body = path, body
        self.headers = {"Inference-Header-Content-Length": str(header_length),
                        "Content-Type": "application/octet-stream"}

    def post(self) -> tuple[int, float]:
        t0 = time.perf_counter()
        try:
            self.conn.request("POST", self.path, self.body, self.headers)
            resp = self.conn.getresponse()
            resp.read()
            status = resp.status
        except (OSError, http.client.HTTPException):
            self.conn.close()  # the next request reconnects (without TCP_NODELAY: counted as it comes)
            status = 0
        return status, (time.perf_counter() - t0) * 1e3


def request_for(meta: dict) -> tuple[bytes, int]:
    inp, out = meta["inputs"][0], meta["outputs"][0]
    shape = [1 if d < 0 else d for d in inp["shape"]]
    x = np.random.default_rng(0).random(shape, dtype=np.float32)
    head = json.dumps({"inputs": [{"name": inp["name"], "shape": shape, "datatype": "FP32",
                                   "parameters": {"binary_data_size": x.nbytes}}],
                       "outputs": [{"name": out["name"], "parameters": {"binary_data": True}}]}).encode()
    return head + x.tobytes(), len(head)


def closed_loop(port: int, path: str, body: bytes, hl: int, concurrency: int, requests: int) -> dict:
    per = max(1, requests // concurrency)
    lat: list[float] = []
    codes: dict[int, int] = {}
    lock = threading.Lock()

    def worker(_: int) -> None:
        c = Client(port, path, body, hl)
        mine = [c.post() for _ in range(per)]
        with lock:
            for status, ms in mine:
                codes[status] = codes.get(status, 0) + 1
                if status == 200:
                    lat.append(ms)

    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(worker, range(concurrency)))
    wall = time.perf_counter() - t0
    return {"concurrency": concurrency, "requests": per * concurrency, "throughput_per_s": round(len(lat) / wall, 1),
            "p50_ms": _pct(lat, 50), "p99_ms": _pct(lat, 99), "codes": {str(k): v for k, v in codes.items()}}


def open_loop(port: int, path: str, body: bytes, hl: int, rate: float, seconds: float, threads: int = 64) -> dict:
    """Requests started at RATE per second (not waiting for answers), by a pool of THREADS connections."""
    n = int(rate * seconds)
    local = threading.local()
    results: list[tuple[int, float]] = []
    lock = threading.Lock()

    def one(_: int) -> None:
        if not hasattr(local, "c"):
            local.c = Client(port, path, body, hl)
        r = local.c.post()
        with lock:
            results.append(r)

    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        for i in range(n):
            delay = t0 + i / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            pool.submit(one, i)
    accepted = [ms for s, ms in results if s == 200]
    refused = sum(1 for s, _ in results if s == 503)
    return {"offered_per_s": round(rate, 1), "requests": n, "accepted": len(accepted), "refused_503": refused,
            "other": n - len(accepted) - refused, "share_503": round(refused / max(1, n), 3),
            "p50_accepted_ms": _pct(accepted, 50), "p99_accepted_ms": _pct(accepted, 99)}


def profile_in_process(artifact: Path) -> dict:
    proc = subprocess.run([*EDGEKIT, "profile", str(artifact), "--device", "cpu", "--json", "--runs", "500",
                           "--min-seconds", "2"], capture_output=True, text=True, cwd=REPO, timeout=300)
    d = json.loads(proc.stdout)
    return {"throughput_per_s": round(d["throughput_per_s"], 1) if d.get("throughput_per_s") else None,
            "p50_ms": round(d["latency_ms"]["p50"], 4), "p99_ms": round(d["latency_ms"]["p99"], 4)}


def bench_artifact(artifact: Path, workdir: Path, requests: int, leak_requests: int, seconds: float) -> dict:
    import urllib.request

    server = ServerProcess([str(artifact)], workdir / f"{artifact.name}.log")
    try:
        name = json.load(urllib.request.urlopen(f"{server.base}/v2"))["models"][0]
        meta = json.load(urllib.request.urlopen(f"{server.base}/v2/models/{name}"))
        path = f"/v2/models/{meta['name']}/infer"
        body, hl = request_for(meta)
        row: dict = {"artifact": artifact.name, "time_to_ready_s": round(server.ready_s, 3),
                     "rss_idle_mb": round((server.rss_bytes() or 0) / 2**20, 1)}
        closed_loop(server.port, path, body, hl, 4, 400)  # warm up
        row["closed_loop"] = [closed_loop(server.port, path, body, hl, c, requests) for c in (1, 4, 16)]
        row["in_process"] = profile_in_process(artifact)
        best = max(r["throughput_per_s"] for r in row["closed_loop"])
        row["open_loop_2x"] = open_loop(server.port, path, body, hl, 2 * best, seconds)
        if leak_requests:
            rss0 = server.rss_bytes() or 0
            closed_loop(server.port, path, body, hl, 4, leak_requests)
            rss1 = server.rss_bytes() or 0
            row["rss_before_mb"], row["rss_after_mb"] = round(rss0 / 2**20, 1), round(rss1 / 2**20, 1)
            row["leak_requests"] = leak_requests
            row["rss_growth_mb_per_10k"] = round((rss1 - rss0) / 2**20 * 10_000 / leak_requests, 2)
        c1 = row["closed_loop"][0]
        row["added_p50_ms_at_c1"] = round(c1["p50_ms"] - row["in_process"]["p50_ms"], 3)
        row["throughput_ratio_c4"] = round(row["closed_loop"][1]["throughput_per_s"]
                                           / row["in_process"]["throughput_per_s"], 3)
    finally:
        row_exit = server.stop()
    row["exit_code_after_sigterm"] = row_exit
    return row


MOBILENET = """
import keras
import numpy as np
model = keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3), classes=1000)
model(np.zeros((1, 224, 224, 3), np.float32))  # export needs a model that has been called once
model.export({out!r}, format="onnx")
"""


def export_mobilenet(out: Path) -> Path:
    """Keras MobileNetV2 224x224 (random weights: speed, not accuracy, is measured) as ONNX, in a child process."""
    subprocess.run([sys.executable, "-c", MOBILENET.format(out=str(out))], check=True, cwd=REPO, capture_output=True,
                   timeout=600)
    return out


def convert_bundled(out: Path) -> Path:
    subprocess.run([*EDGEKIT, "convert", "models/mnist_cnn.pt2", "--target", "onnx,tflite", "--quantize",
                    "fp32,int8", "--calib", "mnist", "--out", str(out), "--force"], check=True, cwd=REPO,
                   capture_output=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--folder", type=Path, help="An `edgekit convert` output folder (default: the bundled CNN).")
    ap.add_argument("--artifacts", default="mnist_cnn.int8.tflite,mnist_cnn.fp32.onnx",
                    help="Comma list of artifact files in the folder to measure.")
    ap.add_argument("--requests", type=int, default=2000, help="Requests per closed-loop concurrency level.")
    ap.add_argument("--leak-requests", type=int, default=10_000, help="Requests between the two RSS readings.")
    ap.add_argument("--open-seconds", type=float, default=5.0, help="Duration of the open-loop run.")
    ap.add_argument("--mobilenet", action="store_true", help="Also measure a MobileNetV2 224x224 ONNX (Keras, "
                    "random weights) for the 0.8x-of-in-process target at concurrency 4.")
    ap.add_argument("--json", type=Path, help="Also write the JSON here.")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="edgekit-bench-serve-") as tmp:
        work = Path(tmp)
        folder = args.folder or convert_bundled(work / "mnist_cnn")
        rows = [bench_artifact(folder / name, work, args.requests, args.leak_requests, args.open_seconds)
                for name in args.artifacts.split(",") if name]
        if args.mobilenet:  # ~10 ms an inference: fewer requests, no 10,000-request leak run
            mnv2 = export_mobilenet(work / "mobilenet_v2.onnx")
            rows.append(bench_artifact(mnv2, work, max(40, args.requests // 8), 0, args.open_seconds))
    import platform

    # the load average says how much else ran on the machine meanwhile (a shared 2-core box: figures move with it)
    report = {"bench": "serve", "machine": {"cpus": os.cpu_count(), "machine": platform.machine(),
                                            "loadavg_1_5_15_at_end": [round(v, 2) for v in os.getloadavg()]},
              "settings": {"requests": args.requests, "leak_requests": args.leak_requests,
                           "open_seconds": args.open_seconds, "server": "edgekit serve defaults (1 worker, "
                           "--max-queue 32)", "client": "http.client keep-alive, binary tensors, same machine"},
              "artifacts": rows}
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
