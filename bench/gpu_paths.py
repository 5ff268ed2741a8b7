"""The GPU paths on a machine with an NVIDIA GPU: what ran, what was measured, what was refused and why.

Run where a CUDA GPU and a CUDA build of torch are installed (the CI machine has none):

    python bench/gpu_paths.py --out DIR

Each step runs `edgekit` as a user would (a child process) and its output is kept: the runtime conformance
suite's "gpu" cases, `edgekit profile --device gpu` of the tiny CNN's .pt2 (torch runtime, with NVML energy where
the driver counts it), `--device auto` (which must pick the GPU), the bundled model's .pt2, and onnxruntime's
CUDA provider where a GPU build is installed (else its "not present" message). DIR/gpu_paths.json records every
step's command, exit code, seconds and the figures read back; nothing is judged here, the JSON is read.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EDGEKIT = [sys.executable, "-m", "edgekit.cli"]


def step(name: str, cmd: list[str], work: Path, timeout: float = 300) -> dict[str, object]:
    t0 = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    try:
        p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout, env=env)
        code, text = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as exc:
        code, text = 124, f"timed out after {timeout} s: {exc}"
    except OSError as exc:  # the program is not installed here (nvidia-smi on a machine without the driver)
        code, text = 127, f"{cmd[0]}: {exc}"
    (work / f"{name}.log").write_text(text)
    print(f"== {name}: exit {code} in {time.perf_counter() - t0:.1f} s\n{text[-1500:]}", flush=True)
    return {"name": name, "cmd": " ".join(cmd), "exit": code, "seconds": round(time.perf_counter() - t0, 2),
            "tail": text[-3000:]}


def figures(profile_json: str) -> dict[str, object] | None:
    try:
        r, _ = json.JSONDecoder().raw_decode(profile_json[profile_json.index("{"):])  # stderr may follow it
    except (ValueError, json.JSONDecodeError):
        return None
    return {"device": r.get("device"), "runtime": r.get("runtime"), "latency_ms": r.get("latency_ms"),
            "energy": r.get("energy") or r.get("power"), "notes": r.get("notes")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="where gpu_paths.json is written")
    ap.add_argument("--work", type=Path, default=Path("/tmp/edgekit-gpu-paths"), help="models and full logs")
    args = ap.parse_args()
    out, work = args.out, args.work
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    steps = [step("nvidia-smi", ["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                                 "--format=csv,noheader"], work)]
    steps.append(step("torch", [sys.executable, "-c", "import torch; print(torch.__version__, "
                                "torch.cuda.is_available(), torch.cuda.get_device_name(0))"], work))
    tiny = work / "tiny"
    steps.append(step("tiny-models", [sys.executable, "-c", "import json, sys; from edgekit.testing import tiny_cnn; "
                                      f"print(json.dumps(tiny_cnn.build({str(tiny)!r})))"], work))
    steps.append(step("conformance-gpu", [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                          "tests/runtimes/test_runtime_conformance.py", "-k", "gpu", "-rs"], work))
    common = ["--json", "--runs", "300", "--min-seconds", "2", "--warmup", "20"]
    for name, args_ in (("profile-tiny-gpu", [str(tiny / "tiny.pt2"), "--device", "gpu"]),
                        ("profile-tiny-auto", [str(tiny / "tiny.pt2"), "--device", "auto"]),
                        ("profile-tiny-cpu", [str(tiny / "tiny.pt2"), "--device", "cpu"]),
                        ("profile-bundled-gpu", ["models/mnist_cnn.pt2", "--device", "gpu"]),
                        ("profile-onnx-gpu", [str(tiny / "tiny.onnx"), "--device", "gpu"])):
        s = step(name, [*EDGEKIT, "profile", *args_, *common], work)
        s["figures"] = figures((work / f"{name}.log").read_text())
        steps.append(s)
    (out / "gpu_paths.json").write_text(json.dumps({"steps": steps}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
