"""Wall seconds per conversion step and per artifact for the bundled model (a benchmark, not a test).

    python bench/convert.py [--json FILE] [--source models/mnist_cnn.pt2]

Runs the `make demo` conversion (ONNX + TFLite at fp32, fp16, dynamic, int8, calibrated on MNIST)
in a temporary folder, in this process, and prints the timeline that the manifest records.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", default=str(REPO / "models" / "mnist_cnn.pt2"))
    ap.add_argument("--targets", default="onnx,tflite")
    ap.add_argument("--quantize", default="fp32,fp16,dynamic,int8")
    ap.add_argument("--json", dest="json_path", help="write the figures here as JSON")
    args = ap.parse_args()

    from edgekit.conversion.pipeline import convert

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        result = convert(args.source, args.targets, args.quantize, calib="mnist", out=Path(tmp) / "out",
                         progress=lambda m: print(m, file=sys.stderr))
        wall = time.perf_counter() - t0
    steps: dict[str, float] = {}
    rows = []
    for a in result.artifacts:
        for t in a.extra.get("steps", []):
            if not t.get("shared"):
                shared_step = t["step"] in ("torch_to_onnx", "onnx_to_savedmodel")
                label = t["step"] if shared_step else f"{t['step']} -> {a.path}"
                steps[label] = t["seconds"]
        rows.append({"artifact": a.path, "seconds": a.seconds, "validation_seconds": a.extra.get("validation_seconds"),
                     "size_bytes": a.size_bytes, "top1_agreement": a.fidelity.top1_agreement if a.fidelity else None})
    print(f"{'step':<52}{'seconds':>9}")
    for name, secs in steps.items():
        print(f"{name:<52}{secs:>9.2f}")
    print(f"\n{'artifact':<32}{'seconds':>9}{'validate':>10}{'bytes':>10}")
    for r in rows:
        print(f"{r['artifact']:<32}{r['seconds']:>9.2f}{r['validation_seconds']:>10.2f}{r['size_bytes']:>10}")
    print(f"\nwhole run (load, calibration data, all steps, validation): {wall:.1f} s")
    if args.json_path:
        Path(args.json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json_path).write_text(json.dumps({"source": args.source, "wall_seconds": round(wall, 3),
                                                    "steps": steps, "artifacts": rows}, indent=2) + "\n")
        print(f"wrote {args.json_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
